/*
 * bus_ring.h: the bus's rings as bus_ring.c (publishers) and
 * bus_dispatch.c (the one consumer) share them. Nothing here is public.
 */
#ifndef VMTRACE_BUS_RING_H
#define VMTRACE_BUS_RING_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

#include "vmtrace/bus.h"
#include "primitives.h"

#define SHARDS 4		/* threads pick one by their stripe */
#define RING_ORDER 14		/* per shard */
#define RING_SIZE (1u << RING_ORDER)
#define RING_MASK (RING_SIZE - 1)
/* The ring's last slots take only signal events, so a flood of ordinary
 * events (allocations) cannot crowd out a signal routed to the bus. */
#define SIGNAL_RESERVE 512
/* a slot's meta word: kind, retained flag, producer tid */
#define META_KIND_MASK 0x1fu
#define META_RETAINED 0x20u
#define META_PRODUCER_SHIFT 6

struct slot {
	_Atomic uint32_t seq; /* relative: true seq - index */
	uint32_t meta;
	uint64_t time_ns;
	void *object;
	unsigned char payload[sizeof(((struct vmtrace_event *)0)->u)];
};
_Static_assert(sizeof(struct slot) == 64, "a slot is one cache line");
_Static_assert(VMTRACE_EV__COUNT <= META_KIND_MASK + 1, "kinds fit the meta word");

struct counter {
	alignas(64) _Atomic uint64_t v;
};

struct shard {
	alignas(64) _Atomic uint64_t head;	/* next position to claim */
	alignas(64) _Atomic uint64_t done;	/* positions below are delivered */
	uint64_t tail;				/* next position to deliver (dispatcher) */
	uint64_t stop_at;			/* stop once tail reaches it */
	alignas(64) struct slot ring[RING_SIZE];
};

/* The rings and the words the dispatcher and publishers share (bus_ring.c). */
extern struct shard vmtrace__shards[SHARDS] VMTRACE_HIDDEN;
extern _Atomic uint32_t vmtrace__sleeping VMTRACE_HIDDEN;	/* dispatcher is (about to be) asleep */
extern _Atomic uint32_t vmtrace__wake_word VMTRACE_HIDDEN;	/* futex the dispatcher sleeps on */
extern _Atomic uint32_t vmtrace__done_word VMTRACE_HIDDEN;	/* futex flushers sleep on */
extern _Atomic uint32_t vmtrace__flush_waiters VMTRACE_HIDDEN;
/* events delivered per kind; only the dispatcher writes */
extern _Atomic uint64_t vmtrace__delivered[VMTRACE_EV__COUNT] VMTRACE_HIDDEN;

/* Give back a retained object after delivery or drop (the host's release hook). */
void vmtrace__bus_release_object(void *object);
/* Wake the dispatcher if it sleeps. Async-signal-safe. */
void vmtrace__bus_wake(void);

#endif /* VMTRACE_BUS_RING_H */
