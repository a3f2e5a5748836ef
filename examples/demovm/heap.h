/*
 * heap.h: demovm's object heap and its mark-sweep collector.
 *
 * Each worker thread owns a heap, so a thread's collections depend on its
 * own allocations only and a seeded run repeats exactly. Objects start
 * young; a minor collection marks from the roots (the thread's VM stack and
 * globals) and from every old object, sweeps the young list and promotes
 * the survivors; a major collection marks from the roots alone and sweeps
 * both generations. A collection runs when the bytes allocated since the
 * last one would exceed the budget; every VM_MAJOR_EVERY-th is major.
 */
#ifndef DEMOVM_HEAP_H
#define DEMOVM_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "classes.h"

#define VM_MINOR_BUDGET (64u * 1024u)        /* the mixed workload: frequent, short pauses */
#define VM_ALLOC_MINOR_BUDGET (4u << 20)     /* the alloc workload: a production-sized young generation */
#define VM_MAJOR_EVERY 4
#define VM_MAX_LENGTH 4096

struct obj {
	const struct vm_class *klass;
	struct obj *gc_next;  /* the list of its generation */
	const char *site;     /* where it was allocated: the truth of the live heap */
	uint64_t vmtrace;     /* vmtrace's word (vmtrace_alloc_live) */
	uint32_t size;        /* bytes, as reported to object__alloc */
	uint16_t len;         /* elements of a variable-sized instance */
	uint8_t marked : 1;
	uint8_t old : 1;
	uint8_t method;       /* the method it was charged to (< VM_METHOD_MAX) */
	struct obj *ref[];    /* reference slots, then plain bytes */
};
_Static_assert(VM_METHOD_MAX <= 256, "struct obj keeps a method id in a byte");

struct heap {
	struct obj *young, *old;
	uint64_t young_bytes, old_bytes;
	uint64_t allocated_since_gc;
	uint64_t minor_budget;       /* collect when this many bytes were allocated */
	uint64_t collections;
	struct obj **mark_stack;
	size_t mark_cap;
	uint64_t pause_ns_total, pause_ns_max;
};

void heap_init(struct heap *h, uint64_t minor_budget);
/* Release every object without reporting it: the process is ending. */
void heap_destroy(struct heap *h);

/* A new instance of klass with len elements (0 for fixed-size classes),
 * charged to the thread's running method; site is an interned "file:line",
 * and key the site's own libvmtrace key cache (vmtrace_alloc_cached).
 * May collect first, so every object the caller still needs must be rooted. */
/* 1 (the default): allocations and frees reach libvmtrace through cached
 * keys (vmtrace_alloc_cached); 0: through its plain calls (--uncached). */
extern int vm_key_caches;

struct vmtrace_key_cache;
struct obj *vm_new(struct vm_thread *t, const struct vm_class *klass, unsigned len, const char *site,
		   struct vmtrace_key_cache *key);

/* Number of reference slots of o, and its plain bytes. */
unsigned obj_nrefs(const struct obj *o);
unsigned char *obj_bytes(struct obj *o);

/* Collect now (minor or major by the schedule above). */
void vm_gc(struct vm_thread *t);
/* A major collection now, off the schedule: afterwards only what the roots
 * reach is alive (--leak ends each thread with one). */
void vm_gc_full(struct vm_thread *t);
/* Add every object still in the heap (never freed) to the thread's truth. */
void heap_count_live(struct vm_thread *t);

#endif /* DEMOVM_HEAP_H */
