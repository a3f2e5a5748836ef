/*
 * intern.h: names that live as long as the process.
 *
 * Every string demovm hands to a probe comes from here: one heap copy per
 * distinct name, never freed, so a tracer reading the pointer later finds it
 * intact and resident (a page the process wrote is mapped, unlike a string
 * literal nobody ever read).
 */
#ifndef DEMOVM_INTERN_H
#define DEMOVM_INTERN_H

/* The interned copy of s: equal strings give the same pointer. Thread-safe;
 * aborts when memory runs out (a runtime cannot go on without its names). */
const char *intern(const char *s);

/* The interned "file:line" of an allocation site. */
const char *intern_site(const char *file, int line);

/* Sets `var` to the interned site of the calling line, looked up once per
 * call site and then read from a static. */
#define VM_SITE_OF_THIS_LINE(var)                                              \
	do {                                                                   \
		static const char *interned_site_;                             \
		(var) = __atomic_load_n(&interned_site_, __ATOMIC_ACQUIRE);    \
		if (!(var)) {                                                  \
			(var) = intern_site(__FILE__, __LINE__);               \
			__atomic_store_n(&interned_site_, (var), __ATOMIC_RELEASE); \
		}                                                              \
	} while (0)

#endif /* DEMOVM_INTERN_H */
