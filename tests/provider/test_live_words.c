/*
 * test_live_words: the live heap of objects that carry a word (provider/core/src/
 * live_words.c, vmtrace_alloc_live): per key, what the KEY records add up to
 * is exactly what the test left alive, with the temporaries it freed at
 * once; the NET records add up to the live bytes; the AGES snapshot holds
 * every live object at its age. Deaths on another thread than the birth,
 * deaths beyond the ring's half (the slow path, before and after the
 * births moved out of the ring), and deaths of objects born in an earlier
 * session, which must not count, are all here. Every live batch is replayed
 * through the provider's test observer by a model of the tracer
 * (consumer/src/runtimes/vmtrace/live.bpf.h). The semaphores are raised by hand, as a
 * tracer's uprobes would, and the clock is moved on by hand to reach ages
 * the test cannot wait for.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <vmtrace/batch.h>
#include <vmtrace/vmtrace.h>

extern unsigned short vmtrace_live__batch_semaphore, vmtrace_alloc__batch_semaphore,
	vmtrace_free__batch_semaphore;
extern void (*vmtrace__batch_observer)(const void *batch, uint64_t bytes);

#define KEYS 3
#define OBJS 4096

static const char *const klass[KEYS] = { "Point", "String", "Array" };
static struct vmtrace_key_cache alloc_cache[KEYS], free_cache[KEYS];

struct obj {
	int alive;
	unsigned key;
	uint64_t size, word;
};
static struct obj objs[OBJS];

/* The model tracer, fed by the observer. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t live_count[KEYS], live_bytes_by_key[KEYS], net_bytes;
static uint64_t temp_count[KEYS], temp_bytes[KEYS], ages[64], snapshots, bad, answered;

static int key_of(uint64_t k)
{
	for (int i = 0; i < KEYS; i++)
		if (k == (uint64_t)(uintptr_t)klass[i])
			return i;
	return -1;
}

static void observe(const void *batch, uint64_t bytes)
{
	const struct vmtrace_batch *h = batch;
	const struct vmtrace_live_record *r = (const void *)(h + 1);

	if (h->flags & VMTRACE_BATCH_ROUND_END)
		__atomic_store_n(&answered, h->request, __ATOMIC_RELEASE);
	if (h->kind != VMTRACE_BATCH_LIVE)
		return;
	assert_int_equal(bytes, sizeof(*h) + h->count * sizeof(*r));
	pthread_mutex_lock(&mu);
	for (uint32_t i = 0; i < h->count; i++, r++) {
		int k = key_of(r->klass);

		switch (r->op) {
		case VMTRACE_LIVE_KEY:
			if (k < 0) {
				bad++;
				break;
			}
			live_count[k] += (int64_t)r->addr;
			live_bytes_by_key[k] += (int64_t)r->size;
			temp_count[k] += r->weight;
			temp_bytes[k] += r->time_ns;
			break;
		case VMTRACE_LIVE_NET:
			assert_true((int64_t)r->size >= 0 && (int64_t)r->size >= (int64_t)r->addr);
			net_bytes += (int64_t)r->addr;
			break;
		case VMTRACE_LIVE_AGES:
			if (r->weight) {
				memset(ages, 0, sizeof(ages));
				snapshots++;
			}
			ages[r->addr & 63] = r->size;
			break;
		default:
			bad++; /* the word path sends no address */
		}
	}
	pthread_mutex_unlock(&mu);
}

/* The model as it is now: assertions run on a copy, never under mu (a
 * failed one must not leave the observer locked out). */
struct model {
	int64_t live_count[KEYS], live_bytes[KEYS], net_bytes;
	uint64_t temp_count[KEYS], ages[64], snapshots, bad;
};

static struct model model_now(void)
{
	struct model m;

	pthread_mutex_lock(&mu);
	memcpy(m.live_count, live_count, sizeof(m.live_count));
	memcpy(m.live_bytes, live_bytes_by_key, sizeof(m.live_bytes));
	m.net_bytes = net_bytes;
	memcpy(m.temp_count, temp_count, sizeof(m.temp_count));
	memcpy(m.ages, ages, sizeof(m.ages));
	m.snapshots = snapshots;
	m.bad = bad;
	pthread_mutex_unlock(&mu);
	return m;
}

static void born(unsigned i, unsigned key, uint64_t size)
{
	objs[i] = (struct obj){ 1, key, size, 0 };
	vmtrace_alloc_live(&objs[i].word, &alloc_cache[key], klass[key], "m", size, "s.c:1", &objs[i]);
}

static void dies(unsigned i)
{
	assert_true(objs[i].alive);
	objs[i].alive = 0;
	vmtrace_free_live(objs[i].word, &free_cache[objs[i].key], klass[objs[i].key], objs[i].size, &objs[i]);
}

/* Ask for everything, as a consumer does, and wait for the round's end:
 * rounds run one at a time, so its records are the last word. */
static void round_trip(void)
{
	static uint64_t request;

	__atomic_store_n(&vmtrace_batch_request, ++request, __ATOMIC_RELAXED);
	for (int i = 0; i < 5000 && __atomic_load_n(&answered, __ATOMIC_ACQUIRE) != request; i++)
		usleep(1000);
	assert_int_equal(__atomic_load_n(&answered, __ATOMIC_ACQUIRE), request);
}

/* Everything delivered: the model's keys hold exactly what is alive. */
static void check_live(void)
{
	int64_t want_count[KEYS] = { 0 }, want_bytes[KEYS] = { 0 }, all = 0, bytes = 0;
	uint64_t aged = 0;

	round_trip(); /* a new request: ages too */
	for (unsigned i = 0; i < OBJS; i++)
		if (objs[i].alive) {
			want_count[objs[i].key]++;
			want_bytes[objs[i].key] += (int64_t)objs[i].size;
			all++;
			bytes += (int64_t)objs[i].size;
		}
	struct model m = model_now();

	assert_int_equal(m.bad, 0);
	for (int k = 0; k < KEYS; k++) {
		assert_int_equal(m.live_count[k], want_count[k]);
		assert_int_equal(m.live_bytes[k], want_bytes[k]);
	}
	assert_int_equal(m.net_bytes, bytes);
	assert_true(m.snapshots > 0);
	for (int b = 0; b < 64; b++)
		aged += m.ages[b];
	assert_int_equal(aged, (uint64_t)all);
}

static void *free_odd(void *arg)
{
	(void)arg;
	for (unsigned i = 1; i < 1024; i += 2)
		dies(i);
	return NULL;
}

static int setup(void **state)
{
	(void)state;
	vmtrace__batch_observer = observe;
	/* 2 s: "at once" stays at once on a slow, loaded machine (TSan, CI) */
	__atomic_store_n(&vmtrace_live.temp_ns, 2000000000, __ATOMIC_RELAXED);
	__atomic_store_n(&vmtrace_live.session, 1, __ATOMIC_RELAXED);
	vmtrace_alloc__batch_semaphore = 1;
	vmtrace_free__batch_semaphore = 1;
	vmtrace_live__batch_semaphore = 1;
	return 0;
}

/* Births and deaths on two threads, temporaries and not, ages near zero. */
static void test_threads_and_temporaries(void **state)
{
	pthread_t t;
	uint64_t want_temp[KEYS] = { 0 };

	(void)state;
	for (unsigned i = 0; i < 2048; i++)
		born(i, i % KEYS, 16 + i % 5);
	/* freed at once: temporary */
	for (unsigned i = 1024; i < 1536; i++) {
		want_temp[objs[i].key]++;
		dies(i);
	}
	/* another thread frees the odd ones below 1024 */
	assert_int_equal(pthread_create(&t, NULL, free_odd, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	check_live();
	struct model m = model_now();
	for (int k = 0; k < KEYS; k++)
		assert_true(m.temp_count[k] >= want_temp[k]); /* the other thread's may be too */
	/* every live object is younger than a second */
	for (int b = 30; b < 64; b++)
		assert_int_equal(m.ages[b], 0);

	/* 4096 ticks (over 4 s) later nothing dies young: no temporaries */
	__atomic_fetch_add(&vmtrace_live.tick, 4096, __ATOMIC_RELAXED);
	for (unsigned i = 1536; i < 2048; i++)
		dies(i);
	check_live();
	struct model after = model_now();
	for (int k = 0; k < KEYS; k++)
		assert_int_equal(after.temp_count[k], m.temp_count[k]);
}

/* Deaths past half the ring take the slow path: births still in the ring,
 * then moved out of it. The ages follow the clock. */
static void test_old_deaths(void **state)
{
	(void)state;
	struct model before = model_now();
	for (unsigned i = 2048; i < 3072; i++)
		born(i, i % KEYS, 32);
	__atomic_fetch_add(&vmtrace_live.tick, VMTRACE__AGE_SLOTS / 2 + 100, __ATOMIC_RELAXED); /* still in the ring */
	for (unsigned i = 2048; i < 2304; i++)
		dies(i);
	check_live();
	__atomic_fetch_add(&vmtrace_live.tick, VMTRACE__AGE_SLOTS / 2, __ATOMIC_RELAXED); /* moved out by the round */
	round_trip();
	for (unsigned i = 2304; i < 2560; i++)
		dies(i);
	check_live();
	/* what is left of these was born about a ring ago: 2^36 ns and up */
	struct model m = model_now();
	uint64_t old = 0;
	for (int b = 35; b < 38; b++)
		old += m.ages[b];
	assert_true(old >= 512);
	/* and none of them died young */
	for (int k = 0; k < KEYS; k++)
		assert_int_equal(m.temp_count[k], before.temp_count[k]);
}

/* A new session: the deaths of objects born before it are not counted. */
static void test_new_session(void **state)
{
	(void)state;
	check_live();
	struct model before = model_now();
	__atomic_store_n(&vmtrace_live.session, 2, __ATOMIC_RELAXED);
	for (unsigned i = 2560; i < 2816; i++)
		dies(i);
	born(3500, 0, 100);
	round_trip();
	struct model m = model_now();
	for (int k = 0; k < KEYS; k++)
		assert_int_equal(m.live_count[k], before.live_count[k] + (k == 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_and_temporaries),
		cmocka_unit_test(test_old_deaths),
		cmocka_unit_test(test_new_session),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
