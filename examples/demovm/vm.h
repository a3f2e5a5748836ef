/*
 * vm.h: the state of one demovm thread, which every part of the runtime
 * touches: its VM stack and globals (the GC roots), its heap, its call-site
 * caches, the running method, and its truth counters.
 */
#ifndef DEMOVM_VM_H
#define DEMOVM_VM_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <vmtrace/vmtrace.h>

#include "callpath.h"
#include "classes.h"
#include "constants.h"
#include "heap.h"
#include "truth.h"

#define VM_STACK_SLOTS 1024
#define VM_GLOBAL_SLOTS 16
#define VM_LEAK_SLOT 15 /* the list Registry#remember leaks onto (--leak) */
#define VM_CALL_SITES 32
#define VM_CONSTANT_SITES 8

struct vm_thread {
	unsigned index;
	uint64_t rng;                         /* per-thread, from seed + index */
	const struct vm_method *method;       /* allocations are charged to it */
	struct vm_frame *frame;               /* the innermost VM frame (libvmtrace walks from here) */
	struct vm_frame bottom;               /* Object#main's */
	struct vm_paths paths;                /* truth per call path */
	struct obj *stack[VM_STACK_SLOTS];    /* roots: the live temporaries */
	unsigned sp;
	struct obj *globals[VM_GLOBAL_SLOTS]; /* roots: long-lived objects */
	struct heap heap;
	struct vm_method_cache method_caches[VM_CALL_SITES];
	struct vm_constant_cache constant_caches[VM_CONSTANT_SITES];
	struct truth truth;
	/* libvmtrace's key caches of this thread's frees, one per class */
	struct vmtrace_key_cache free_keys[VM_CLASS_MAX];
	uint64_t ops;                         /* workload iterations done */
	uint64_t signals_raised;
	uint64_t leak_left;                   /* Sessions --leak still has to leak */
	double checksum;                      /* keeps the arithmetic alive */
};

/* Root o on the VM stack; returns its slot. */
static inline unsigned vm_push(struct vm_thread *t, struct obj *o)
{
	if (t->sp == VM_STACK_SLOTS) {
		fputs("demovm: VM stack overflow\n", stderr);
		abort();
	}
	t->stack[t->sp] = o;
	return t->sp++;
}

/* xorshift64*: small, fast and the same on every platform. */
static inline uint64_t vm_random(struct vm_thread *t)
{
	t->rng ^= t->rng >> 12;
	t->rng ^= t->rng << 25;
	t->rng ^= t->rng >> 27;
	return t->rng * 0x2545F4914F6CDD1DULL;
}

/* Uniform in [0, n). */
static inline unsigned vm_random_below(struct vm_thread *t, unsigned n)
{
	return (unsigned)((vm_random(t) >> 32) % n);
}

#endif /* DEMOVM_VM_H */
