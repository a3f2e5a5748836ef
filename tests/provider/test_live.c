/*
 * test_live: the addresses of the live heap in libvmtrace (provider/core/src/
 * live_batch.c, live_young.c): young objects held in the process and sent
 * as pairs, the oldest handed over when the table is full, what outlives a
 * round handed over by the round, everything at a new request and at a
 * thread's exit, a free on another thread than the allocation paired in the
 * allocating thread's stream, a reused address. Every live batch is
 * replayed here through the provider's test observer by a model of the
 * tracer (consumer/src/runtimes/vmtrace/live.bpf.h: a map of tracked addresses and the live
 * bytes), and what it ends with must be exactly what the test left alive.
 * The semaphore is raised by hand, as a tracer's uprobe would.
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

extern unsigned short vmtrace_live__batch_semaphore;
extern void (*vmtrace__batch_observer)(const void *batch, uint64_t bytes);
void vmtrace__live_round(int exiting, uint64_t request);

#define SLOTS (1u << 19)  /* fake addresses: BASE + 16 * slot */
#define BASE 0x100000ull
#define KEYS 4

static const char *const klass[KEYS] = { "Point", "String", "Array", "Float" };

/* The truth: what the test has alive, per slot. */
static struct { int alive; unsigned key; uint64_t size; } truth[SLOTS];

/* The model tracer, fed by the observer. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct { int tracked; uint64_t klass, size; } model[SLOTS];
static int64_t live_bytes;
static uint64_t ops[8], untracked, freed_bytes[KEYS];

static unsigned key_of(uint64_t k)
{
	for (unsigned i = 0; i < KEYS; i++)
		if (k == (uint64_t)(uintptr_t)klass[i])
			return i;
	fail_msg("a record of an unknown class");
	return 0;
}

static void observe(const void *batch, uint64_t bytes)
{
	const struct vmtrace_batch *h = batch;
	const struct vmtrace_live_record *r = (const void *)(h + 1);

	if (h->kind != VMTRACE_BATCH_LIVE)
		return;
	assert_int_equal(bytes, sizeof(*h) + h->count * sizeof(*r));
	pthread_mutex_lock(&mu);
	for (uint32_t i = 0; i < h->count; i++, r++) {
		uint64_t slot = (r->addr - BASE) / 16;

		assert_true(r->op >= VMTRACE_LIVE_ALLOC && r->op <= VMTRACE_LIVE_NET);
		ops[r->op]++;
		switch (r->op) {
		case VMTRACE_LIVE_ALLOC:
		case VMTRACE_LIVE_TRACK:
			assert_true(slot < SLOTS);
			model[slot].tracked = 1;
			model[slot].klass = r->klass;
			model[slot].size = r->size;
			if (r->op == VMTRACE_LIVE_ALLOC)
				live_bytes += (int64_t)(r->size * r->weight);
			break;
		case VMTRACE_LIVE_PAIR_ALLOC:
			live_bytes += (int64_t)(r->size * r->weight);
			break;
		case VMTRACE_LIVE_PAIR_FREE:
			live_bytes -= (int64_t)(r->size * r->weight);
			/* fall through */
		case VMTRACE_LIVE_HELD_FREE:
			freed_bytes[key_of(r->klass)] += r->size;
			assert_true(r->time_ns >= r->addr); /* freed after its allocation */
			break;
		case VMTRACE_LIVE_NET:
			assert_true((int64_t)r->size >= 0 && (int64_t)r->size >= (int64_t)r->addr);
			live_bytes += (int64_t)r->addr;
			break;
		case VMTRACE_LIVE_FREE:
			if (slot < SLOTS && model[slot].tracked) {
				model[slot].tracked = 0;
				live_bytes -= (int64_t)model[slot].size;
				freed_bytes[key_of(model[slot].klass)] += model[slot].size;
			} else {
				untracked++;
			}
			break;
		}
	}
	pthread_mutex_unlock(&mu);
}

static void reset(void)
{
	memset(truth, 0, sizeof(truth));
	memset(model, 0, sizeof(model));
	live_bytes = 0;
	memset(ops, 0, sizeof(ops));
	untracked = 0;
	memset(freed_bytes, 0, sizeof(freed_bytes));
}

static uint64_t want_freed[KEYS];

static void alloc_slot(uint64_t slot, unsigned key, uint64_t size)
{
	truth[slot].alive = 1;
	truth[slot].key = key;
	truth[slot].size = size;
	vmtrace__alloc_at(klass[key], "m", size, "s.c:1", (const void *)(uintptr_t)(BASE + 16 * slot));
}

static void free_slot(uint64_t slot)
{
	assert_true(truth[slot].alive);
	truth[slot].alive = 0;
	want_freed[truth[slot].key] += truth[slot].size;
	vmtrace__free_at(klass[truth[slot].key], truth[slot].size, (const void *)(uintptr_t)(BASE + 16 * slot));
}

/* Everything delivered: the model holds exactly what the truth has alive. */
static void check_exact(void)
{
	int64_t want_bytes = 0;

	vmtrace__live_round(1, 0);
	pthread_mutex_lock(&mu);
	for (uint64_t s = 0; s < SLOTS; s++) {
		if (truth[s].alive != model[s].tracked)
			fail_msg("slot %llu: alive %d, tracked %d", (unsigned long long)s, truth[s].alive,
				 model[s].tracked);
		if (truth[s].alive) {
			assert_int_equal(model[s].klass, (uint64_t)(uintptr_t)klass[truth[s].key]);
			assert_int_equal(model[s].size, truth[s].size);
			want_bytes += (int64_t)truth[s].size;
		}
	}
	assert_int_equal(live_bytes, want_bytes);
	assert_int_equal(untracked, 0);
	for (int k = 0; k < KEYS; k++)
		assert_int_equal(freed_bytes[k], want_freed[k]);
	pthread_mutex_unlock(&mu);
}

static int setup(void **state)
{
	(void)state;
	vmtrace__batch_observer = observe;
	vmtrace_live__batch_semaphore = 1;
	return 0;
}

static int before_each(void **state)
{
	(void)state;
	vmtrace__live_round(1, 0); /* nothing from the test before */
	reset();
	memset(want_freed, 0, sizeof(want_freed));
	return 0;
}

/* A generational churn: each cycle allocates a young generation and frees
 * most of it at its "collection", in the reverse order of allocation as a
 * sweep of a pushed list does; survivors die some cycles later, a few
 * never. Freed slots are reused. Most frees must be pairs. */
static void test_churn(void **state)
{
	uint64_t next = 0, survivors[4096];
	unsigned nsurv = 0;

	(void)state;
	srand(7);
	for (int cycle = 0; cycle < 40; cycle++) {
		static uint64_t young[20000];
		const uint64_t n = 20000;

		for (uint64_t i = 0; i < n; i++) {
			while (truth[next].alive) /* a slot is reused once freed */
				next = (next + 1) % SLOTS;
			young[i] = next;
			alloc_slot(next, (unsigned)(i % KEYS), 16 + i % 48);
		}
		for (uint64_t i = n; i-- > 0;) {
			if (rand() % 100 == 0 && nsurv < 4096)
				survivors[nsurv++] = young[i];
			else if (cycle < 39 || i % 3)
				free_slot(young[i]);
		}
		if (cycle % 8 == 7) /* the old generation's collection */
			while (nsurv > 16)
				free_slot(survivors[--nsurv]);
	}
	check_exact();
	assert_true(ops[VMTRACE_LIVE_HELD_FREE] > 9 * (ops[VMTRACE_LIVE_FREE] + 1));
	assert_int_equal(ops[VMTRACE_LIVE_ALLOC], 0);
}

static volatile int phase;
static const uint64_t *these;
static uint64_t nthese;

static void *allocate_these(void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < nthese; i++)
		alloc_slot(these[i], 1, 40);
	__atomic_store_n(&phase, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&phase, __ATOMIC_ACQUIRE) != 2)
		usleep(1000);
	return NULL;
}

/* Frees in every order a runtime may use: against allocation order and
 * along it (found beside the last free, their index slots left stale), in
 * random order (found by the index, stale slots among the live ones), on
 * fresh addresses and on the last cycle's (stale slots reused), enough to
 * rebuild the index: every free of a held object is a pair, none is lost
 * or counted twice. */
static void test_free_orders(void **state)
{
	static uint64_t young[20000];
	const uint64_t n = 20000;
	uint64_t fresh = 0, prev = 0, frees = 0;
	pthread_t a;

	(void)state;
	srand(11);
	for (int cycle = 0; cycle < 12; cycle++) {
		uint64_t next = cycle % 3 == 2 ? prev : fresh;

		prev = next;
		for (uint64_t i = 0; i < n; i++) {
			while (truth[next].alive)
				next++;
			young[i] = next++;
			alloc_slot(young[i], (unsigned)(i % KEYS), 16 + i % 32);
		}
		if (next > fresh)
			fresh = next;
		if (cycle % 4 == 2)
			for (uint64_t i = n - 1; i > 0; i--) {
				uint64_t j = (uint64_t)rand() % (i + 1), t = young[i];

				young[i] = young[j];
				young[j] = t;
			}
		for (uint64_t k = 0; k < n; k++) {
			uint64_t i = cycle % 4 == 1 ? k : n - 1 - k; /* survivors: one in 50 */

			if (i % 50) {
				free_slot(young[i]);
				frees++;
			}
		}
	}
	/* the last cycle's addresses, stale here, allocated on another thread
	 * and freed here: not held here, held there */
	these = young + 1;
	nthese = 49;
	phase = 0;
	assert_int_equal(pthread_create(&a, NULL, allocate_these, NULL), 0);
	while (__atomic_load_n(&phase, __ATOMIC_ACQUIRE) != 1)
		usleep(1000);
	for (uint64_t i = 0; i < nthese; i++, frees++)
		free_slot(these[i]);
	__atomic_store_n(&phase, 2, __ATOMIC_RELEASE);
	pthread_join(a, NULL);
	check_exact();
	/* a round may have handed over some, if the machine is slow */
	pthread_mutex_lock(&mu);
	assert_int_equal(ops[VMTRACE_LIVE_HELD_FREE] + ops[VMTRACE_LIVE_FREE], frees);
	assert_true(ops[VMTRACE_LIVE_HELD_FREE] > 9 * ops[VMTRACE_LIVE_FREE]);
	pthread_mutex_unlock(&mu);
}

/* More alive at once than the table holds: the oldest are handed over and
 * their frees come as FREE; nothing is lost or counted twice. */
static void test_overflow(void **state)
{
	const uint64_t n = 300000;

	(void)state;
	for (uint64_t i = 0; i < n; i++)
		alloc_slot(i, (unsigned)(i % KEYS), 32);
	for (uint64_t i = 0; i < n; i += 2)
		free_slot(i);
	pthread_mutex_lock(&mu);
	assert_true(ops[VMTRACE_LIVE_TRACK] > 0);
	pthread_mutex_unlock(&mu);
	check_exact();
	assert_true(ops[VMTRACE_LIVE_FREE] > 0);
}

/* A round hands over what is older than a round, and a new request all. */
static void test_rounds(void **state)
{
	(void)state;
	for (uint64_t i = 0; i < 1000; i++)
		alloc_slot(i, 0, 24);
	vmtrace__live_round(0, 0);
	pthread_mutex_lock(&mu);
	assert_int_equal(ops[VMTRACE_LIVE_TRACK], 0); /* young: still held */
	assert_int_equal(live_bytes, 1000 * 24);      /* but counted */
	pthread_mutex_unlock(&mu);
	usleep(250 * 1000);
	for (uint64_t i = 1000; i < 1500; i++)
		alloc_slot(i, 1, 24);
	vmtrace__live_round(0, 0);
	pthread_mutex_lock(&mu);
	assert_int_equal(ops[VMTRACE_LIVE_TRACK], 1000); /* the older ones */
	pthread_mutex_unlock(&mu);
	vmtrace__live_round(0, 42);
	pthread_mutex_lock(&mu);
	assert_int_equal(ops[VMTRACE_LIVE_TRACK], 1500);
	pthread_mutex_unlock(&mu);
	for (uint64_t i = 0; i < 1500; i += 3)
		free_slot(i);
	check_exact();
}

/* The same address allocated twice without a free between: the second
 * replaces the first, as the tracer's map would. */
static void test_reused_address(void **state)
{
	(void)state;
	alloc_slot(5, 0, 40);
	alloc_slot(5, 2, 48);
	pthread_mutex_lock(&mu);
	live_bytes -= 40; /* the first one's bytes stay in the tracer's sum */
	pthread_mutex_unlock(&mu);
	check_exact();
	free_slot(5);
	check_exact();
}

static void *allocator(void *arg)
{
	uint64_t n = (uint64_t)(uintptr_t)arg;

	for (uint64_t i = 0; i < n; i++)
		alloc_slot(i, (unsigned)(i % KEYS), 8 + i % 100);
	__atomic_store_n(&phase, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&phase, __ATOMIC_ACQUIRE) != 2)
		usleep(1000);
	return NULL;
}

/* Objects allocated on one thread and freed on another: found in the
 * allocating thread's table, so they are pairs, not untracked frees. */
static void test_cross_thread(void **state)
{
	const uint64_t n = 50000;
	pthread_t a;

	(void)state;
	phase = 0;
	assert_int_equal(pthread_create(&a, NULL, allocator, (void *)(uintptr_t)n), 0);
	while (__atomic_load_n(&phase, __ATOMIC_ACQUIRE) != 1)
		usleep(1000);
	for (uint64_t i = 0; i < n; i++)
		if (i % 10)
			free_slot(i);
	__atomic_store_n(&phase, 2, __ATOMIC_RELEASE);
	pthread_join(a, NULL);
	check_exact();
	assert_int_equal(ops[VMTRACE_LIVE_HELD_FREE], n - n / 10);
	assert_int_equal(ops[VMTRACE_LIVE_FREE], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_churn, before_each),
		cmocka_unit_test_setup(test_free_orders, before_each),
		cmocka_unit_test_setup(test_overflow, before_each),
		cmocka_unit_test_setup(test_rounds, before_each),
		cmocka_unit_test_setup(test_reused_address, before_each),
		cmocka_unit_test_setup(test_cross_thread, before_each),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
