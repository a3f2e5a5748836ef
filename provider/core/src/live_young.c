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
 * one that outlived a ring's worth of allocations. A bit per entry says
 * whether it is held, so passing holes reads no entry. The index finds an
 * entry by address: open addressing with linear probing, deletion by
 * backward shift (no tombstones), twice the ring's size so probes stay
 * short; its slots hold the address, so a probe reads no ring entry it
 * does not want.
 *
 * The index is as large as the young generation and a probe is a cache
 * miss, so a free first looks beside the last object taken and at the
 * last allocation: a collector's sweep frees in (or against) allocation
 * order, and a temporary dies at once. Found there, the object is taken
 * by its position and its index slot is left stale (its position no longer
 * held): the next hold of that address reuses it, a take by address drops
 * it, and the index is rebuilt from the ring when held and stale slots fill
 * half of it. An allocation is indexed INDEX_LAG holds after it, its slot
 * fetched when it came: a run of allocations then waits on no miss of the
 * index. Whatever reads the index, or the count held, first indexes what
 * waits (settle), so a reused address is found as before.
 *
 * Memory is mmap'ed (the host's allocator may be what is being traced), at
 * most YOUNG_MAX entries of 56 bytes, 32 bytes of index and a bit each per
 * thread.
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

#define GUESSES 4   /* entries a free looks at before the last one taken */
#define INDEX_LAG 8 /* holds an allocation waits to be indexed */

static int is_held(const struct live_young *y, uint64_t pos)
{
	uint32_t i = (uint32_t)pos & (y->cap - 1);

	return pos >= y->head && pos < y->tail && (y->alive[i / 64] >> (i % 64) & 1);
}

static void set_held(struct live_young *y, uint64_t pos, int held)
{
	uint32_t i = (uint32_t)pos & (y->cap - 1);

	if (held)
		y->alive[i / 64] |= 1ull << (i % 64);
	else
		y->alive[i / 64] &= ~(1ull << (i % 64));
}

/* The first held position at or after pos, or tail. */
static uint64_t next_held(const struct live_young *y, uint64_t pos)
{
	while (pos < y->tail) {
		uint32_t i = (uint32_t)pos & (y->cap - 1);
		uint64_t word = y->alive[i / 64] >> (i % 64);

		/* cap is a multiple of 64: a word never wraps */
		if (word) {
			uint64_t held = pos + (uint64_t)__builtin_ctzll(word);

			return held < y->tail ? held : y->tail;
		}
		pos += 64 - i % 64;
	}
	return y->tail;
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

/* What y maps, also when only some of it was mapped. */
static void unmap(struct live_young *y)
{
	if (y->ring)
		munmap(y->ring, (size_t)y->cap * sizeof(*y->ring));
	if (y->index)
		munmap(y->index, (size_t)2 * y->cap * sizeof(*y->index));
	if (y->alive)
		munmap(y->alive, y->cap / 8);
}

/* A ring of cap entries holding what y holds, in order; -1: no memory. */
static int resize(struct live_young *y, uint32_t cap)
{
	struct live_young old = *y;
	uint32_t n = 0;

	y->ring = map((size_t)cap * sizeof(*y->ring));
	y->index = map((size_t)2 * cap * sizeof(*y->index));
	y->alive = map(cap / 8);
	y->cap = cap;
	if (!y->ring || !y->index || !y->alive) {
		unmap(y);
		*y = old;
		return -1;
	}
	for (uint64_t p = old.cap ? next_held(&old, old.head) : old.tail; p < old.tail;
	     p = next_held(&old, p + 1)) {
		const struct live_young_obj *o = &old.ring[p & (old.cap - 1)];

		y->ring[n] = *o;
		y->index[find(y, o->addr)] = (struct live_young_slot){ o->addr, n + 1 };
		y->alive[n / 64] |= 1ull << (n % 64);
		n++;
	}
	y->head = y->last = 0;
	y->tail = y->indexed = n;
	y->held = n;
	y->stale = 0;
	if (old.cap)
		unmap(&old);
	return 0;
}

/* The index again from the ring, without its stale slots. */
static void rebuild(struct live_young *y)
{
	memset(y->index, 0, (size_t)2 * y->cap * sizeof(*y->index));
	for (uint64_t p = next_held(y, y->head); p < y->tail; p = next_held(y, p + 1)) {
		uint64_t addr = y->ring[p & (y->cap - 1)].addr;

		y->index[find(y, addr)] = (struct live_young_slot){ addr, p + 1 };
	}
	y->stale = 0;
}

/* Drop the holes at the head. */
static void skip_freed(struct live_young *y)
{
	y->head = next_held(y, y->head);
}

/* Take the held entry at pos out of the ring (its index slot is the
 * caller's). */
static void take_at(struct live_young *y, uint64_t pos, struct live_young_obj *out)
{
	struct live_young_obj *o = &y->ring[pos & (y->cap - 1)];

	*out = *o;
	o->addr = 0;
	set_held(y, pos, 0);
	y->held--;
}

/* Take the head entry, held (skip_freed first), out of the table. */
static void take_head(struct live_young *y, struct live_young_obj *out)
{
	unindex(y, find(y, y->ring[y->head & (y->cap - 1)].addr));
	take_at(y, y->head, out);
	y->head++;
}

/* Index the held entry at pos (the oldest not indexed): a slot of its
 * address found held is a reused address, the runtime freed that object
 * unannounced; one found stale is reused. */
static void index_at(struct live_young *y, uint64_t pos)
{
	uint64_t addr = y->ring[pos & (y->cap - 1)].addr;
	uint32_t slot = find(y, addr);

	if (y->index[slot].pos) {
		uint64_t was = y->index[slot].pos - 1;

		if (is_held(y, was)) {
			y->ring[was & (y->cap - 1)].addr = 0;
			set_held(y, was, 0);
			y->held--;
		} else {
			y->stale--;
		}
	}
	y->index[slot] = (struct live_young_slot){ addr, pos + 1 };
}

/* Index what is held and not yet indexed, before anything else reads the
 * index or the count held. */
static void settle(struct live_young *y)
{
	while (y->indexed < y->tail)
		index_at(y, y->indexed++);
}

int vmtrace__young_hold(struct live_young *y, const struct live_young_obj *o, struct live_young_obj *out)
{
	int handed = 0;

	if (y->failed || (!y->cap && resize(y, YOUNG_MIN))) {
		y->failed = 1;
		return -1;
	}
	if (y->tail - y->head == y->cap) {
		settle(y);
		skip_freed(y);
		if (y->tail - y->head == y->cap &&
		    !(y->held > y->cap / 4 * 3 && y->cap < YOUNG_MAX && resize(y, 2 * y->cap) == 0)) {
			take_head(y, out);
			handed = 1;
		}
	}
	if (y->held + y->stale >= y->cap) {
		settle(y);
		rebuild(y);
	}
	/* indexed INDEX_LAG holds later, its slot fetched by then */
	__builtin_prefetch(&y->index[home(y, o->addr)], 1);
	y->ring[y->tail & (y->cap - 1)] = *o;
	set_held(y, y->tail, 1);
	y->tail++;
	y->held++;
	if (y->tail - y->indexed > INDEX_LAG)
		index_at(y, y->indexed++);
	return handed;
}

/* The position of addr's entry if it is the last allocation or next to the
 * last object taken; UINT64_MAX if not. Holes hold address 0. */
static uint64_t guess(const struct live_young *y, uint64_t addr)
{
	uint64_t p = y->last;

	if (y->ring[(y->tail - 1) & (y->cap - 1)].addr == addr)
		return y->tail - 1;
	for (int n = 0; n < GUESSES && p > y->head; n++)
		if (y->ring[--p & (y->cap - 1)].addr == addr)
			return p;
	p = y->last + 1;
	if (p >= y->head && p < y->tail && y->ring[p & (y->cap - 1)].addr == addr)
		return p;
	return UINT64_MAX;
}

int vmtrace__young_take(struct live_young *y, uint64_t addr, struct live_young_obj *out)
{
	uint32_t slot;
	uint64_t pos;

	if (!y->held)
		return 0;
	settle(y);
	pos = guess(y, addr);
	if (pos != UINT64_MAX) {
		take_at(y, pos, out);
		y->stale++;
		y->last = pos;
		return 1;
	}
	slot = find(y, addr);
	if (!y->index[slot].pos)
		return 0;
	pos = y->index[slot].pos - 1;
	unindex(y, slot);
	if (!is_held(y, pos)) {
		y->stale--;
		return 0;
	}
	take_at(y, pos, out);
	y->last = pos;
	return 1;
}

int vmtrace__young_pop(struct live_young *y, uint64_t born_before, struct live_young_obj *out)
{
	if (!y->held)
		return 0;
	settle(y);
	skip_freed(y);
	if (y->ring[y->head & (y->cap - 1)].time_ns >= born_before)
		return 0;
	take_head(y, out);
	return 1;
}

void vmtrace__young_clear(struct live_young *y)
{
	if (y->cap) {
		memset(y->index, 0, (size_t)2 * y->cap * sizeof(*y->index));
		memset(y->alive, 0, y->cap / 8);
	}
	y->head = y->tail = y->last = y->indexed = 0;
	y->held = y->stale = 0;
}
