/*
 * test_bus.c: the in-process bus: gates, early events, drops and exact
 * accounting, order per producer under a signal storm, object retain/release
 * pairing, signal routing.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <vmtrace/vmtrace.h>

#ifdef __SANITIZE_THREAD__
#define PER_THREAD 20000
#define STORM 400
#else
#define PER_THREAD 200000
#define STORM 2000
#endif
#define PRODUCERS 4

static struct vmtrace_bus_stats stats_now(void)
{
	struct vmtrace_bus_stats s;
	vmtrace_bus_get_stats(&s);
	return s;
}

static struct vmtrace_event user_event(uint32_t producer, uint64_t seq)
{
	struct vmtrace_event ev = { .kind = VMTRACE_EV_USER, .producer = producer };
	ev.u.user.type = 7;
	memcpy(ev.u.user.data, &seq, sizeof(seq));
	return ev;
}

static uint64_t user_seq(const struct vmtrace_event *ev)
{
	uint64_t seq;
	memcpy(&seq, ev->u.user.data, sizeof(seq));
	return seq;
}

/* ---- gates ---- */

static _Atomic uint64_t allocs_seen;
static void count_alloc(const struct vmtrace_event *ev, void *user)
{
	(void)user;
	if (strcmp(ev->u.alloc.klass, "Point") == 0 && ev->u.alloc.size == 24)
		atomic_fetch_add(&allocs_seen, 1);
}

static void test_gate_follows_subscribers(void **state)
{
	(void)state;
	vmtrace_gate *gates = vmtrace__gate_table();
	uint16_t before = gates[VMTRACE_PROBE_OBJECT_ALLOC].part.subscribers;

	assert_int_equal(vmtrace_bus_subscribe(VMTRACE_EV__COUNT, count_alloc, NULL), -EINVAL);
	assert_int_equal(vmtrace_bus_subscribe(VMTRACE_EV_ALLOC, NULL, NULL), -EINVAL);
	assert_int_equal(vmtrace_bus_unsubscribe(12345), -ENOENT);

	assert_int_equal(vmtrace_bus_start(), 0);
	uint64_t pub0 = stats_now().published[VMTRACE_EV_ALLOC];
	vmtrace_alloc("Point", "Geometry#translate", 24, NULL); /* nobody listens */
	assert_int_equal(stats_now().published[VMTRACE_EV_ALLOC], pub0);

	int id = vmtrace_bus_subscribe(VMTRACE_EV_ALLOC, count_alloc, NULL);
	assert_true(id > 0);
	assert_int_equal(gates[VMTRACE_PROBE_OBJECT_ALLOC].part.subscribers, before + 1);
	assert_true(VMTRACE_ENABLED(OBJECT_ALLOC));
	for (int i = 0; i < 10; i++)
		vmtrace_alloc("Point", "Geometry#translate", 24, NULL);
	assert_int_equal(vmtrace_bus_flush(), 0);
	assert_int_equal(atomic_load(&allocs_seen), 10);
	assert_int_equal(stats_now().published[VMTRACE_EV_ALLOC], pub0 + 10);

	assert_int_equal(vmtrace_bus_unsubscribe(id), 0);
	assert_int_equal(vmtrace_bus_unsubscribe(id), -ENOENT);
	assert_int_equal(gates[VMTRACE_PROBE_OBJECT_ALLOC].part.subscribers, before);
	vmtrace_alloc("Point", "Geometry#translate", 24, NULL);
	assert_int_equal(stats_now().published[VMTRACE_EV_ALLOC], pub0 + 10);
	vmtrace_bus_stop();
}

/* ---- early events, full ring ---- */

struct order_state {
	_Atomic uint64_t seen;
	uint64_t next[PRODUCERS + 1]; /* dispatcher only */
	_Atomic uint64_t out_of_order;
	_Atomic uint64_t wrong_thread;
};

/* set on every thread that publishes: subscribers must never run there */
static __thread int publisher_thread;

static void check_order(const struct vmtrace_event *ev, void *user)
{
	struct order_state *st = user;
	uint32_t p = ev->producer;
	uint64_t seq = user_seq(ev);

	if (p > PRODUCERS || seq < st->next[p])
		atomic_fetch_add(&st->out_of_order, 1);
	else
		st->next[p] = seq + 1;
	if (publisher_thread)
		atomic_fetch_add(&st->wrong_thread, 1);
	atomic_fetch_add(&st->seen, 1);
}

static void test_early_events_wait_for_start(void **state)
{
	(void)state;
	static struct order_state st;
	size_t cap = vmtrace_bus_capacity();
	struct vmtrace_bus_stats s0 = stats_now();

	memset(&st, 0, sizeof(st));
	publisher_thread = 1;
	int id = vmtrace_bus_subscribe(VMTRACE_EV_USER, check_order, &st);
	assert_true(id > 0);

	/* bootstrap: no dispatcher yet; more than the ring holds */
	size_t extra = 100, accepted = 0, refused = 0;
	for (uint64_t i = 0; i < cap + extra; i++) {
		struct vmtrace_event ev = user_event(0, i);
		int err = vmtrace_bus_publish(&ev);
		if (err == 0)
			accepted++;
		else if (err == -ENOSPC)
			refused++;
	}
	assert_int_equal(accepted, cap);
	assert_int_equal(refused, extra);
	/* the reserve still takes signals */
	uint64_t sig0 = s0.delivered[VMTRACE_EV_SIGNAL];
	for (int i = 0; i < 3; i++) {
		struct vmtrace_event sig = { .kind = VMTRACE_EV_SIGNAL, .u.signal.signo = SIGURG };
		assert_int_equal(vmtrace_bus_publish(&sig), 0);
	}
	assert_int_equal(vmtrace_bus_flush(), -EAGAIN);
	assert_int_equal(atomic_load(&st.seen), 0);

	assert_int_equal(vmtrace_bus_start(), 0);
	assert_int_equal(vmtrace_bus_start(), -EALREADY);
	assert_int_equal(vmtrace_bus_flush(), 0);
	assert_int_equal(atomic_load(&st.seen), cap);
	assert_int_equal(atomic_load(&st.out_of_order), 0);
	assert_int_equal(atomic_load(&st.wrong_thread), 0);

	struct vmtrace_bus_stats s1 = stats_now();
	int k = VMTRACE_EV_USER;
	assert_int_equal(s1.published[k] - s0.published[k], cap + extra);
	assert_int_equal(s1.delivered[k] - s0.delivered[k], cap);
	assert_int_equal(s1.dropped[k] - s0.dropped[k], extra);
	assert_int_equal(s1.delivered[VMTRACE_EV_SIGNAL] - sig0, 3);
	assert_int_equal(vmtrace_bus_unsubscribe(id), 0);
	vmtrace_bus_stop();

	/* after stop, events wait for the next start */
	struct vmtrace_event ev = user_event(0, 0);
	assert_int_equal(vmtrace_bus_publish(&ev), 0);
	assert_int_equal(stats_now().delivered[k], s1.delivered[k]);
	assert_int_equal(vmtrace_bus_start(), 0);
	assert_int_equal(vmtrace_bus_flush(), 0);
	assert_int_equal(stats_now().delivered[k], s1.delivered[k] + 1);
	vmtrace_bus_stop();
}

/* ---- accounting under producers and a signal storm ---- */

#define STORM_SIGNAL (SIGRTMIN + 1)

static _Atomic int storm_done;
static _Atomic uint64_t signals_seen;
static _Atomic uint64_t signals_wrong_thread;
static struct order_state storm_state;

static void count_signal(const struct vmtrace_event *ev, void *user)
{
	(void)user;
	if (ev->u.signal.signo == STORM_SIGNAL)
		atomic_fetch_add(&signals_seen, 1);
	if (publisher_thread)
		atomic_fetch_add(&signals_wrong_thread, 1);
}

struct producer {
	uint32_t index;
	pthread_t thread;
	uint64_t refused;
};

static void *produce(void *arg)
{
	struct producer *p = arg;
	sigset_t pending;

	publisher_thread = 1;
	for (uint64_t i = 0; i < PER_THREAD; i++) {
		struct vmtrace_event ev = user_event(p->index, i);
		if (vmtrace_bus_publish(&ev) == -ENOSPC)
			p->refused++;
	}
	/* stay until every signal aimed at this thread has been handled */
	while (!atomic_load(&storm_done))
		sched_yield();
	for (;;) {
		sigpending(&pending);
		if (!sigismember(&pending, STORM_SIGNAL))
			break;
		sched_yield();
	}
	return NULL;
}

static void test_exact_accounting_under_storm(void **state)
{
	(void)state;
	struct producer producers[PRODUCERS];
	struct vmtrace_bus_stats s0 = stats_now();
	uint64_t sent = 0, refused = 0;

	memset(&storm_state, 0, sizeof(storm_state));
	atomic_store(&storm_done, 0);
	atomic_store(&signals_seen, 0);
	assert_int_equal(vmtrace_signal_route(STORM_SIGNAL), 0);
	int uid = vmtrace_bus_subscribe(VMTRACE_EV_USER, check_order, &storm_state);
	int sid = vmtrace_bus_subscribe(VMTRACE_EV_SIGNAL, count_signal, NULL);
	assert_true(uid > 0 && sid > 0);
	assert_int_equal(vmtrace_bus_start(), 0);

	for (uint32_t i = 0; i < PRODUCERS; i++) {
		producers[i] = (struct producer){ .index = i + 1 };
		assert_int_equal(pthread_create(&producers[i].thread, NULL, produce, &producers[i]), 0);
	}
	/* a bounded storm: real-time signals queue, so each one sent is one
	 * handler run; a full queue (EAGAIN) is retried */
	for (int i = 0; i < STORM; i++) {
		int err = pthread_kill(producers[i % PRODUCERS].thread, STORM_SIGNAL);
		if (err == 0)
			sent++;
		else if (err == EAGAIN)
			i--, sched_yield();
		else
			fail_msg("pthread_kill: %s", strerror(err));
#ifdef __SANITIZE_THREAD__
		/* ThreadSanitizer keeps one pending instance per signal number
		 * and thread, so queued signals would merge: send the next one
		 * once this one has been published */
		while (stats_now().published[VMTRACE_EV_SIGNAL] - s0.published[VMTRACE_EV_SIGNAL] < sent)
			sched_yield();
#endif
	}
	atomic_store(&storm_done, 1);
	for (int i = 0; i < PRODUCERS; i++) {
		pthread_join(producers[i].thread, NULL);
		refused += producers[i].refused;
	}
	assert_int_equal(vmtrace_bus_flush(), 0);

	struct vmtrace_bus_stats s1 = stats_now();
	int u = VMTRACE_EV_USER, g = VMTRACE_EV_SIGNAL;
	uint64_t pub_u = s1.published[u] - s0.published[u];
	uint64_t del_u = s1.delivered[u] - s0.delivered[u];
	uint64_t drop_u = s1.dropped[u] - s0.dropped[u];
	assert_int_equal(pub_u, (uint64_t)PRODUCERS * PER_THREAD);
	assert_int_equal(drop_u, refused);
	assert_int_equal(pub_u, del_u + drop_u);
	assert_int_equal(atomic_load(&storm_state.seen), del_u);
	assert_int_equal(atomic_load(&storm_state.out_of_order), 0);
	assert_int_equal(atomic_load(&storm_state.wrong_thread), 0);

	uint64_t pub_s = s1.published[g] - s0.published[g];
	uint64_t del_s = s1.delivered[g] - s0.delivered[g];
	uint64_t drop_s = s1.dropped[g] - s0.dropped[g];
	assert_int_equal(pub_s, sent);
	assert_int_equal(pub_s, del_s + drop_s);
	assert_int_equal(atomic_load(&signals_seen), del_s);
	assert_int_equal(atomic_load(&signals_wrong_thread), 0);
	print_message("storm: %llu user events (%llu dropped), %llu signals (%llu dropped)\n",
		      (unsigned long long)pub_u, (unsigned long long)drop_u,
		      (unsigned long long)pub_s, (unsigned long long)drop_s);

	assert_int_equal(vmtrace_bus_unsubscribe(uid), 0);
	assert_int_equal(vmtrace_bus_unsubscribe(sid), 0);
	assert_int_equal(vmtrace_signal_unroute(STORM_SIGNAL), 0);
	assert_int_equal(vmtrace_signal_unroute(STORM_SIGNAL), -ENOENT);
	vmtrace_bus_stop();
}

/* ---- object references ---- */

#define OBJECTS 64
static _Atomic int64_t retains[OBJECTS], releases[OBJECTS];
static char objects[OBJECTS];
static _Atomic uint64_t seen_alive;

static void retain(void *object, void *user)
{
	assert_ptr_equal(user, retains);
	atomic_fetch_add(&retains[(char *)object - objects], 1);
}

static void release(void *object, void *user)
{
	(void)user;
	atomic_fetch_add(&releases[(char *)object - objects], 1);
}

static void check_alive(const struct vmtrace_event *ev, void *user)
{
	(void)user;
	ptrdiff_t i = (char *)ev->object - objects;
	/* Still retained while a subscriber looks at it. Releases are read
	 * first: publishers retain and, when the ring is full, release the same
	 * object concurrently, and reading retains first could see a later
	 * drop's release without its retain. */
	int64_t released = atomic_load(&releases[i]);
	if (atomic_load(&retains[i]) > released)
		atomic_fetch_add(&seen_alive, 1);
}

static void *publish_objects(void *arg)
{
	uint64_t n = (uint64_t)(uintptr_t)arg;
	for (uint64_t i = 0; i < n; i++) {
		struct vmtrace_event ev = { .kind = VMTRACE_EV_FREE, .object = &objects[i % OBJECTS] };
		ev.u.free.klass = "Point";
		vmtrace_bus_publish(&ev);
	}
	return NULL;
}

static void test_retain_release_paired(void **state)
{
	(void)state;
	size_t cap = vmtrace_bus_capacity();
	struct vmtrace_bus_stats s0 = stats_now();
	int k = VMTRACE_EV_FREE;

	assert_int_equal(vmtrace_bus_set_object_hooks(retain, NULL, NULL), -EINVAL);
	assert_int_equal(vmtrace_bus_set_object_hooks(retain, release, retains), 0);
	int id = vmtrace_bus_subscribe(VMTRACE_EV_FREE, check_alive, NULL);
	assert_true(id > 0);

	/* dispatcher stopped: the ring fills, the rest are dropped and
	 * released at once */
	publish_objects((void *)(uintptr_t)(cap + 500));
	struct vmtrace_bus_stats s1 = stats_now();
	assert_int_equal(s1.dropped[k] - s0.dropped[k], 500);
	assert_int_equal(s1.objects_in_flight, cap);
	assert_int_equal(vmtrace_bus_set_object_hooks(NULL, NULL, NULL), -EBUSY);

	/* then concurrent publishers against a running dispatcher */
	assert_int_equal(vmtrace_bus_start(), 0);
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, publish_objects, (void *)(uintptr_t)(PER_THREAD / 4));
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(vmtrace_bus_flush(), 0);

	struct vmtrace_bus_stats s2 = stats_now();
	uint64_t pub = s2.published[k] - s0.published[k];
	uint64_t del = s2.delivered[k] - s0.delivered[k];
	uint64_t total_retains = 0;
	assert_int_equal(pub, cap + 500 + 2 * (PER_THREAD / 4));
	assert_int_equal(pub, del + s2.dropped[k] - s0.dropped[k]);
	for (int i = 0; i < OBJECTS; i++) {
		assert_int_equal(atomic_load(&retains[i]), atomic_load(&releases[i]));
		total_retains += (uint64_t)atomic_load(&retains[i]);
	}
	assert_int_equal(total_retains, pub);
	assert_int_equal(atomic_load(&seen_alive), del);
	assert_int_equal(s2.objects_in_flight, 0);

	assert_int_equal(vmtrace_bus_unsubscribe(id), 0);
	assert_int_equal(vmtrace_bus_set_object_hooks(NULL, NULL, NULL), 0);
	vmtrace_bus_stop();
}

/* ---- signal routing ---- */

static _Atomic int routed_signo;
static _Atomic uint64_t routed_latency_ok;

static void note_signal(const struct vmtrace_event *ev, void *user)
{
	(void)user;
	atomic_store(&routed_signo, ev->u.signal.signo);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (ev->time_ns && ev->time_ns <= now)
		atomic_fetch_add(&routed_latency_ok, 1);
}

static void test_signal_route(void **state)
{
	(void)state;
	assert_int_equal(vmtrace_signal_route(SIGKILL), -EINVAL);
	assert_int_equal(vmtrace_signal_route(0), -EINVAL);
	assert_int_equal(vmtrace_signal_route(SIGUSR2), 0);
	int id = vmtrace_bus_subscribe(VMTRACE_EV_SIGNAL, note_signal, NULL);
	assert_int_equal(vmtrace_bus_start(), 0);

	errno = 1234;
	raise(SIGUSR2);
	assert_int_equal(errno, 1234); /* the handler preserves errno */
	assert_int_equal(vmtrace_bus_flush(), 0);
	assert_int_equal(atomic_load(&routed_signo), SIGUSR2);
	assert_int_equal(atomic_load(&routed_latency_ok), 1);

	assert_int_equal(vmtrace_bus_unsubscribe(id), 0);
	assert_int_equal(vmtrace_signal_unroute(SIGUSR2), 0);
	vmtrace_bus_stop();
}

/* ---- a subscriber that leaves from inside its own call ---- */

static int self_id;
static _Atomic int self_calls;
static _Atomic int self_unsub_result = 1;
static _Atomic int self_flush_result = 1;

static void leave_after_first(const struct vmtrace_event *ev, void *user)
{
	(void)ev;
	(void)user;
	if (atomic_fetch_add(&self_calls, 1) == 0) {
		atomic_store(&self_unsub_result, vmtrace_bus_unsubscribe(self_id));
		/* the dispatcher cannot wait for itself */
		atomic_store(&self_flush_result, vmtrace_bus_flush());
	}
}

static void test_unsubscribe_from_subscriber(void **state)
{
	(void)state;
	self_id = vmtrace_bus_subscribe(VMTRACE_EV_GC_BEGIN, leave_after_first, NULL);
	assert_true(self_id > 0);
	/* published before the start: the host's gate reads are plain loads,
	 * by design, and must not overlap the dispatcher's unsubscribe here */
	for (int i = 0; i < 10; i++)
		vmtrace_gc_begin(VMTRACE_GC_MINOR, 100);
	assert_int_equal(vmtrace_bus_start(), 0);
	assert_int_equal(vmtrace_bus_flush(), 0);
	assert_int_equal(atomic_load(&self_calls), 1);
	assert_int_equal(atomic_load(&self_unsub_result), 0);
	assert_int_equal(atomic_load(&self_flush_result), -EDEADLK);
	assert_false(VMTRACE_ENABLED(GC_BEGIN));
	vmtrace_bus_stop();
}

/* a failed test must not leave the dispatcher running for the next */
static int stop_bus(void **state)
{
	(void)state;
	vmtrace_bus_stop();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_gate_follows_subscribers, stop_bus),
		cmocka_unit_test_teardown(test_early_events_wait_for_start, stop_bus),
		cmocka_unit_test_teardown(test_exact_accounting_under_storm, stop_bus),
		cmocka_unit_test_teardown(test_retain_release_paired, stop_bus),
		cmocka_unit_test_teardown(test_signal_route, stop_bus),
		cmocka_unit_test_teardown(test_unsubscribe_from_subscriber, stop_bus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
