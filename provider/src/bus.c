/*
 * bus.c: the in-process event bus: a bounded lock-free ring, subscribers,
 * and the one dispatcher thread that delivers events to them.
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
 * different shards never touch the same `head` (one contended CAS costs more
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
 * Sleeping. The dispatcher spins briefly after its last event (so a steady
 * stream and a signal arriving soon after are picked up within a few hundred
 * nanoseconds) and then sleeps on a futex. It announces sleep in `sleeping`
 * and re-checks the ring; a producer commits, then reads `sleeping`. Both
 * are sequentially consistent, so one of them sees the other: no lost wake.
 * The wake is a FUTEX_WAKE syscall, async-signal-safe.
 *
 * Spinning only pays while the dispatcher keeps its CPU. On a machine with
 * more runnable threads than CPUs a spinner gets preempted, and a spinner
 * waiting for its turn is not asleep, so nobody wakes it: an event would
 * wait a whole time slice. When the clock jumps between two looks during
 * a spin (we were descheduled), the dispatcher stops spinning for a while
 * and goes straight to the futex, whose wake the scheduler favours.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "vmtrace/bus.h"
#include "bus_internal.h"
#include "fire.h"

#define SHARDS 4		/* threads pick one by their stripe */
#define RING_ORDER 14		/* per shard */
#define RING_SIZE (1u << RING_ORDER)
#define RING_MASK (RING_SIZE - 1)
#define MAX_SUBS 16		/* per kind */
#define BATCH 256		/* events between bookkeeping */
#define SPIN_NS 50000		/* stay awake this long after the last event */
#define PREEMPTED_NS 200000	/* a gap this long inside a spin: descheduled */
#define NO_SPIN_NS 500000000	/* then park at once for this long */
/* The ring's last slots take only signal events, so a flood of ordinary
 * events (allocations) cannot crowd out a signal routed to the bus. */
#define SIGNAL_RESERVE 512
/* a slot's meta word: kind, retained flag, producer tid */
#define META_KIND_MASK 0x1fu
#define META_RETAINED 0x20u
#define META_PRODUCER_SHIFT 6

/* The gates live in probes.c; the bus owns their subscriber halves. */
extern vmtrace_gate vmtrace__gate_store[VMTRACE_PROBE__COUNT] __attribute__((visibility("hidden")));

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
static struct shard shards[SHARDS];
static alignas(64) _Atomic uint32_t sleeping;	/* dispatcher is (about to be) asleep */
static _Atomic uint32_t wake_word;		/* futex the dispatcher sleeps on */
static _Atomic uint32_t done_word;		/* futex flushers sleep on */
static _Atomic uint32_t flush_waiters;

/* Publish counts are striped by thread so that threads publishing the same
 * kind do not fight over one cache line; stats add the stripes up. A
 * thread's stripe also picks its shard. */
#define STRIPES 16
static struct counter published[VMTRACE_EV__COUNT][STRIPES];
static _Atomic unsigned next_stripe;
static __thread _Atomic unsigned my_stripe __attribute__((tls_model("initial-exec")));

__thread uint32_t vmtrace__tid_cache __attribute__((tls_model("initial-exec")));

/* A fork child runs on a new thread id: forget the parent's. */
static void forget_tid(void)
{
	vmtrace__tid_cache = 0;
}

__attribute__((constructor)) static void register_fork_hook(void)
{
	pthread_atfork(NULL, NULL, forget_tid);
}

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
static _Atomic uint64_t delivered[VMTRACE_EV__COUNT];
static _Atomic uint64_t dropped[VMTRACE_EV__COUNT];

/* object hooks */
static _Atomic(vmtrace_object_fn) retain_fn;
static _Atomic(vmtrace_object_fn) release_fn;
static _Atomic(void *) hooks_user;
static _Atomic uint64_t objects_in_flight;

/* subscribers: per kind a small table; fn NULL = free slot */
struct subscriber {
	_Atomic(vmtrace_subscriber_fn) fn;
	_Atomic(void *) user;
	uint16_t gen;
	uint8_t retiring;	/* unsubscribed, a delivery may still use it */
};
static struct subscriber subs[VMTRACE_EV__COUNT][MAX_SUBS];
static _Atomic int subs_used[VMTRACE_EV__COUNT]; /* highest slot in use + 1 */
static pthread_mutex_t subs_lock = PTHREAD_MUTEX_INITIALIZER;
/* odd while the dispatcher runs subscribers: unsubscribe waits it out */
static _Atomic uint64_t dispatch_epoch;

/* the dispatcher thread */
static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t dispatcher;
static _Atomic int running;
static _Atomic int stopping;
static __thread int on_dispatcher;

static const int kind_probe[VMTRACE_EV__COUNT] = {
	[VMTRACE_EV_ALLOC] = VMTRACE_PROBE_OBJECT_ALLOC,
	[VMTRACE_EV_FREE] = VMTRACE_PROBE_OBJECT_FREE,
	[VMTRACE_EV_METHOD_ENTRY] = VMTRACE_PROBE_METHOD_ENTRY,
	[VMTRACE_EV_METHOD_RETURN] = VMTRACE_PROBE_METHOD_RETURN,
	[VMTRACE_EV_METHOD_CACHE_RESET] = VMTRACE_PROBE_METHOD_CACHE_RESET,
	[VMTRACE_EV_CONSTANT_CACHE_RESET] = VMTRACE_PROBE_CONSTANT_CACHE_RESET,
	[VMTRACE_EV_GLOBAL_SERIAL_INC] = VMTRACE_PROBE_GLOBAL_SERIAL_INC,
	[VMTRACE_EV_GC_BEGIN] = VMTRACE_PROBE_GC_BEGIN,
	[VMTRACE_EV_GC_END] = VMTRACE_PROBE_GC_END,
	[VMTRACE_EV_SIGNAL] = -1,
	[VMTRACE_EV_USER] = -1,
};

static const char *const kind_names[VMTRACE_EV__COUNT] = {
	"alloc", "free", "method_entry", "method_return", "method_cache_reset",
	"constant_cache_reset", "global_serial_inc", "gc_begin", "gc_end",
	"signal", "user",
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

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
	if (atomic_exchange(&sleeping, 0)) {
		atomic_fetch_add(&wake_word, 1);
		vmtrace__futex_wake(&wake_word, 1);
	}
}

static void release_object(void *object)
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
		release_object(object);
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
	struct shard *sh = &shards[(stripe - 1) % SHARDS];
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
	if (atomic_load(&sleeping))
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

/* ---- subscribers ---- */

static void gate_add(uint32_t kind, int delta)
{
	int probe = kind_probe[kind];

	if (probe < 0)
		return;
	/* the kernel writes the low half (semaphore); we touch only ours */
	__atomic_fetch_add(&vmtrace__gate_store[probe].part.subscribers, (uint16_t)delta, __ATOMIC_SEQ_CST);
}

int vmtrace_bus_subscribe(enum vmtrace_event_kind kind, vmtrace_subscriber_fn fn, void *user)
{
	int id = -ENOSPC;

	if ((unsigned)kind >= VMTRACE_EV__COUNT || fn == NULL)
		return -EINVAL;
	pthread_mutex_lock(&subs_lock);
	for (int i = 0; i < MAX_SUBS; i++) {
		struct subscriber *sub = &subs[kind][i];
		if (atomic_load(&sub->fn) || sub->retiring)
			continue;
		sub->gen = (uint16_t)((sub->gen + 1) & 0x7fff);
		if (sub->gen == 0)
			sub->gen = 1;
		atomic_store(&sub->user, user);
		atomic_store(&sub->fn, fn);
		if (i + 1 > atomic_load(&subs_used[kind]))
			atomic_store(&subs_used[kind], i + 1);
		gate_add(kind, 1);
		id = (sub->gen << 16) | (int)(kind * MAX_SUBS + i + 1);
		break;
	}
	pthread_mutex_unlock(&subs_lock);
	return id;
}

int vmtrace_bus_unsubscribe(int id)
{
	int slot = (id & 0xffff) - 1;
	unsigned kind = (unsigned)slot / MAX_SUBS;
	struct subscriber *sub;

	if (id <= 0 || slot < 0 || kind >= VMTRACE_EV__COUNT)
		return -ENOENT;
	sub = &subs[kind][slot % MAX_SUBS];
	pthread_mutex_lock(&subs_lock);
	if (sub->gen != (id >> 16) || atomic_load(&sub->fn) == NULL) {
		pthread_mutex_unlock(&subs_lock);
		return -ENOENT;
	}
	atomic_store(&sub->fn, NULL);
	gate_add(kind, -1);
	if (on_dispatcher) {
		pthread_mutex_unlock(&subs_lock);
		return 0;
	}
	/* wait out a delivery that may have read fn before the store; without
	 * the lock, as that delivery may itself (un)subscribe */
	sub->retiring = 1;
	pthread_mutex_unlock(&subs_lock);
	uint64_t epoch = atomic_load(&dispatch_epoch);
	while ((epoch & 1) && atomic_load(&dispatch_epoch) == epoch)
		sched_yield();
	pthread_mutex_lock(&subs_lock);
	sub->retiring = 0;
	pthread_mutex_unlock(&subs_lock);
	return 0;
}

/* ---- delivery ---- */

static void deliver(const struct vmtrace_event *ev, int retained)
{
	uint32_t kind = ev->kind;
	int used = atomic_load_explicit(&subs_used[kind], memory_order_acquire);

	for (int i = 0; i < used; i++) {
		struct subscriber *sub = &subs[kind][i];
		vmtrace_subscriber_fn fn = atomic_load_explicit(&sub->fn, memory_order_acquire);
		if (fn)
			fn(ev, atomic_load_explicit(&sub->user, memory_order_relaxed));
	}
	/* only the dispatcher writes: no read-modify-write needed */
	atomic_store_explicit(&delivered[kind],
			      atomic_load_explicit(&delivered[kind], memory_order_relaxed) + 1,
			      memory_order_relaxed);
	if (retained)
		release_object(ev->object);
	if (kind == VMTRACE_EV_SIGNAL)
		vmtrace__fire_signal_handled(ev->u.signal.signo, vmtrace__now_ns() - ev->time_ns);
}

static int shard_ready(const struct shard *sh)
{
	uint64_t index = sh->tail & RING_MASK;

	return atomic_load_explicit(&sh->ring[index].seq, memory_order_acquire) + (uint32_t)index ==
	       (uint32_t)(sh->tail + 1);
}

static int ready(void)
{
	for (int i = 0; i < SHARDS; i++)
		if (shard_ready(&shards[i]))
			return 1;
	return 0;
}

/* Up to BATCH events of one shard. */
static unsigned deliver_shard(struct shard *sh)
{
	uint64_t tail = sh->tail;
	unsigned n = 0;

	if (!shard_ready(sh))
		return 0;
	atomic_fetch_add(&dispatch_epoch, 1);
	while (n < BATCH) {
		uint64_t index = tail & RING_MASK;
		struct slot *s = &sh->ring[index];
		if (atomic_load_explicit(&s->seq, memory_order_acquire) + (uint32_t)index != (uint32_t)(tail + 1))
			break;
		struct vmtrace_event ev;
		uint32_t meta = s->meta;
		ev.kind = meta & META_KIND_MASK;
		ev.producer = meta >> META_PRODUCER_SHIFT;
		ev.time_ns = s->time_ns;
		ev.object = s->object;
		memcpy(&ev.u, s->payload, sizeof(s->payload));
		/* free the slot before the subscribers run: producers get it sooner */
		atomic_store_explicit(&s->seq, (uint32_t)(tail + RING_SIZE - index), memory_order_release);
		tail++;
		deliver(&ev, meta & META_RETAINED);
		n++;
	}
	atomic_fetch_add(&dispatch_epoch, 1);
	sh->tail = tail;
	atomic_store(&sh->done, tail);
	return n;
}

/* One batch from every shard that has events, round robin. */
static unsigned deliver_batch(void)
{
	unsigned n = 0;

	for (int i = 0; i < SHARDS; i++)
		n += deliver_shard(&shards[i]);
	if (n && atomic_load(&flush_waiters)) {
		atomic_fetch_add(&done_word, 1);
		vmtrace__futex_wake(&done_word, 0x7fffffff);
	}
	return n;
}

/* Every shard's tail has reached its stop_at. */
static int stop_reached(void)
{
	for (int i = 0; i < SHARDS; i++)
		if (shards[i].tail < shards[i].stop_at)
			return 0;
	return 1;
}

static int has_work(void)
{
	return ready() || vmtrace__profile_pending() || atomic_load(&stopping);
}

static void *dispatcher_main(void *arg)
{
	uint64_t idle_since = 0, next_tick = 0, last_look = 0, no_spin_until = 0;
	unsigned spins = 0;

	(void)arg;
	on_dispatcher = 1;
	for (;;) {
		unsigned n = deliver_batch();

		if (vmtrace__profile_pending())
			vmtrace__profile_drain();
		if (atomic_load_explicit(&stopping, memory_order_acquire) && stop_reached())
			break;
		if (n) {
			spins = 0;
			idle_since = 0;
			last_look = 0;
			if (next_tick && vmtrace__now_ns() >= next_tick)
				next_tick = vmtrace__statsd_tick(vmtrace__now_ns(), 0);
			continue;
		}
		/* spin a little: the clock is read only every 64 turns */
		if (++spins & 63) {
			cpu_relax();
			continue;
		}
		uint64_t now = vmtrace__now_ns();
		next_tick = vmtrace__statsd_tick(now, 0);
		if (last_look && now - last_look > PREEMPTED_NS)
			no_spin_until = now + NO_SPIN_NS;
		last_look = now;
		if (idle_since == 0)
			idle_since = now;
		if ((now - idle_since < SPIN_NS && now >= no_spin_until) || atomic_load(&stopping))
			continue;

		uint32_t word = atomic_load(&wake_word);
		atomic_store(&sleeping, 1);
		if (has_work()) {
			atomic_store(&sleeping, 0);
			continue;
		}
		vmtrace__futex_wait(&wake_word, word, next_tick > now ? next_tick - now : 0);
		atomic_store(&sleeping, 0);
		idle_since = 0;
		last_look = 0;
	}
	vmtrace__statsd_tick(vmtrace__now_ns(), 1);
	return NULL;
}

int vmtrace__bus_on_dispatcher(void)
{
	return on_dispatcher;
}

int vmtrace__bus_running(void)
{
	return atomic_load(&running);
}

int vmtrace_bus_start(void)
{
	sigset_t all, old;
	int err;

	pthread_mutex_lock(&ctl_lock);
	if (atomic_load(&running)) {
		pthread_mutex_unlock(&ctl_lock);
		return -EALREADY;
	}
	atomic_store(&stopping, 0);
	/* the dispatcher takes no signals: a handler's publish must never
	 * interrupt the one thread that waits for claimed slots */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&dispatcher, NULL, dispatcher_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err == 0)
		atomic_store(&running, 1);
	pthread_mutex_unlock(&ctl_lock);
	return -err;
}

void vmtrace_bus_stop(void)
{
	if (on_dispatcher)
		return;
	pthread_mutex_lock(&ctl_lock);
	if (!atomic_load(&running)) {
		pthread_mutex_unlock(&ctl_lock);
		return;
	}
	for (int i = 0; i < SHARDS; i++)
		shards[i].stop_at = atomic_load(&shards[i].head);
	atomic_store(&stopping, 1);
	atomic_fetch_add(&wake_word, 1);
	vmtrace__futex_wake(&wake_word, 1);
	pthread_join(dispatcher, NULL);
	atomic_store(&running, 0);
	atomic_store(&stopping, 0);
	pthread_mutex_unlock(&ctl_lock);
	/* flushers waiting on a dispatcher that is gone */
	atomic_fetch_add(&done_word, 1);
	vmtrace__futex_wake(&done_word, 0x7fffffff);
}

int vmtrace_bus_flush(void)
{
	uint64_t target[SHARDS];
	int err = 0;

	if (on_dispatcher)
		return -EDEADLK;
	if (!atomic_load(&running))
		return -EAGAIN;
	for (int i = 0; i < SHARDS; i++)
		target[i] = atomic_load(&shards[i].head);
	atomic_fetch_add(&flush_waiters, 1);
	for (;;) {
		uint32_t word = atomic_load(&done_word);
		int all = 1;
		for (int i = 0; i < SHARDS && all; i++)
			all = atomic_load(&shards[i].done) >= target[i];
		if (all)
			break;
		if (!atomic_load(&running)) {
			err = -EAGAIN;
			break;
		}
		vmtrace__bus_wake();
		vmtrace__futex_wait(&done_word, word, 10000000);
	}
	atomic_fetch_sub(&flush_waiters, 1);
	return err;
}

/* ---- accounting ---- */

void vmtrace_bus_get_stats(struct vmtrace_bus_stats *out)
{
	memset(out, 0, sizeof(*out));
	for (int k = 0; k < VMTRACE_EV__COUNT; k++) {
		/* delivered and dropped first: a reader never sees more of them
		 * than published */
		out->delivered[k] = atomic_load(&delivered[k]);
		out->dropped[k] = atomic_load(&dropped[k]);
		for (int i = 0; i < STRIPES; i++)
			out->published[k] += atomic_load(&published[k][i].v);
	}
	out->objects_in_flight = atomic_load(&objects_in_flight);
}
