/* The recording model: adders copy their strings and merge same keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profile/profile.h"
#include "report/report_model.h"

static void test_init_defaults(void **state)
{
	struct vt_profile p;

	(void)state;
	memset(&p, 0xab, sizeof(p));
	vt_profile_init(&p);
	assert_true(p.has_allocations);
	assert_null(p.runtime);
	assert_int_equal(p.allocs.n, 0);
	assert_int_equal(p.sample_period, 0);
	vt_profile_free(&p);
	vt_profile_free(NULL);
}

static void test_alloc_merges_same_key(void **state)
{
	struct vt_profile p;
	char klass[] = "Point";

	(void)state;
	vt_profile_init(&p);
	assert_int_equal(vt_profile_add_alloc(&p, klass, "Geo#move", "a.rb:1", 2, 64, 2), 0);
	/* the profile holds its own copy, not the caller's buffer */
	klass[0] = 'X';
	assert_int_equal(vt_profile_add_alloc(&p, "Point", "Geo#move", "a.rb:1", 3, 96, 1), 0);
	assert_int_equal(vt_profile_add_alloc(&p, "Point", "Geo#move", "a.rb:2", 1, 32, 1), 0);
	assert_int_equal(vt_profile_add_alloc(&p, "Point", "Geo#move", NULL, 1, 8, 1), 0);
	assert_int_equal(vt_profile_add_alloc(&p, "Point", "Geo#move", "", 1, 8, 1), 0);
	/* ("ab","c") and ("a","bc") are different keys */
	assert_int_equal(vt_profile_add_alloc(&p, "ab", "c", "", 1, 1, 1), 0);
	assert_int_equal(vt_profile_add_alloc(&p, "a", "bc", "", 1, 1, 1), 0);

	assert_int_equal(p.allocs.n, 5);
	assert_string_equal(p.allocs.v[0].klass, "Point");
	assert_int_equal(p.allocs.v[0].count, 5);
	assert_int_equal(p.allocs.v[0].bytes, 160);
	assert_int_equal(p.allocs.v[0].samples, 3);
	assert_string_equal(p.allocs.v[1].site, "a.rb:2");
	assert_string_equal(p.allocs.v[2].site, "");
	assert_int_equal(p.allocs.v[2].count, 2); /* NULL site is "" */
	assert_string_equal(p.allocs.v[3].klass, "ab");
	assert_string_equal(p.allocs.v[4].klass, "a");
	vt_profile_free(&p);
}

/* Enough keys to rebuild the index several times; every key is still found. */
static void test_many_keys_merge(void **state)
{
	enum { N = 20000 };
	struct vt_profile p;
	char k[32], m[32];

	(void)state;
	vt_profile_init(&p);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < N; i++) {
			snprintf(k, sizeof(k), "C%d", i % 97);
			snprintf(m, sizeof(m), "m%d", i);
			assert_int_equal(vt_profile_add_alloc(&p, k, m, "", 1, (uint64_t)i, 1), 0);
			assert_int_equal(vt_profile_add_call(&p, m, k, 2), 0);
		}
	}
	assert_int_equal(p.allocs.n, N);
	assert_int_equal(p.calls.n, N);
	for (int i = 0; i < N; i++) {
		snprintf(m, sizeof(m), "m%d", i);
		assert_string_equal(p.allocs.v[i].method, m);
		assert_int_equal(p.allocs.v[i].count, 2);
		assert_int_equal(p.allocs.v[i].bytes, 2 * (uint64_t)i);
		assert_int_equal(p.calls.v[i].count, 4);
	}
	vt_profile_free(&p);
}

static void test_keyed_merges(void **state)
{
	struct vt_profile p;

	(void)state;
	vt_profile_init(&p);
	assert_int_equal(vt_profile_add_method_cache_reset(&p, "Point", "translate", 1), 0);
	assert_int_equal(vt_profile_add_method_cache_reset(&p, "Point", NULL, 1), 0);
	assert_int_equal(vt_profile_add_method_cache_reset(&p, "Point", "translate", 2), 0);
	assert_int_equal(vt_profile_add_method_cache_reset(&p, "Point", "", 4), 0);
	assert_int_equal(p.method_cache_resets.n, 2);
	assert_int_equal(p.method_cache_resets.v[0].count, 3);
	assert_string_equal(p.method_cache_resets.v[1].name2, "");
	assert_int_equal(p.method_cache_resets.v[1].count, 5);

	assert_int_equal(vt_profile_add_constant_cache_reset(&p, "LIMIT", 1), 0);
	assert_int_equal(vt_profile_add_constant_cache_reset(&p, "LIMIT", 3), 0);
	assert_int_equal(vt_profile_add_constant_cache_reset(&p, "MAX", 1), 0);
	assert_int_equal(p.constant_cache_resets.n, 2);
	assert_int_equal(p.constant_cache_resets.v[0].count, 4);
	assert_string_equal(p.constant_cache_resets.v[0].name2, "");

	assert_int_equal(vt_profile_add_global_serial_inc(&p, "method redefined", 5), 0);
	assert_int_equal(vt_profile_add_global_serial_inc(&p, "method redefined", 2), 0);
	assert_int_equal(p.global_serial_incs.n, 1);
	assert_int_equal(p.global_serial_incs.v[0].count, 7);

	assert_int_equal(vt_profile_add_call(&p, "f", "a.py", 1), 0);
	assert_int_equal(vt_profile_add_call(&p, "f", "b.py", 1), 0);
	assert_int_equal(vt_profile_add_call(&p, "f", "a.py", 1), 0);
	assert_int_equal(p.calls.n, 2);
	assert_int_equal(p.calls.v[0].count, 2);

	assert_int_equal(vt_profile_add_lost(&p, "alloc map full", 0), 0);
	assert_int_equal(vt_profile_add_lost(&p, "unreadable string", 3), 0);
	assert_int_equal(vt_profile_add_lost(&p, "alloc map full", 2), 0);
	assert_int_equal(p.lost.n, 2);
	assert_int_equal(p.lost.v[0].count, 2);

	assert_int_equal(vt_profile_add_free(&p, "Point", 2, 64), 0);
	assert_int_equal(vt_profile_add_free(&p, "Point", 1, 32), 0);
	assert_int_equal(p.frees.n, 1);
	assert_int_equal(p.frees.v[0].count, 3);
	assert_int_equal(p.frees.v[0].bytes, 96);
	vt_profile_free(&p);
}

static void test_signal_merges(void **state)
{
	uint64_t h1[VT_HIST_BUCKETS] = { 0 }, h2[VT_HIST_BUCKETS] = { 0 };
	struct vt_profile p;

	(void)state;
	h1[10] = 2;
	h2[10] = 1;
	h2[12] = 1;
	vt_profile_init(&p);
	assert_int_equal(vt_profile_add_signal(&p, 12, 2, 2, 3000, 2000, h1), 0);
	assert_int_equal(vt_profile_add_signal(&p, 10, 1, 0, 0, 0, NULL), 0);
	assert_int_equal(vt_profile_add_signal(&p, 12, 2, 2, 7000, 5000, h2), 0);
	assert_int_equal(p.signals.n, 2);
	assert_int_equal(p.signals.v[0].signo, 12);
	assert_int_equal(p.signals.v[0].received, 4);
	assert_int_equal(p.signals.v[0].handled, 4);
	assert_int_equal(p.signals.v[0].latency_total_ns, 10000);
	assert_int_equal(p.signals.v[0].latency_max_ns, 5000);
	assert_int_equal(p.signals.v[0].latency_hist[10], 3);
	assert_int_equal(p.signals.v[0].latency_hist[12], 1);
	vt_profile_free(&p);
}

static void test_gc_pauses_and_meta(void **state)
{
	struct vt_gc_pause g = { .kind = 1, .duration_ns = 5, .heap_bytes = 6, .allocated_bytes = 7 };
	struct vt_profile p;

	(void)state;
	vt_profile_init(&p);
	assert_int_equal(vt_profile_add_gc_pause(&p, &g), 0);
	assert_int_equal(vt_profile_add_gc_pause(&p, &g), 0);
	assert_int_equal(p.gc_pauses.n, 2); /* pauses are a list, never merged */
	assert_int_equal(vt_profile_set_meta(&p, "vmtrace", "object__alloc", "demovm", 42), 0);
	/* the old strings may be passed back in */
	assert_int_equal(vt_profile_set_meta(&p, p.runtime, "a,b", p.target, 43), 0);
	assert_string_equal(p.runtime, "vmtrace");
	assert_string_equal(p.probes, "a,b");
	assert_string_equal(p.target, "demovm");
	assert_int_equal(p.pid, 43);
	assert_int_equal(vt_profile_set_meta(&p, NULL, NULL, NULL, 0), 0);
	assert_string_equal(p.runtime, "");
	vt_profile_free(&p);
}

#define BOUNDED_N 5000
static uint64_t bounded_ns[BOUNDED_N];

/* longest first; of equal ones the earlier first */
static int by_length(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	if (bounded_ns[x] != bounded_ns[y])
		return bounded_ns[x] < bounded_ns[y] ? 1 : -1;
	return x < y ? -1 : x > y;
}

static int by_start(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* A bounded list: the summary stays exact, the list holds the longest (of
 * equal ones the earlier) in the order they came, percentiles become
 * estimates from the histogram. */
static void test_gc_pauses_bounded(void **state)
{
	struct vt_pause_stats s;
	struct vt_profile p;
	uint64_t total = 0, max = 0;
	int64_t want[BOUNDED_N];

	(void)state;
	vt_profile_init(&p);
	p.gc_pauses_limit = 100;
	for (uint64_t i = 0; i < BOUNDED_N; i++) {
		/* about four pauses of each length: ties at the bound */
		struct vt_gc_pause g = { .kind = 0, .duration_ns = (i * 7919) % 1230 * 1000 + 1,
					 .at_ns = (int64_t)i };

		bounded_ns[i] = g.duration_ns;
		want[i] = (int64_t)i;

		total += g.duration_ns;
		if (g.duration_ns > max)
			max = g.duration_ns;
		assert_int_equal(vt_profile_add_gc_pause(&p, &g), 0);
	}
	assert_int_equal(p.gc_pauses.n, 100);
	assert_true(p.gc_pauses.cap <= 100);
	/* the 100 longest, ties to the earlier, back in the order they came */
	qsort(want, BOUNDED_N, sizeof(*want), by_length);
	assert_true(bounded_ns[want[99]] == bounded_ns[want[100]]); /* a tie at the bound */
	qsort(want, 100, sizeof(*want), by_start);
	for (size_t i = 0; i < 100; i++) {
		assert_int_equal(p.gc_pauses.v[i].at_ns, want[i]);
		assert_int_equal(p.gc_pauses.v[i].duration_ns, bounded_ns[want[i]]);
	}
	assert_int_equal(p.gc_stats[0].count, 5000);
	assert_int_equal(p.gc_stats[0].total_ns, total);
	assert_int_equal(p.gc_stats[0].max_ns, max);
	assert_int_equal(vt_gc_not_kept(&p, 0), 4900);
	assert_int_equal(vt_pause_stats(&p, 0, &s), 0);
	assert_int_equal(s.pauses, 5000);
	assert_int_equal(s.total_ns, total);
	assert_int_equal(s.max_ns, max);
	assert_int_equal(s.not_kept, 4900);
	assert_true(s.estimated);
	assert_true(s.p50_ns <= s.p99_ns && s.p99_ns <= max);
	vt_profile_free(&p);
	/* a complete list: exact */
	vt_profile_init(&p);
	p.gc_pauses_limit = 100;
	for (uint64_t i = 1; i <= 100; i++) {
		struct vt_gc_pause g = { .kind = 1, .duration_ns = i * 1000 };

		assert_int_equal(vt_profile_add_gc_pause(&p, &g), 0);
	}
	assert_int_equal(vt_pause_stats(&p, -1, &s), 0);
	assert_false(s.estimated);
	assert_int_equal(s.p50_ns, 50000);
	assert_int_equal(s.p99_ns, 99000);
	vt_profile_free(&p);
}

/* Pauses of two threads end out of their order of start: they are listed
 * by start, equal starts in the order they came. */
static void test_gc_pauses_by_start(void **state)
{
	struct vt_gc_pauses l = { 0 };
	const int64_t at[] = { 50, 10, 30, 30, 20 };
	const uint64_t ns[] = { 1, 2, 3, 4, 5 };
	const uint64_t want[] = { 2, 5, 3, 4, 1 };

	(void)state;
	for (size_t i = 0; i < 5; i++) {
		struct vt_gc_pause g = { .duration_ns = ns[i], .at_ns = at[i], .tid = 7 };

		assert_int_equal(vt_gc_pauses_keep(&l, 0, &g), 0);
	}
	vt_gc_pauses_by_start(&l);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(l.v[i].duration_ns, want[i]);
	free(l.v);
}

static void test_gc_kind_names(void **state)
{
	struct vt_profile p;

	(void)state;
	vt_profile_init(&p);
	assert_string_equal(vt_gc_kind_name(&p, 0), "minor");
	assert_string_equal(vt_gc_kind_name(&p, 1), "major");
	assert_string_equal(vt_gc_kind_name(&p, 7), "unknown");
	assert_int_equal(vt_profile_set_meta(&p, "python", "", "", 0), 0);
	assert_string_equal(vt_gc_kind_name(&p, 2), "gen2");
	assert_int_equal(vt_profile_set_meta(&p, "ruby", "", "", 0), 0);
	assert_string_equal(vt_gc_kind_name(&p, 1), "sweep");
	assert_string_equal(vt_gc_kind_name(NULL, 0), "minor");
	vt_profile_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_defaults),
		cmocka_unit_test(test_alloc_merges_same_key),
		cmocka_unit_test(test_many_keys_merge),
		cmocka_unit_test(test_keyed_merges),
		cmocka_unit_test(test_signal_merges),
		cmocka_unit_test(test_gc_pauses_and_meta),
		cmocka_unit_test(test_gc_pauses_bounded),
		cmocka_unit_test(test_gc_pauses_by_start),
		cmocka_unit_test(test_gc_kind_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
