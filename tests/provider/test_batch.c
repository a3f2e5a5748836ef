/*
 * test_batch: batched counting in libvmtrace (provider/core/src/batch.c), under
 * the same races it meets in a host: many threads adding while the flush
 * thread flushes them, tables growing, threads exiting, a signal handler
 * allocating in the middle of its thread's add, fork. Every batch the
 * provider delivers is summed here (the provider's test observer), and the
 * sums must equal what the threads counted, exactly; the ThreadSanitizer
 * build runs the same test (label tsan).
 *
 * Each test runs three ways: the host calls vmtrace_alloc/vmtrace_free
 * (each thread's table), vmtrace_alloc_cached/vmtrace_free_cached with one
 * key cache per key (counts by key id, added inline), and the cached calls
 * with one cache for every key, so nearly every event misses its cache.
 *
 * The batch semaphores are raised by hand, as a tracer's uprobes would.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>

#include <vmtrace/vmtrace.h>

extern unsigned short vmtrace_alloc__batch_semaphore, vmtrace_free__batch_semaphore;
extern void (*vmtrace__batch_observer)(const void *batch, uint64_t bytes);

#define THREADS 8
#define KEYS 3000             /* > the first table's 32 slots: tables grow */
#define PER_THREAD 200000

static const char *names[KEYS];
static char storage[KEYS][16];
static const char handler_class[] = "FromHandler";
/* more classes than libvmtrace interns keys (VMTRACE__KEYS_MAX): each
 * byte's address is a class name */
#define MANY_KEYS 20000
static const char many_classes[MANY_KEYS];

/* what the batches delivered, per key index (+1 slot for the handler's) */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
/* ... KEYS: the signal handler's class; KEYS + 1: the NULL class; KEYS + 2:
 * all of many_classes together */
static uint64_t got_count[KEYS + 3], got_bytes[KEYS + 3], got_frees[KEYS + 3];
static uint64_t got_lost, got_rounds, last_request, bad_batches;

static int key_index(uint64_t ptr)
{
	uint64_t base = (uint64_t)storage;

	if (ptr == (uint64_t)handler_class)
		return KEYS;
	if (ptr == 0)
		return KEYS + 1;
	if (ptr >= (uint64_t)many_classes && ptr < (uint64_t)many_classes + sizeof(many_classes))
		return KEYS + 2;
	if (ptr < base || ptr >= base + sizeof(storage) || (ptr - base) % sizeof(storage[0]))
		return -1;
	return (int)((ptr - base) / sizeof(storage[0]));
}

static void observe(const void *p, uint64_t bytes)
{
	const struct vmtrace_batch *b = p;
	const struct vmtrace_batch_record *r = (const void *)(b + 1);

	pthread_mutex_lock(&mu);
	if (b->magic != VMTRACE_BATCH_MAGIC || b->version != VMTRACE_BATCH_VERSION ||
	    b->record_size != sizeof(*r) || bytes != sizeof(*b) + (uint64_t)b->count * sizeof(*r) ||
	    bytes > VMTRACE_BATCH_MAX_BYTES)
		bad_batches++;
	got_lost += b->lost;
	if (b->flags & VMTRACE_BATCH_ROUND_END) {
		got_rounds++;
		last_request = b->request;
	}
	for (uint32_t i = 0; i < b->count; i++) {
		int k = key_index(r[i].klass);

		if (k < 0) {
			bad_batches++;
			continue;
		}
		if (b->kind == VMTRACE_BATCH_ALLOC) {
			got_count[k] += r[i].count;
			got_bytes[k] += r[i].bytes;
		} else {
			got_frees[k] += r[i].count;
		}
	}
	pthread_mutex_unlock(&mu);
}

static void reset(void)
{
	pthread_mutex_lock(&mu);
	memset(got_count, 0, sizeof(got_count));
	memset(got_bytes, 0, sizeof(got_bytes));
	memset(got_frees, 0, sizeof(got_frees));
	got_lost = got_rounds = bad_batches = 0;
	pthread_mutex_unlock(&mu);
}

static uint64_t seen_request(void)
{
	pthread_mutex_lock(&mu);
	uint64_t seen = last_request;
	pthread_mutex_unlock(&mu);
	return seen;
}

static int setup(void **state)
{
	(void)state;
	for (int i = 0; i < KEYS; i++) {
		snprintf(storage[i], sizeof(storage[i]), "K%d", i);
		names[i] = storage[i];
	}
	vmtrace__batch_observer = observe;
	vmtrace_alloc__batch_semaphore = 1;
	vmtrace_free__batch_semaphore = 1;
	return 0;
}

/* How the host calls libvmtrace (the tests' prestate). */
enum host_calls { PLAIN, CACHED, CACHE_SHARED };
static enum host_calls calls;
static struct vmtrace_key_cache alloc_keys[KEYS + 2], free_keys[KEYS + 2], shared_key;

static int use(void **state)
{
	calls = *(enum host_calls *)*state;
	return 0;
}

/* An allocation (a free) of key index i, named k, the way `calls` says. */
static void alloc_event(int i, const char *k, const char *m, uint64_t size)
{
	if (calls == PLAIN)
		vmtrace_alloc(k, m, size, NULL);
	else
		vmtrace_alloc_cached(calls == CACHED ? &alloc_keys[i] : &shared_key, k, m, size, NULL, NULL);
}

static void free_event(int i, const char *k, uint64_t size)
{
	if (calls == PLAIN)
		vmtrace_free(k, size);
	else
		vmtrace_free_cached(calls == CACHED ? &free_keys[i] : &shared_key, k, size, NULL);
}

/* While a test sets it, workers wait halfway for a round to end, so the
 * rest of their adds race rounds however fast they count. */
static int rounds_halfway;

static void await_round(void)
{
	for (int i = 0; i < 5000 && __atomic_load_n(&rounds_halfway, __ATOMIC_ACQUIRE); i++) { /* 5 s */
		pthread_mutex_lock(&mu);
		int seen = got_rounds > 0;
		pthread_mutex_unlock(&mu);
		if (seen)
			return;
		usleep(1000);
	}
}

/* Thread i allocates key (i * 7 + n) % KEYS of size n % 64 + 1, frees every other. */
static void *worker(void *arg)
{
	unsigned i = (unsigned)(uintptr_t)arg;

	for (unsigned n = 0; n < PER_THREAD; n++) {
		int key = (int)((i * 7 + n) % KEYS);

		if (n == PER_THREAD / 2)
			await_round();

		alloc_event(key, names[key], "m", n % 64 + 1);
		if (n % 2)
			free_event(key, names[key], n % 64 + 1);
	}
	return NULL;
}

/* Asks for rounds while the workers run, as a consumer would. */
static void *requester(void *arg)
{
	volatile int *stop = arg;

	for (uint64_t n = 1; !__atomic_load_n(stop, __ATOMIC_ACQUIRE); n++) {
		__atomic_store_n(&vmtrace_batch_request, n, __ATOMIC_RELAXED);
		usleep(2000);
	}
	return NULL;
}

/* What the batches delivered so far, copied under the lock (a failed
 * assertion leaves by longjmp, so none is made with the lock held). */
struct snapshot {
	uint64_t count[KEYS + 3], bytes[KEYS + 3], frees[KEYS + 3];
	uint64_t lost, rounds, bad;
};

static void snap(struct snapshot *g)
{
	pthread_mutex_lock(&mu);
	memcpy(g->count, got_count, sizeof(got_count));
	memcpy(g->bytes, got_bytes, sizeof(got_bytes));
	memcpy(g->frees, got_frees, sizeof(got_frees));
	g->lost = got_lost;
	g->rounds = got_rounds;
	g->bad = bad_batches;
	pthread_mutex_unlock(&mu);
}

static void want_exact(unsigned threads)
{
	uint64_t want_count[KEYS] = { 0 }, want_bytes[KEYS] = { 0 }, want_frees[KEYS] = { 0 };

	for (unsigned i = 0; i < threads; i++)
		for (unsigned n = 0; n < PER_THREAD; n++) {
			unsigned k = (i * 7 + n) % KEYS;

			want_count[k]++;
			want_bytes[k] += n % 64 + 1;
			want_frees[k] += n % 2;
		}
	struct snapshot g;

	snap(&g);
	assert_int_equal(g.bad, 0);
	assert_int_equal(g.lost, 0);
	for (int k = 0; k < KEYS; k++) {
		assert_int_equal(g.count[k], want_count[k]);
		assert_int_equal(g.bytes[k], want_bytes[k]);
		assert_int_equal(g.frees[k], want_frees[k]);
	}
}

/* Threads that exit deliver everything; flushes racing the adds lose nothing. */
static void test_threads_exact_under_flushes(void **state)
{
	pthread_t t[THREADS], req;
	volatile int stop = 0;

	(void)state;
	reset();
	__atomic_store_n(&rounds_halfway, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_create(&req, NULL, requester, (void *)&stop), 0);
	for (unsigned i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i), 0);
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&rounds_halfway, 0, __ATOMIC_RELEASE);
	pthread_join(req, NULL);
	want_exact(THREADS);
	struct snapshot g;
	snap(&g);
	assert_true(g.rounds > 0);
}

/* An idle thread's counts arrive through a requested round, before it exits. */
static pthread_mutex_t idle_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cv = PTHREAD_COND_INITIALIZER;
static int idle_phase;

static void *idle_worker(void *arg)
{
	worker(arg);
	pthread_mutex_lock(&idle_mu);
	idle_phase = 1;
	pthread_cond_broadcast(&idle_cv);
	while (idle_phase != 2)
		pthread_cond_wait(&idle_cv, &idle_mu);
	pthread_mutex_unlock(&idle_mu);
	return NULL;
}

static void test_idle_thread_flushed_on_request(void **state)
{
	pthread_t t;
	static uint64_t runs;
	uint64_t token = 0x1d1e00 + ++runs; /* a new request each run */

	(void)state;
	reset();
	idle_phase = 0;
	assert_int_equal(pthread_create(&t, NULL, idle_worker, (void *)(uintptr_t)0), 0);
	pthread_mutex_lock(&idle_mu);
	while (idle_phase != 1)
		pthread_cond_wait(&idle_cv, &idle_mu);
	pthread_mutex_unlock(&idle_mu);
	__atomic_store_n(&vmtrace_batch_request, token, __ATOMIC_RELAXED);
	for (int i = 0; i < 500 && seen_request() != token; i++) /* 5 s: a hang, not a measurement */
		usleep(10000);
	want_exact(1); /* while the thread still lives, idle */
	pthread_mutex_lock(&idle_mu);
	idle_phase = 2;
	pthread_cond_broadcast(&idle_cv);
	pthread_mutex_unlock(&idle_mu);
	pthread_join(t, NULL);
	want_exact(1); /* and its exit added nothing twice */
}

/* A signal handler that allocates while its thread is mid-add. */
static volatile sig_atomic_t handled;

static void on_signal(int signo)
{
	(void)signo;
	alloc_event(KEYS, handler_class, "handler", 8);
	handled++;
}

static void *signalled(void *arg)
{
	volatile int *stop = arg;

	while (!__atomic_load_n(stop, __ATOMIC_ACQUIRE))
		for (unsigned n = 0; n < 1000; n++)
			alloc_event((int)(n % KEYS), names[n % KEYS], "m", 16);
	return NULL;
}

static void test_signal_handler_allocates_mid_add(void **state)
{
	struct sigaction sa = { .sa_handler = on_signal };
	volatile int stop = 0;
	pthread_t t;

	(void)state;
	reset();
	handled = 0;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	assert_int_equal(pthread_create(&t, NULL, signalled, (void *)&stop), 0);
	for (int i = 0; i < 2000; i++) {
		pthread_kill(t, SIGUSR1);
		usleep(100);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	struct snapshot g;
	snap(&g);
	assert_int_equal(g.bad, 0);
	/* every handler's allocation counted, or counted as lost */
	assert_int_equal(g.count[KEYS] + g.lost, (uint64_t)handled);
	assert_true(handled > 0);
}

/* A key of NULL pointers is a key like any other (a zeroed cache names it
 * before anything is interned), also through a cache left with an id no key
 * was interned as. */
static void test_null_key_counted(void **state)
{
	static uint64_t runs;
	uint64_t token = 0x9011 + ++runs;
	struct snapshot g;

	(void)state;
	reset();
	/* a cache the host never zeroed, naming an id nothing was interned
	 * as (its registry entry is all zero, like this key) */
	alloc_event(0, names[0], "m", 1); /* this thread has counts by key now */
	alloc_keys[KEYS + 1].id = VMTRACE__KEYS_MAX - 1;
	for (int n = 0; n < 10; n++) {
		alloc_event(KEYS + 1, NULL, NULL, 3);
		free_event(KEYS + 1, NULL, 3);
	}
	__atomic_store_n(&vmtrace_batch_request, token, __ATOMIC_RELAXED);
	for (int i = 0; i < 500 && seen_request() != token; i++) /* 5 s: a hang, not a measurement */
		usleep(10000);
	snap(&g);
	assert_int_equal(g.bad, 0);
	assert_int_equal(g.count[KEYS + 1], 10);
	assert_int_equal(g.bytes[KEYS + 1], 30);
	assert_int_equal(g.frees[KEYS + 1], 10);
}

/* More keys than the registry holds, through caches the host never
 * zeroed: the keys past its end take the table, and every event counts. */
static void test_keys_beyond_the_registry(void **state)
{
	static struct vmtrace_key_cache alloc_cache[MANY_KEYS], free_cache[MANY_KEYS];
	static uint64_t runs;
	uint64_t token = 0x3a4e + ++runs;
	struct snapshot g;

	(void)state;
	reset();
	for (int i = 0; i < MANY_KEYS; i++) {
		struct vmtrace_key_cache *a = calls == CACHED ? &alloc_cache[i] : &shared_key;
		struct vmtrace_key_cache *f = calls == CACHED ? &free_cache[i] : &shared_key;

		a->id = 0xfffffff0u - (uint32_t)i; /* garbage */
		f->id = (uint32_t)i * 7919u;
		if (calls == PLAIN) {
			vmtrace_alloc(&many_classes[i], "m", 5, NULL);
			vmtrace_free(&many_classes[i], 5);
		} else {
			vmtrace_alloc_cached(a, &many_classes[i], "m", 5, NULL, NULL);
			vmtrace_free_cached(f, &many_classes[i], 5, NULL);
		}
	}
	__atomic_store_n(&vmtrace_batch_request, token, __ATOMIC_RELAXED);
	for (int i = 0; i < 500 && seen_request() != token; i++) /* 5 s: a hang, not a measurement */
		usleep(10000);
	snap(&g);
	assert_int_equal(g.bad, 0);
	assert_int_equal(g.lost, 0);
	assert_int_equal(g.count[KEYS + 2], MANY_KEYS);
	assert_int_equal(g.bytes[KEYS + 2], 5 * MANY_KEYS);
	assert_int_equal(g.frees[KEYS + 2], MANY_KEYS);
}

/* A fork child never delivers its parent's counts. */
static void test_fork_child_starts_empty(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	reset();
	for (int n = 0; n < 100; n++)
		alloc_event(0, names[0], "m", 1); /* pending in this thread's counts */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		reset();
		/* the key the parent left pending, and a new one: the child
		 * counts only its own events of both */
		alloc_event(0, names[0], "m", 1);
		alloc_event(1, names[1], "m", 1);
		__atomic_store_n(&vmtrace_batch_request, 0xc41d, __ATOMIC_RELAXED);
		for (int i = 0; i < 500 && seen_request() != 0xc41d; i++)
			usleep(10000);
		pthread_mutex_lock(&mu);
		int ok = got_count[0] == 1 && got_count[1] == 1 && last_request == 0xc41d;
		pthread_mutex_unlock(&mu);
		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	static enum host_calls plain = PLAIN, cached = CACHED, shared = CACHE_SHARED;
#define EACH_WAY(test)                                                         \
	cmocka_unit_test_prestate_setup_teardown(test, use, NULL, &plain),     \
	cmocka_unit_test_prestate_setup_teardown(test, use, NULL, &cached),    \
	cmocka_unit_test_prestate_setup_teardown(test, use, NULL, &shared)
	const struct CMUnitTest tests[] = {
		EACH_WAY(test_threads_exact_under_flushes),
		EACH_WAY(test_idle_thread_flushed_on_request),
		EACH_WAY(test_signal_handler_allocates_mid_add),
		EACH_WAY(test_null_key_counted),
		EACH_WAY(test_fork_child_starts_empty),
		/* last: it fills the registry */
		EACH_WAY(test_keys_beyond_the_registry),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
