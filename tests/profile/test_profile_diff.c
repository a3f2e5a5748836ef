/*
 * test_profile_diff.c: an interval is the later collection minus the
 * earlier one, row by row, and intervals add back up to the whole.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "profile/profile_diff.h"

static const struct vt_alloc *find_alloc(const struct vt_profile *p, const char *k, const char *m)
{
	for (size_t i = 0; i < p->allocs.n; i++)
		if (!strcmp(p->allocs.v[i].klass, k) && !strcmp(p->allocs.v[i].method, m))
			return &p->allocs.v[i];
	return NULL;
}

static void test_interval(void **state)
{
	struct vt_profile early, late, iv;
	struct vt_gc_pause g = { .kind = 0, .duration_ns = 100 };
	uint64_t hist[VT_HIST_BUCKETS] = { 0 };

	(void)state;
	vt_profile_init(&early);
	vt_profile_init(&late);
	vt_profile_set_meta(&early, "vmtrace", "p", "t", 7);
	vt_profile_set_meta(&late, "vmtrace", "p", "t", 7);
	early.start_unix_ns = late.start_unix_ns = 1000000000000ull;
	early.duration_s = 2;
	late.duration_s = 5;
	/* rows in another order in the later collection, as map reads give them */
	vt_profile_add_alloc(&early, "A", "m", "", 10, 100, 10);
	vt_profile_add_alloc(&early, "B", "m", "", 5, 50, 5);
	vt_profile_add_alloc(&late, "C", "m", "", 3, 30, 3);
	vt_profile_add_alloc(&late, "B", "m", "", 5, 50, 5);
	vt_profile_add_alloc(&late, "A", "m", "", 12, 120, 12);
	vt_profile_add_lost(&early, "x full", 1);
	vt_profile_add_lost(&late, "x full", 1);
	vt_profile_add_gc_pause(&early, &g);
	vt_profile_add_gc_pause(&late, &g);
	g.duration_ns = 300;
	vt_profile_add_gc_pause(&late, &g);
	/* the collection's pauses since the previous one: the interval's list */
	vt_gc_pauses_keep(&late.gc_fresh, 0, &g);
	early.gc_collections[0] = 1;
	late.gc_collections[0] = 2;
	hist[10] = 2;
	vt_profile_add_signal(&early, 12, 2, 2, 3000, 2000, hist);
	hist[10] = 3;
	hist[4] = 1;
	vt_profile_add_signal(&late, 12, 4, 4, 3000 + 1500 + 20, 2000, hist);

	assert_int_equal(vt_profile_diff(&late, &early, &iv), 0);
	assert_int_equal(iv.allocs.n, 2); /* B did nothing: left out */
	assert_int_equal(find_alloc(&iv, "A", "m")->count, 2);
	assert_int_equal(find_alloc(&iv, "A", "m")->bytes, 20);
	assert_int_equal(find_alloc(&iv, "C", "m")->count, 3);
	assert_null(find_alloc(&iv, "B", "m"));
	assert_int_equal(iv.lost.n, 1); /* loss counters stay, zeros too */
	assert_int_equal(iv.lost.v[0].count, 0);
	assert_int_equal(iv.gc_pauses.n, 1);
	assert_int_equal(iv.gc_pauses.v[0].duration_ns, 300);
	assert_int_equal(iv.gc_collections[0], 1);
	assert_int_equal(iv.signals.n, 1);
	assert_int_equal(iv.signals.v[0].received, 2);
	assert_int_equal(iv.signals.v[0].latency_total_ns, 1520);
	/* no new maximum: the top of the interval's highest bucket (2^10..2^11-1) */
	assert_int_equal(iv.signals.v[0].latency_max_ns, 2000 < 2047 ? 2000 : 2047);
	assert_int_equal(iv.signals.v[0].latency_hist[10], 1);
	assert_int_equal(iv.signals.v[0].latency_hist[4], 1);
	assert_true(iv.duration_s == 3);
	assert_int_equal(iv.start_unix_ns, 1000000000000ull + 2000000000ull);
	assert_string_equal(iv.runtime, "vmtrace");
	assert_int_equal(iv.pid, 7);
	vt_profile_free(&iv);

	/* from an empty start, the interval is the whole */
	vt_profile_free(&early);
	vt_profile_init(&early);
	early.start_unix_ns = late.start_unix_ns;
	late.gc_fresh.n = 0; /* the first collection: every pause is fresh */
	for (size_t i = 0; i < late.gc_pauses.n; i++)
		vt_gc_pauses_keep(&late.gc_fresh, 0, &late.gc_pauses.v[i]);
	assert_int_equal(vt_profile_diff(&late, &early, &iv), 0);
	assert_int_equal(iv.allocs.n, 3);
	assert_int_equal(iv.gc_pauses.n, 2);
	assert_int_equal(iv.signals.v[0].latency_max_ns, 2000);
	assert_int_equal(iv.start_unix_ns, late.start_unix_ns);
	vt_profile_free(&iv);
	vt_profile_free(&early);
	vt_profile_free(&late);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interval),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
