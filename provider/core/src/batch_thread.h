/*
 * batch_thread.h: a thread's record of batched counts (batch.c says who
 * touches what), its lock and its flush into batches.
 */
#ifndef VMTRACE_BATCH_THREAD_H
#define VMTRACE_BATCH_THREAD_H

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

#include "batch_table.h"
#include "primitives.h"

#define VT_KINDS 2                    /* VMTRACE_BATCH_ALLOC, VMTRACE_BATCH_FREE */
#define VT_DEFERRED 64                /* events queued by signal handlers of a busy thread */

struct vt_deferred {
	uint16_t kind;
	uint64_t key[4], bytes, weight;         /* klass, method, site, stack */
};

enum { REC_FREE, REC_LIVE }; /* a record's state: free to take, a live thread's */

struct vt_stacks;
struct vt_keyed;

/* A thread's record (mmap'ed, never freed; batch.c says who touches what). */
struct vt_thread {
	/* the first line: all the hot path reads */
	volatile int busy;              /* the owner (or its handler) is adding or flushing */
	_Atomic uint32_t dtail;         /* deferred queue: claimed up to here (handlers) */
	uint32_t dhead;                 /* ... folded up to here (owner) */
	uint32_t mask[VT_KINDS];        /* tab[k]->mask */
	struct vt_slot *slots[VT_KINDS]; /* tab[k]->slot */
	struct vt_table *tab[VT_KINDS]; /* replaced only by the owner, under the lock */
	_Atomic int state;              /* REC_FREE / REC_LIVE */
	_Atomic int lock;               /* held by whoever flushes or replaces tables */
	/* the rest */
	struct vt_thread *next;         /* the registry; set once, before publication */
	struct vt_stacks *stacks;       /* VM stacks (stacks.c); the owner makes it once */
	struct vt_keyed *_Atomic keyed; /* counts by cached key (batch_keys.c); made once */
	struct vt_deferred dq[VT_DEFERRED];
	struct vt_batch_buf buf;        /* the owner's own flushes */
};
_Static_assert(__builtin_offsetof(struct vt_thread, next) <= 64, "the hot path reads one line");

static inline void vt_thread_lock(struct vt_thread *t)
{
	while (atomic_exchange_explicit(&t->lock, 1, memory_order_acquire))
		sched_yield();
}

static inline void vt_thread_unlock(struct vt_thread *t)
{
	atomic_store_explicit(&t->lock, 0, memory_order_release);
}

static inline int vt_kind_on(int k)
{
	return vmtrace__batch_on(k + 1);
}

/* The owner's (or a fork child's) only way to change a table: the hot
 * path reads the slots and mask from the record's first line. */
static inline void vt_thread_set_table(struct vt_thread *t, int k, struct vt_table *tab)
{
	t->tab[k] = tab;
	t->slots[k] = tab ? tab->slot : NULL;
	t->mask[k] = tab ? tab->mask : 0;
}

/* Flush every table of t (its lock held) into bufs[kind - 1], or mark it
 * delivered for kinds nobody batches now. A thread's own flush (round 0)
 * sends each kind's last batch at once; a round sends them at its end. */
void vt_thread_flush(struct vt_thread *t, struct vt_batch_buf *const bufs[VT_KINDS],
		     struct vt_batch_buf *stack_buf, uint32_t round);

/* A thread's own flush: one buffer serves both kinds, each sent at once. */
void vt_thread_flush_own(struct vt_thread *t);

/* In the child of a fork, t (mine: the forking thread's): what it counted
 * is the parent's, delivered by nobody; another thread's record is free
 * again, its lock open. */
void vt_thread_after_fork(struct vt_thread *t, int mine) VMTRACE_HIDDEN;

#endif /* VMTRACE_BATCH_THREAD_H */
