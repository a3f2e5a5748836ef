/*
 * constants.h: named constants and the per-call-site caches that read them.
 *
 * Reassigning a constant bumps the constant state and resets every
 * constant cache (constant__cache__reset); a site's cache hits while the
 * state it was filled under is current. Values feed arithmetic only, never
 * how much a method allocates, so reassignments by one thread cannot change
 * what another allocates.
 */
#ifndef DEMOVM_CONSTANTS_H
#define DEMOVM_CONSTANTS_H

#include <stdint.h>

struct vm_thread;

enum vm_constant {
	VM_CONST_LIMIT,
	VM_CONST_SCALE,
	VM_CONST_EPSILON,
	VM_CONST__COUNT
};

struct vm_constant_cache {
	uint64_t state;
	double value;
	uint64_t hits, misses;
};

void constants_init(void);
/* The interned name of c ("LIMIT"). */
const char *vm_constant_name(enum vm_constant c);
/* Read c through the call site's cache. */
double vm_constant_get(struct vm_constant_cache *cache, enum vm_constant c);
/* Reassign c; counted in the thread's truth. */
void vm_constant_set(struct vm_thread *t, enum vm_constant c, double value);

#endif /* DEMOVM_CONSTANTS_H */
