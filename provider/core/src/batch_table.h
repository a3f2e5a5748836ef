/*
 * batch_table.h: one thread's table of counts for batched delivery
 * (batch_table.c), and the batches it is delivered in.
 *
 * Who touches what. Only the owning thread (or a signal handler that
 * interrupted it, see batch.c) adds to a table, without a lock: the counts
 * are cumulative and only ever grow. A flush, by the owner or by the flush
 * thread, holds the thread's lock, reads the counts and delivers what each
 * key gained since its last delivery (`sent`, touched only under the lock).
 * The adds never wait for a flush and a flush never loses an add: whatever
 * lands after its read goes in the next batch.
 */
#ifndef VMTRACE_BATCH_TABLE_H
#define VMTRACE_BATCH_TABLE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "vmtrace/batch.h"

#define VT_TABLE_MIN_SLOTS 32u      /* a new table: one page (fewer TLB entries on the hot path) */
#define VT_TABLE_MAX_SLOTS 65536u   /* past this, a full table is flushed and started anew */
#define VT_TABLE_SPREAD_SLOTS 1024u /* below this, a table grows on a collision */

/* One key's cumulative counts: one cache line, so an add touches one line.
 * The stack id (stacks.c) is the fourth key word, in the line's spare word,
 * so keying by stack does not grow the slot. */
struct vt_slot {
	uint64_t key[4];            /* klass, method, site, stack (0: none; the spare word) */
	_Atomic uint64_t count, bytes, samples; /* cumulative; the owner's stores only */
	_Atomic uint64_t used;      /* 1 once key[] is written (release) */
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct vt_slot) == 64, "a slot is one cache line");

/* What a key's last delivery carried: the flush's alone, under the lock,
 * apart from the slots so the owner's adds never share its lines. */
struct vt_sent {
	uint64_t count, bytes, samples;
};

struct vt_table {
	uint32_t mask;              /* slots - 1, slots a power of two */
	uint32_t used;              /* keys held; the owner's */
	size_t map_bytes;           /* what munmap needs */
	struct vt_sent *sent;       /* [mask + 1], after the slots */
	struct vt_slot slot[];      /* 64-byte aligned (the table is page-aligned) */
};

/* A batch being filled: the header, then its records. */
struct vt_batch_buf {
	struct vmtrace_batch h;
	struct vmtrace_batch_record rec[VMTRACE_BATCH_MAX_RECORDS];
};
_Static_assert(sizeof(struct vt_batch_buf) <= VMTRACE_BATCH_MAX_BYTES, "a batch fits one BPF read");

/* A new empty table of `slots` slots (mmap: no malloc, so safe wherever
 * the host allocates objects); NULL when out of memory. */
struct vt_table *vt_table_new(uint32_t slots);
void vt_table_free(struct vt_table *t);

static inline uint32_t vt_table_hash(uint64_t k, uint64_t m, uint64_t s, uint64_t st)
{
	/* the pointers are aligned, so their low bits are zero: the slot
	 * index comes from the product's high bits; st is 0 without stacks */
	uint64_t h = (k ^ (m * 0xC2B2AE3D27D4EB4Full) ^ (s * 0x165667B19E3779F9ull) ^ st) *
		     0x9E3779B97F4A7C15ull;
	return (uint32_t)(h >> 40);
}

static inline int vt_slot_is(const struct vt_slot *sl, uint64_t k, uint64_t m, uint64_t s, uint64_t st)
{
	return sl->key[0] == k && sl->key[1] == m && sl->key[2] == s && sl->key[3] == st &&
	       atomic_load_explicit(&sl->used, memory_order_relaxed);
}

/* The slot of key (k, m, s, st) when a table's slots hold it at its first
 * or second probe, else NULL (then vt_table_get). The hot path: no loop,
 * and a colliding pair of keys both stays on it. */
static inline struct vt_slot *vt_slots_hit(struct vt_slot *slot, uint32_t mask, uint64_t k, uint64_t m,
					   uint64_t s, uint64_t st)
{
	uint32_t i = vt_table_hash(k, m, s, st) & mask;

	if (__builtin_expect(vt_slot_is(&slot[i], k, m, s, st), 1))
		return &slot[i];
	i = (i + 1) & mask;
	return vt_slot_is(&slot[i], k, m, s, st) ? &slot[i] : NULL;
}

/* The slot of key (k, m, s, st), inserted when missing; NULL when the key is
 * new and the table is half full, or smaller than VT_TABLE_SPREAD_SLOTS
 * with the key's home slot taken (the caller grows it; an empty table
 * always takes a key). Owner only. */
struct vt_slot *vt_table_get(struct vt_table *t, uint64_t k, uint64_t m, uint64_t s, uint64_t st);

/* Add one event to a slot: single-writer stores, so no locked instruction. */
static inline void vt_slot_add(struct vt_slot *sl, uint64_t bytes, uint64_t weight)
{
	atomic_store_explicit(&sl->count, atomic_load_explicit(&sl->count, memory_order_relaxed) + weight,
			      memory_order_relaxed);
	atomic_store_explicit(&sl->bytes, atomic_load_explicit(&sl->bytes, memory_order_relaxed) + bytes,
			      memory_order_relaxed);
	atomic_store_explicit(&sl->samples, atomic_load_explicit(&sl->samples, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

/* Where a flush sends its batches. */
struct vt_flush {
	struct vt_batch_buf *buf;
	uint16_t kind;              /* enum vmtrace_batch_kind */
	uint32_t round;             /* 0: an owner's own flush */
	int deliver;                /* 0: only mark everything delivered (nobody listens) */
	/* a round's: called before each batch goes, so the frames of VM stacks
	 * a thread added while its table was read go ahead of the counts that
	 * name them (NULL: nothing to call) */
	void (*before_send)(void *ctx);
	void *ctx;
};

/* Deliver what every key of t gained since its last delivery, in batches
 * (the last one may stay in f->buf, see vt_flush_end). Under t's lock. */
void vt_table_flush(struct vt_table *t, struct vt_flush *f);
/* Add one key's gain to f's batch, sending the batch when full (nothing
 * when f does not deliver). */
void vt_flush_put(struct vt_flush *f, uint64_t klass, uint64_t method, uint64_t site, uint64_t stack,
		  uint64_t count, uint64_t bytes, uint64_t samples);
/* Send what f->buf still holds; with flags (ROUND_END...) send it even
 * when empty. request: the vmtrace_batch_request the round answers. */
void vt_flush_end(struct vt_flush *f, uint32_t flags, uint64_t request);

/* Events the provider could not count (added by batch.c, carried by the
 * next batch). */
extern _Atomic uint64_t vmtrace__batch_lost;
/* What the host last said it made before counting began, once: 0 after. */
uint64_t vt_batch_take_before(void);
/* The bytes the host said it could not count since the last take. */
uint64_t vt_batch_take_unseen_bytes(void);

#endif /* VMTRACE_BATCH_TABLE_H */
