/*
 * names.c: class, method and site names of a JVM (names.h).
 *
 * Classes carry their name's index as a JVMTI tag, so an allocation's class
 * is one GetTag away from its name, however the collector moves the class
 * object. Methods (jmethodID) and sites (method, bytecode index, class) are
 * looked up in one open-addressing table keyed by three words: a slot is
 * filled, then its first word stored with release order, so a reader that
 * sees the word sees the rest. Adding takes the mutex and makes the names
 * with JVMTI's calls (which allocate): once per class, method and site.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intern.h"
#include "names.h"

#define SLOTS (1u << 17)      /* methods and sites together, at most half full */
#define CLASSES (1u << 16)    /* classes named */

struct slot {
	uintptr_t k0;         /* published last; 0: empty */
	uintptr_t k1, k2;
	void *value;
};

/* a method: its name and file, and the line of each bytecode index */
struct jvm_method {
	const char *name, *file;
	jint nlines;
	jvmtiLineNumberEntry *lines;
};

static jvmtiEnv *jv;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot *slots;
static size_t slots_used;
static const char **classes;  /* by tag - 1 */
static size_t classes_used;
static struct vt_interned interned;

int jvm_names_init(jvmtiEnv *jvmti)
{
	jv = jvmti;
	slots = calloc(SLOTS, sizeof(*slots));
	classes = calloc(CLASSES, sizeof(*classes));
	return slots && classes ? 0 : -1;
}

static uint64_t mix3(uintptr_t a, uintptr_t b, uintptr_t c)
{
	return vt_mix64((uint64_t)a * 0x9e3779b97f4a7c15ull ^ (uint64_t)b * 0xc2b2ae3d27d4eb4full ^
			(uint64_t)c * 0x165667b19e3779f9ull);
}

/* The slot holding (a, b, c), or the empty one where it would go. */
static struct slot *slot_for(uintptr_t a, uintptr_t b, uintptr_t c)
{
	for (size_t i = mix3(a, b, c) & (SLOTS - 1);; i = (i + 1) & (SLOTS - 1)) {
		struct slot *s = &slots[i];
		uintptr_t k0 = __atomic_load_n(&s->k0, __ATOMIC_ACQUIRE);

		if (!k0 || (k0 == a && s->k1 == b && s->k2 == c))
			return s;
	}
}

/* Under the lock: publish value at s for (a, b, c); 0, or -1 when full. */
static int slot_fill(struct slot *s, uintptr_t a, uintptr_t b, uintptr_t c, void *value)
{
	if (2 * (slots_used + 1) > SLOTS)
		return -1;
	s->k1 = b;
	s->k2 = c;
	s->value = value;
	__atomic_store_n(&s->k0, a, __ATOMIC_RELEASE);
	slots_used++;
	return 0;
}

/* Under the lock: the one kept copy of s, or NULL. */
static const char *intern(const char *s)
{
	return vt_intern_str(&interned, s);
}

/* "Ljava/lang/String;" -> "java.lang.String", "[[I" -> "int[][]" */
static void java_name(const char *sig, char *out, size_t len)
{
	static const char *const prim[] = {
		['B'] = "byte", ['C'] = "char", ['D'] = "double", ['F'] = "float",
		['I'] = "int", ['J'] = "long", ['S'] = "short", ['Z'] = "boolean", ['V'] = "void",
	};
	size_t dims = 0, n = 0;

	while (sig[dims] == '[')
		dims++;
	sig += dims;
	if (*sig == 'L') {
		for (sig++; *sig && *sig != ';' && n + 1 < len; sig++)
			out[n++] = *sig == '/' ? '.' : *sig;
		out[n] = '\0';
	} else {
		const char *p = (unsigned char)*sig < sizeof(prim) / sizeof(prim[0]) ? prim[(unsigned char)*sig] : NULL;

		snprintf(out, len, "%s", p ? p : sig);
		n = strlen(out);
	}
	for (; dims && n + 2 < len; dims--, n += 2)
		memcpy(out + n, "[]", 3);
}

static const char *class_name_of(jclass k)
{
	char *sig = NULL, buf[1024];
	const char *name = NULL;

	if ((*jv)->GetClassSignature(jv, k, &sig, NULL) != JVMTI_ERROR_NONE || !sig)
		return NULL;
	java_name(sig, buf, sizeof(buf));
	name = intern(buf);
	(*jv)->Deallocate(jv, (unsigned char *)sig);
	return name;
}

const char *jvm_class_name(jclass k)
{
	jlong tag = 0;
	const char *name = NULL;

	if ((*jv)->GetTag(jv, k, &tag) == JVMTI_ERROR_NONE && tag > 0 && (size_t)tag <= CLASSES &&
	    (name = __atomic_load_n(&classes[tag - 1], __ATOMIC_ACQUIRE)))
		return name;
	pthread_mutex_lock(&lock);
	/* another thread may have named it meanwhile */
	if ((*jv)->GetTag(jv, k, &tag) == JVMTI_ERROR_NONE && tag > 0 && (size_t)tag <= CLASSES &&
	    classes[tag - 1]) {
		name = classes[tag - 1];
	} else if (classes_used < CLASSES && (name = class_name_of(k))) {
		__atomic_store_n(&classes[classes_used], name, __ATOMIC_RELEASE);
		if ((*jv)->SetTag(jv, k, (jlong)classes_used + 1) == JVMTI_ERROR_NONE)
			classes_used++;
	}
	pthread_mutex_unlock(&lock);
	return name;
}

/* Under the lock: make a method's names. The class is a local reference,
 * gone when the event's callback returns. */
static struct jvm_method *method_make(jmethodID m)
{
	struct jvm_method *jm = calloc(1, sizeof(*jm));
	char *name = NULL, *csig = NULL, *src = NULL, buf[2048], cls[1024];
	jclass k = NULL;

	if (!jm)
		return NULL;
	if ((*jv)->GetMethodName(jv, m, &name, NULL, NULL) != JVMTI_ERROR_NONE ||
	    (*jv)->GetMethodDeclaringClass(jv, m, &k) != JVMTI_ERROR_NONE ||
	    (*jv)->GetClassSignature(jv, k, &csig, NULL) != JVMTI_ERROR_NONE) {
		(*jv)->Deallocate(jv, (unsigned char *)name);
		free(jm);
		return NULL;
	}
	java_name(csig, cls, sizeof(cls));
	snprintf(buf, sizeof(buf), "%s.%s", cls, name);
	jm->name = intern(buf);
	if ((*jv)->GetSourceFileName(jv, k, &src) == JVMTI_ERROR_NONE && src)
		jm->file = intern(src);
	/* none for a native or abstract method: its frames have no line */
	if ((*jv)->GetLineNumberTable(jv, m, &jm->nlines, &jm->lines) != JVMTI_ERROR_NONE) {
		jm->nlines = 0;
		jm->lines = NULL;
	}
	(*jv)->Deallocate(jv, (unsigned char *)name);
	(*jv)->Deallocate(jv, (unsigned char *)csig);
	(*jv)->Deallocate(jv, (unsigned char *)src);
	if (!jm->name) {
		free(jm);
		return NULL;
	}
	return jm;
}

static struct jvm_method *method_of(jmethodID m)
{
	struct slot *s = slot_for((uintptr_t)m, 0, 0);
	struct jvm_method *jm;

	if (__atomic_load_n(&s->k0, __ATOMIC_ACQUIRE))
		return s->value;
	pthread_mutex_lock(&lock);
	s = slot_for((uintptr_t)m, 0, 0);
	if (s->k0) {
		jm = s->value;
	} else if ((jm = method_make(m)) && slot_fill(s, (uintptr_t)m, 0, 0, jm)) {
		free(jm);
		jm = NULL;
	}
	pthread_mutex_unlock(&lock);
	return jm;
}

/* the line of bytecode index at: the entry that starts last at or before it */
static int32_t line_at(const struct jvm_method *jm, jlocation at)
{
	jlocation best = -1;
	int32_t line = 0;

	for (jint i = 0; i < jm->nlines; i++)
		if (jm->lines[i].start_location <= at && jm->lines[i].start_location > best) {
			best = jm->lines[i].start_location;
			line = jm->lines[i].line_number;
		}
	return line;
}

int jvm_frame_names(jmethodID m, jlocation at, struct jvm_frame_names *out)
{
	struct jvm_method *jm = method_of(m);

	if (!jm)
		return -1;
	out->method = jm->name;
	out->file = jm->file;
	out->line = line_at(jm, at);
	return 0;
}

struct jvm_site *jvm_site_of(const char *klass, jmethodID m, jlocation at)
{
	struct slot *s = slot_for((uintptr_t)klass, (uintptr_t)m, (uintptr_t)at);
	struct jvm_frame_names f = { "(no Java frame)", NULL, 0 };
	struct jvm_site *site;
	char buf[1200];

	if (__atomic_load_n(&s->k0, __ATOMIC_ACQUIRE))
		return s->value;
	if (m && jvm_frame_names(m, at, &f))
		return NULL;
	if (!m && at < 0)
		f.method = NULL; /* the class alone: no frame asked for */
	pthread_mutex_lock(&lock);
	s = slot_for((uintptr_t)klass, (uintptr_t)m, (uintptr_t)at);
	if (s->k0) {
		site = s->value;
	} else if ((site = calloc(1, sizeof(*site)))) {
		site->klass = klass;
		site->method = f.method ? intern(f.method) : NULL;
		if (f.file) {
			if (f.line > 0)
				snprintf(buf, sizeof(buf), "%s:%d", f.file, f.line);
			else
				snprintf(buf, sizeof(buf), "%s", f.file);
			site->file_line = intern(buf);
		}
		if ((f.method && !site->method) ||
		    slot_fill(s, (uintptr_t)klass, (uintptr_t)m, (uintptr_t)at, site)) {
			free(site);
			site = NULL;
		}
	}
	pthread_mutex_unlock(&lock);
	return site;
}
