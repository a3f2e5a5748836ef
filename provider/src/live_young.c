/*
 * live_young.c: a thread's young objects, held in the process (live_young.h,
 * docs/live.md "Cost").
 *
 * Most objects of a garbage-collected runtime die young: at the next minor
 * collection, thousands of allocations later. A tracer that tracks every
 * address in a BPF hash pays an update per allocation and a lookup and
 * delete per free. Instead each thread holds its recent allocations here;
 * a free that finds its object here goes to the tracer as a pair, which
 * costs the tracer no hash operation. Only objects that outlive their stay
 * are handed over to the tracer's hash.
 *
 * The ring keeps allocations in order, so the oldest is always at its head:
 * a full ring first drops the holes freed objects left at its head, then
 * either grows (when more than half of it is still held: the runtime's young
 * generation is larger than the ring) or hands over its oldest held object,
 * one that outlived a ring's worth of allocations. The index finds an entry
 * by address: open addressing with linear probing, deletion by backward
 * shift (no tombstones), twice the ring's size so probes stay short; its
 * slots hold the address, so a probe reads no ring entry it does not want.
 *
 * Memory is mmap'ed (the host's allocator may be what is being traced), at
 * most YOUNG_MAX entries of 56 bytes and 32 bytes of index each per thread.
 */
#include <string.h>
#include <sys/mman.h>

#include "live_young.h"

#define YOUNG_MIN (1u << 12)
#define YOUNG_MAX (1u << 18) /* 14 MiB of ring and 8 MiB of index per thread at most */

static uint32_t home(const struct live_young *y, uint64_t addr)
{
	return (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> 32) & (2 * y->cap - 1);
}

/* The index slot holding addr, or the empty slot where it would go. */
static uint32_t find(const struct live_young *y, uint64_t addr)
{
	uint32_t mask = 2 * y->cap - 1;

	for (uint32_t i = home(y, addr);; i = (i + 1) & mask)
		if (!y->index[i].pos || y->index[i].addr == addr)
			return i;
}

/* Empty slot i, moving back the entries its probe sequences pass over. */
static void unindex(struct live_young *y, uint32_t i)
{
	uint32_t mask = 2 * y->cap - 1;

	for (uint32_t j = (i + 1) & mask; y->index[j].pos; j = (j + 1) & mask) {
		uint32_t k = home(y, y->index[j].addr);

		/* j's entry stays when its home lies cyclically in (i, j] */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		y->index[i] = y->index[j];
		i = j;
	}
	y->index[i].pos = 0;
}

static void *map(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	/* random probes over megabytes: huge pages spare most TLB misses */
	madvise(p, bytes, MADV_HUGEPAGE);
	return p;
}

/* A ring of cap entries holding what y holds, in order; -1: no memory. */
static int resize(struct live_young *y, uint32_t cap)
{
	struct live_young_obj *ring = map((size_t)cap * sizeof(*ring));
	struct live_young_slot *index = ring ? map((size_t)2 * cap * sizeof(*index)) : NULL;
	struct live_young old = *y;
	uint32_t n = 0;

	if (!index) {
		if (ring)
			munmap(ring, (size_t)cap * sizeof(*ring));
		return -1;
	}
	y->ring = ring;
	y->index = index;
	y->cap = cap;
	for (uint64_t p = old.head; p < old.tail; p++) {
		const struct live_young_obj *o = &old.ring[p & (old.cap - 1)];

		if (!o->addr)
			continue;
		ring[n] = *o;
		index[find(y, o->addr)] = (struct live_young_slot){ o->addr, n + 1 };
		n++;
	}
	y->head = 0;
	y->tail = n;
	y->held = n;
	if (old.ring) {
		munmap(old.ring, (size_t)old.cap * sizeof(*old.ring));
		munmap(old.index, (size_t)2 * old.cap * sizeof(*old.index));
	}
	return 0;
}

/* Drop the holes at the head. */
static void skip_freed(struct live_young *y)
{
	while (y->head < y->tail && !y->ring[y->head & (y->cap - 1)].addr)
		y->head++;
}

/* Take the head entry, held (skip_freed first), out of the table. */
static void take_head(struct live_young *y, struct live_young_obj *out)
{
	struct live_young_obj *o = &y->ring[y->head & (y->cap - 1)];

	*out = *o;
	unindex(y, find(y, o->addr));
	o->addr = 0;
	y->head++;
	y->held--;
}

int vmtrace__young_hold(struct live_young *y, const struct live_young_obj *o, struct live_young_obj *out)
{
	int handed = 0;
	uint32_t slot, pos;

	if (y->failed || (!y->cap && resize(y, YOUNG_MIN))) {
		y->failed = 1;
		return -1;
	}
	if (y->tail - y->head == y->cap) {
		skip_freed(y);
		if (y->tail - y->head == y->cap &&
		    !(y->held > y->cap / 4 * 3 && y->cap < YOUNG_MAX && resize(y, 2 * y->cap) == 0)) {
			take_head(y, out);
			handed = 1;
		}
	}
	slot = find(y, o->addr);
	if (y->index[slot].pos) {
		/* a reused address: the runtime freed the old object unannounced */
		y->ring[y->index[slot].pos - 1].addr = 0;
		y->held--;
	}
	pos = (uint32_t)(y->tail & (y->cap - 1));
	y->ring[pos] = *o;
	y->index[slot] = (struct live_young_slot){ o->addr, pos + 1 };
	y->tail++;
	y->held++;
	return handed;
}

int vmtrace__young_take(struct live_young *y, uint64_t addr, struct live_young_obj *out)
{
	uint32_t slot;
	struct live_young_obj *o;

	if (!y->held)
		return 0;
	slot = find(y, addr);
	if (!y->index[slot].pos)
		return 0;
	o = &y->ring[y->index[slot].pos - 1];
	*out = *o;
	o->addr = 0;
	y->held--;
	unindex(y, slot);
	return 1;
}

int vmtrace__young_pop(struct live_young *y, uint64_t born_before, struct live_young_obj *out)
{
	if (!y->held)
		return 0;
	skip_freed(y);
	if (y->ring[y->head & (y->cap - 1)].time_ns >= born_before)
		return 0;
	take_head(y, out);
	return 1;
}

void vmtrace__young_clear(struct live_young *y)
{
	if (y->cap)
		memset(y->index, 0, (size_t)2 * y->cap * sizeof(*y->index));
	y->head = y->tail = 0;
	y->held = 0;
}
