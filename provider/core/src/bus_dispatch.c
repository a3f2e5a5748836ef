/*
 * bus_dispatch.c: the bus's subscribers and its one dispatcher thread,
 * which empties the rings (bus_ring.c) in claim order and runs the
 * subscribers. Between batches it also does the work other parts hand it
 * (the profiler's sample drain, statsd's sends) through the hooks they
 * register, so it never calls those parts by name: they sit above the bus.
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
#include <stdatomic.h>
#include <string.h>

#include "bus_ring.h"
#include "bus_dispatch.h"

#define MAX_SUBS 16		/* per kind */
#define BATCH 256		/* events between bookkeeping */
#define SPIN_NS 50000		/* stay awake this long after the last event */
#define PREEMPTED_NS 200000	/* a gap this long inside a spin: descheduled */
#define NO_SPIN_NS 500000000	/* then park at once for this long */

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
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}
/* ---- work other parts hand the dispatcher ---- */

static _Atomic(vmtrace__pending_fn) profile_pending;
static _Atomic(vmtrace__drain_fn) profile_drain;
static _Atomic(vmtrace__tick_fn) statsd_tick;

void vmtrace__bus_set_profile_work(vmtrace__pending_fn pending, vmtrace__drain_fn drain)
{
	atomic_store(&profile_drain, drain);
	atomic_store(&profile_pending, pending);
}

void vmtrace__bus_set_statsd_tick(vmtrace__tick_fn tick)
{
	atomic_store(&statsd_tick, tick);
}

static int work_pending(void)
{
	vmtrace__pending_fn pending = atomic_load_explicit(&profile_pending, memory_order_acquire);

	return pending && pending();
}

static void work_drain(void)
{
	atomic_load_explicit(&profile_drain, memory_order_relaxed)();
}

/* When statsd wants the next tick (0: statsd is off). */
static uint64_t work_tick(uint64_t now_ns, int force)
{
	vmtrace__tick_fn tick = atomic_load_explicit(&statsd_tick, memory_order_acquire);

	return tick ? tick(now_ns, force) : 0;
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
	atomic_store_explicit(&vmtrace__delivered[kind],
			      atomic_load_explicit(&vmtrace__delivered[kind], memory_order_relaxed) + 1,
			      memory_order_relaxed);
	if (retained)
		vmtrace__bus_release_object(ev->object);
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
		if (shard_ready(&vmtrace__shards[i]))
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
		n += deliver_shard(&vmtrace__shards[i]);
	if (n && atomic_load(&vmtrace__flush_waiters)) {
		atomic_fetch_add(&vmtrace__done_word, 1);
		vmtrace__futex_wake(&vmtrace__done_word, 0x7fffffff);
	}
	return n;
}

/* Every shard's tail has reached its stop_at. */
static int stop_reached(void)
{
	for (int i = 0; i < SHARDS; i++)
		if (vmtrace__shards[i].tail < vmtrace__shards[i].stop_at)
			return 0;
	return 1;
}

static int has_work(void)
{
	return ready() || work_pending() || atomic_load(&stopping);
}

static void *dispatcher_main(void *arg)
{
	uint64_t idle_since = 0, next_tick = 0, last_look = 0, no_spin_until = 0;
	unsigned spins = 0;

	(void)arg;
	on_dispatcher = 1;
	for (;;) {
		unsigned n = deliver_batch();

		if (work_pending())
			work_drain();
		if (atomic_load_explicit(&stopping, memory_order_acquire) && stop_reached())
			break;
		if (n) {
			spins = 0;
			idle_since = 0;
			last_look = 0;
			if (next_tick && vmtrace__now_ns() >= next_tick)
				next_tick = work_tick(vmtrace__now_ns(), 0);
			continue;
		}
		/* spin a little: the clock is read only every 64 turns */
		if (++spins & 63) {
			cpu_relax();
			continue;
		}
		uint64_t now = vmtrace__now_ns();
		next_tick = work_tick(now, 0);
		if (last_look && now - last_look > PREEMPTED_NS)
			no_spin_until = now + NO_SPIN_NS;
		last_look = now;
		if (idle_since == 0)
			idle_since = now;
		if ((now - idle_since < SPIN_NS && now >= no_spin_until) || atomic_load(&stopping))
			continue;

		uint32_t word = atomic_load(&vmtrace__wake_word);
		atomic_store(&vmtrace__sleeping, 1);
		if (has_work()) {
			atomic_store(&vmtrace__sleeping, 0);
			continue;
		}
		vmtrace__futex_wait(&vmtrace__wake_word, word, next_tick > now ? next_tick - now : 0);
		atomic_store(&vmtrace__sleeping, 0);
		idle_since = 0;
		last_look = 0;
	}
	work_tick(vmtrace__now_ns(), 1);
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
		vmtrace__shards[i].stop_at = atomic_load(&vmtrace__shards[i].head);
	atomic_store(&stopping, 1);
	atomic_fetch_add(&vmtrace__wake_word, 1);
	vmtrace__futex_wake(&vmtrace__wake_word, 1);
	pthread_join(dispatcher, NULL);
	atomic_store(&running, 0);
	atomic_store(&stopping, 0);
	pthread_mutex_unlock(&ctl_lock);
	/* flushers waiting on a dispatcher that is gone */
	atomic_fetch_add(&vmtrace__done_word, 1);
	vmtrace__futex_wake(&vmtrace__done_word, 0x7fffffff);
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
		target[i] = atomic_load(&vmtrace__shards[i].head);
	atomic_fetch_add(&vmtrace__flush_waiters, 1);
	for (;;) {
		uint32_t word = atomic_load(&vmtrace__done_word);
		int all = 1;
		for (int i = 0; i < SHARDS && all; i++)
			all = atomic_load(&vmtrace__shards[i].done) >= target[i];
		if (all)
			break;
		if (!atomic_load(&running)) {
			err = -EAGAIN;
			break;
		}
		vmtrace__bus_wake();
		vmtrace__futex_wait(&vmtrace__done_word, word, 10000000);
	}
	atomic_fetch_sub(&vmtrace__flush_waiters, 1);
	return err;
}
