/*
 * live_young.h: a thread's young objects, held in the process until they die
 * or grow old (live_young.c). Nothing here is public.
 */
#ifndef VMTRACE_LIVE_YOUNG_H
#define VMTRACE_LIVE_YOUNG_H

#include <stdint.h>

/* One allocation as the tracer will need it if it outlives its stay here. */
struct live_young_obj {
	uint64_t addr;                  /* 0: freed (a hole in the ring) */
	uint64_t klass, method, site;
	uint64_t size, weight, time_ns;
};

/* The index's slot of an address: the address beside the ring position it
 * was held at, so a probe touches no ring entry but the one it finds. A
 * slot whose position is no longer held is stale (live_young.c). */
struct live_young_slot {
	uint64_t addr;
	uint64_t pos;                   /* ring position + 1; 0 = empty */
};

/* A ring of allocations in the order they were made, and an index of the
 * held ones by address. Positions count allocations (entry pos % cap of
 * the ring). Zero-initialised it is empty; memory comes at the first
 * hold. Not thread-safe: its owner's buffer lock guards it. */
struct live_young {
	struct live_young_obj *ring;    /* cap entries */
	struct live_young_slot *index;  /* 2 * cap slots */
	uint64_t *alive;                /* a bit per ring entry: held */
	uint64_t head, tail;            /* positions of the oldest entry and the next */
	uint64_t last;                  /* position of the last object taken */
	uint64_t indexed;               /* positions before it are in the index */
	uint32_t cap;                   /* a power of two; 0 = not allocated */
	uint32_t held;                  /* entries not freed */
	uint32_t stale;                 /* index slots of objects taken by position */
	int failed;                     /* no memory: nothing is held */
};

/* Hold o. Returns 0, or 1 when room was made by handing over the oldest
 * held object (*out; the tracer must track it from now on), or -1 when the
 * table has no memory (the caller sends o to the tracer itself). */
int vmtrace__young_hold(struct live_young *y, const struct live_young_obj *o, struct live_young_obj *out);
/* The object at addr, if held: 1 and *out, and it is no longer held. */
int vmtrace__young_take(struct live_young *y, uint64_t addr, struct live_young_obj *out);
/* The oldest held object if it was allocated before born_before (UINT64_MAX:
 * any): 1 and *out, no longer held; 0 when there is none. */
int vmtrace__young_pop(struct live_young *y, uint64_t born_before, struct live_young_obj *out);
/* Forget everything held (a fork child: those objects are the parent's). */
void vmtrace__young_clear(struct live_young *y);

#endif
