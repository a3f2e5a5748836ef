/*
 * classes.h: the class table, method tables, method dispatch through
 * per-call-site method caches, and the global method serial that
 * invalidates them.
 *
 * Classes and methods are defined at boot, before any worker runs, and never
 * removed. Redefining a method or including a module into a class bumps the
 * global serial; a call site's cache is valid only while the serial it was
 * filled under is still current.
 */
#ifndef DEMOVM_CLASSES_H
#define DEMOVM_CLASSES_H

#include <stdint.h>

#define VM_CLASS_MAX 32
#define VM_METHOD_MAX 64
#define VM_CLASS_METHODS 8

struct vm_thread;
struct obj;

/* What the length-dependent part of an instance holds. */
enum vm_elements {
	VM_ELEM_NONE,  /* fixed-size instances */
	VM_ELEM_BYTES, /* len bytes plus a NUL (String) */
	VM_ELEM_REFS,  /* len * refs_per_element references (Array, Hash) */
};

typedef struct obj *(*vm_impl)(struct vm_thread *t, struct obj *self, struct obj *other, uint64_t n);

struct vm_class {
	unsigned id;                 /* index in the class table */
	const char *name;            /* interned */
	const struct vm_class *super;
	unsigned fixed_refs;         /* reference slots every instance has */
	unsigned fixed_bytes;        /* plain bytes after the references */
	enum vm_elements elements;
	unsigned refs_per_element;   /* VM_ELEM_REFS only */
	struct vm_method *methods[VM_CLASS_METHODS];
	unsigned nmethods;
};

struct vm_method {
	unsigned id;                 /* index in the method table */
	const char *name;            /* "translate" (interned) */
	const char *qualified;       /* "Geometry#translate" (interned) */
	const char *file;            /* where it was defined (interned) */
	int line;
	const struct vm_class *owner;
	vm_impl impl;
	uint64_t definitions;        /* times (re)defined; under the class lock */
};

/* One call site's inline cache. Each thread has its own, so a hit needs no
 * lock; the global serial says whether it is still valid. */
struct vm_method_cache {
	uint64_t serial;
	const struct vm_class *klass;
	struct vm_method *method;
	uint64_t hits, misses;
};

/* Reasons the global serial moves, as passed to global__serial__inc. */
enum vm_serial_reason {
	VM_REASON_METHOD_REDEFINED,
	VM_REASON_MODULE_INCLUDED,
	VM_REASON__COUNT
};
const char *vm_serial_reason_name(enum vm_serial_reason r);

/* ---- boot (single-threaded) ---- */
struct vm_class *vm_class_define(const char *name, const struct vm_class *super,
				 unsigned fixed_refs, unsigned fixed_bytes,
				 enum vm_elements elements, unsigned refs_per_element);
struct vm_method *vm_method_define(struct vm_class *klass, const char *name,
				   vm_impl impl, const char *file, int line);

unsigned vm_class_count(void);
const struct vm_class *vm_class_at(unsigned id);
unsigned vm_method_count(void);
const struct vm_method *vm_method_at(unsigned id);

/* ---- running (any thread) ---- */
/* Call klass#name through the call site's cache: fires method__entry and
 * method__return around the body; allocations inside are charged to the
 * method found. self and other must be rooted by the caller. Aborts on a
 * missing method (the workload only sends what it defined). */
struct obj *vm_send(struct vm_thread *t, struct vm_method_cache *cache,
		    const struct vm_class *klass, const char *name,
		    struct obj *self, struct obj *other, uint64_t n);

/* Redefine klass#name with the same body: bumps the global serial and resets
 * that method's caches. */
void vm_method_redefine(struct vm_thread *t, const struct vm_class *klass, const char *name);
/* Include a module into klass: bumps the global serial and resets every
 * method cache of the class. */
void vm_module_include(struct vm_thread *t, const struct vm_class *klass);

uint64_t vm_global_serial(void);

#endif /* DEMOVM_CLASSES_H */
