/*
 * bus_ring.c: the in-process bus's rings: publishing into them, the
 * retain/release hooks, the counts. The dispatcher that empties them is
 * bus_dispatch.c; signal routing, bus_signal.c.
 *
 * The ring. A bounded multi-producer queue after Dmitry Vyukov's design:
 * every slot carries a sequence number. A producer reads `head`, checks that
 * the slot at head is free for that lap (seq == pos), claims it with one CAS
 * on head, copies the event in, and publishes it by storing seq = pos + 1.
 * The one consumer (the dispatcher) takes the slot at `tail` when
 * seq == tail + 1, copies the event out, and frees the slot for the next lap
 * with seq = tail + SIZE. A slot whose seq is a lap behind means the ring is
 * full: the producer drops the event instead of waiting.
 *
 * Shards. The ring is four such rings. A thread takes a stripe number the
 * first time it publishes and always uses the shard it picks, so threads on
 * different vmtrace__shards never touch the same `head` (one contended CAS costs more
 * than the rest of a publish) and one thread's events, its signal
 * handlers' included, stay in one shard, in order. The dispatcher takes a
 * batch from each shard in turn. Order between threads is not promised.
 *
 * Why this survives signals. A producer never waits on another producer:
 * claiming is a single CAS, and a slot once claimed belongs to its claimer.
 * When a signal handler interrupts a publish on the same thread, whether
 * between claim and commit or anywhere else, the handler's own publish claims
 * the next slot (or drops) and returns; the interrupted publish then finishes.
 * Only the dispatcher ever waits for a claimed slot, and it runs on its own
 * thread with every signal blocked, so it never waits on itself. Delivery
 * follows claim order, which on one thread is publish order.
 *
 * The slots' sequence numbers are stored relative to their index (seq - i)
 * so that the zeroed .bss is an empty ring: the host may publish during its
 * bootstrap, before any initialisation call, and without malloc. A slot is
 * one 64-byte cache line: a 32-bit sequence (laps are compared by wrapping
 * difference), the kind, the retained flag and the producer's tid packed
 * into 32 bits (tids fit in 22), then the rest of the event as it is. One
 * line per event is what the producer and the dispatcher hand each other.
 *
 * A producer first compares its position with `done`, which the dispatcher
 * writes once per batch (at most BATCH events behind the slots it has
 * freed), and drops when that says the ring is full, without touching the
 * slot the dispatcher works on: a thread publishing into a full ring does
 * not slow the dispatcher down. So while the dispatcher is mid-batch the
 * ring may count as full with up to BATCH slots free; when it is stopped or
 * idle, `done` is exact and a shard holds exactly RING_SIZE -
 * SIGNAL_RESERVE ordinary events, and signal events up to RING_SIZE.
 *
 */
#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "bus_ring.h"

struct shard vmtrace__shards[SHARDS];
alignas(64) _Atomic uint32_t vmtrace__sleeping;
_Atomic uint32_t vmtrace__wake_word;
_Atomic uint32_t vmtrace__done_word;
_Atomic uint32_t vmtrace__flush_waiters;
_Atomic uint64_t vmtrace__delivered[VMTRACE_EV__COUNT];

/* Publish counts are striped by thread so that threads publishing the same
 * kind do not fight over one cache line; stats add the stripes up. A
 * thread's stripe also picks its shard. */
#define STRIPES 16
static struct counter published[VMTRACE_EV__COUNT][STRIPES];
static _Atomic unsigned next_stripe;
static __thread _Atomic unsigned my_stripe __attribute__((tls_model("initial-exec")));

/* This thread's stripe, 1..STRIPES. A handler that interrupts the first
 * assignment on the same thread agrees on the value through the CAS, so a
 * thread and its handlers always publish into one shard. */
static unsigned thread_stripe(void)
{
	unsigned stripe = atomic_load_explicit(&my_stripe, memory_order_relaxed);

	if (stripe == 0) {
		unsigned mine = atomic_fetch_add_explicit(&next_stripe, 1, memory_order_relaxed) % STRIPES + 1;
		if (atomic_compare_exchange_strong_explicit(&my_stripe, &stripe, mine, memory_order_relaxed,
							    memory_order_relaxed))
			stripe = mine;
	}
	return stripe;
}
static _Atomic uint64_t dropped[VMTRACE_EV__COUNT];

/* object hooks */
static _Atomic(vmtrace_object_fn) retain_fn;
static _Atomic(vmtrace_object_fn) release_fn;
static _Atomic(void *) hooks_user;
static _Atomic uint64_t objects_in_flight;

static const char *const kind_names[VMTRACE_EV__COUNT] = {
	"alloc", "free", "method_entry", "method_return", "method_cache_reset",
	"constant_cache_reset", "global_serial_inc", "gc_begin", "gc_end",
	"signal", "user",
};
const char *vmtrace_event_kind_name(uint32_t kind)
{
	return kind < VMTRACE_EV__COUNT ? kind_names[kind] : NULL;
}

size_t vmtrace_bus_capacity(void)
{
	return RING_SIZE - SIGNAL_RESERVE;
}
/* ---- publishing ---- */

void vmtrace__bus_wake(void)
{
	if (atomic_exchange(&vmtrace__sleeping, 0)) {
		atomic_fetch_add(&vmtrace__wake_word, 1);
		vmtrace__futex_wake(&vmtrace__wake_word, 1);
	}
}

void vmtrace__bus_release_object(void *object)
{
	vmtrace_object_fn release = atomic_load(&release_fn);

	if (release)
		release(object, atomic_load_explicit(&hooks_user, memory_order_relaxed));
	atomic_fetch_sub(&objects_in_flight, 1);
}

static int drop(uint32_t kind, void *object, int retained)
{
	uint64_t total = atomic_fetch_add(&dropped[kind], 1) + 1;

	if (retained)
		vmtrace__bus_release_object(object);
	vmtrace__fire_bus_dropped((int)kind, total);
	return -ENOSPC;
}

int vmtrace_bus_publish(const struct vmtrace_event *ev)
{
	uint32_t kind = ev->kind;
	uint32_t meta;
	struct slot *s;
	uint64_t pos;
	int retained = 0;

	if (kind >= VMTRACE_EV__COUNT)
		return -EINVAL;
	/* counted first, so published >= delivered + dropped at every instant */
	unsigned stripe = thread_stripe();
	struct shard *sh = &vmtrace__shards[(stripe - 1) % SHARDS];
	atomic_fetch_add_explicit(&published[kind][stripe - 1].v, 1, memory_order_relaxed);

	if (ev->object) {
		vmtrace_object_fn retain = atomic_load(&retain_fn);
		if (retain) {
			atomic_fetch_add(&objects_in_flight, 1);
			retain(ev->object, atomic_load_explicit(&hooks_user, memory_order_relaxed));
			retained = 1;
		}
	}
	meta = kind | (retained ? META_RETAINED : 0) | (ev->producer << META_PRODUCER_SHIFT);

	int64_t room = kind == VMTRACE_EV_SIGNAL ? RING_SIZE : RING_SIZE - SIGNAL_RESERVE;
	pos = atomic_load_explicit(&sh->head, memory_order_relaxed);
	for (;;) {
		/* full by the dispatcher's last word (it lags at most a batch):
		 * drop without touching the slot the dispatcher works on */
		if ((int64_t)(pos - atomic_load_explicit(&sh->done, memory_order_relaxed)) >= room)
			return drop(kind, ev->object, retained);
		uint64_t index = pos & RING_MASK;
		s = &sh->ring[index];
		uint32_t seq = atomic_load_explicit(&s->seq, memory_order_acquire) + (uint32_t)index;
		int32_t lag = (int32_t)(seq - (uint32_t)pos);
		if (lag == 0) {
			if (atomic_compare_exchange_weak_explicit(&sh->head, &pos, pos + 1,
								  memory_order_relaxed, memory_order_relaxed))
				break;
		} else if (lag < 0) {
			return drop(kind, ev->object, retained);
		} else {
			pos = atomic_load_explicit(&sh->head, memory_order_relaxed);
		}
	}
	s->meta = meta;
	s->time_ns = ev->time_ns;
	s->object = ev->object;
	memcpy(s->payload, &ev->u, sizeof(s->payload));
	atomic_store(&s->seq, (uint32_t)(pos + 1 - (pos & RING_MASK)));
	if (atomic_load(&vmtrace__sleeping))
		vmtrace__bus_wake();
	return 0;
}
/* ---- object hooks ---- */

int vmtrace_bus_set_object_hooks(vmtrace_object_fn retain, vmtrace_object_fn release, void *user)
{
	if ((retain == NULL) != (release == NULL))
		return -EINVAL;
	if (atomic_load(&objects_in_flight))
		return -EBUSY;
	atomic_store(&hooks_user, user);
	atomic_store(&release_fn, release);
	atomic_store(&retain_fn, retain);
	return 0;
}
/* ---- accounting ---- */

void vmtrace_bus_get_stats(struct vmtrace_bus_stats *out)
{
	memset(out, 0, sizeof(*out));
	for (int k = 0; k < VMTRACE_EV__COUNT; k++) {
		/* delivered and dropped first: a reader never sees more of them
		 * than published */
		out->delivered[k] = atomic_load(&vmtrace__delivered[k]);
		out->dropped[k] = atomic_load(&dropped[k]);
		for (int i = 0; i < STRIPES; i++)
			out->published[k] += atomic_load(&published[k][i].v);
	}
	out->objects_in_flight = atomic_load(&objects_in_flight);
}
