/*
 * test_metrics: label values of /metrics (consumer/src/export/metrics.c)
 * stay well-formed UTF-8 whatever a runtime names its classes: a class
 * name from a Latin-1 source file gets U+FFFD for its bad byte, so
 * Prometheus keeps the target (one invalid label value makes it drop the
 * whole scrape), in both exposition formats. The GC pause histogram comes
 * from the log2 buckets every pause is counted in: cumulative, +Inf equal
 * to _count, whatever the pause list keeps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "report/report_metrics.h"
#include "report/report_fmt.h"

static bool valid_utf8(const char *s, size_t len)
{
	for (size_t i = 0; i < len;) {
		int n = vt_utf8_len((const unsigned char *)s + i);

		if (!n || i + (size_t)n > len)
			return false;
		i += (size_t)n;
	}
	return true;
}

static void test_latin1_class(void **state)
{
	struct vt_profile p;

	(void)state;
	vt_profile_init(&p);
	assert_int_equal(vt_profile_set_meta(&p, "php", "object__create", "php x.php", 42), 0);
	p.has_allocations = true;
	/* "Café" in Latin-1, "Наука" in UTF-8, and a quote and backslash */
	assert_int_equal(vt_profile_add_alloc(&p, "Caf\xe9", "run", "x.php:3", 5, 200, 5), 0);
	assert_int_equal(vt_profile_add_alloc(&p, "\xd0\x9d\xd0\xb0\xd1\x83\xd0\xba\xd0\xb0", "run",
					      "x.php:4", 2, 80, 2), 0);
	assert_int_equal(vt_profile_add_alloc(&p, "A\"B\\C", "r\xff\xfe", "x.php:5", 1, 40, 1), 0);
	for (int om = 0; om < 2; om++) {
		struct vt_metrics *m = vt_metrics_new(100, "php", false);
		char *buf = NULL;
		size_t len = 0;

		assert_non_null(m);
		assert_int_equal(vt_metrics_render(m, &p, om, &buf, &len), 0);
		assert_true(valid_utf8(buf, len));
		assert_non_null(strstr(buf, "class=\"Caf\xef\xbf\xbd\""));
		assert_non_null(strstr(buf, "class=\"\xd0\x9d\xd0\xb0\xd1\x83\xd0\xba\xd0\xb0\""));
		assert_non_null(strstr(buf, "class=\"A\\\"B\\\\C\""));
		assert_non_null(strstr(buf, "\"r\xef\xbf\xbd\xef\xbf\xbd\""));
		free(buf);
		vt_metrics_free(m);
	}
	vt_profile_free(&p);
}

/* The value of the line "prefix VALUE", or -1. */
static long long value_of(const char *buf, const char *prefix)
{
	for (const char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, prefix, strlen(prefix)) && l[strlen(prefix)] == ' ')
			return atoll(l + strlen(prefix) + 1);
	return -1;
}

static void test_pause_buckets(void **state)
{
	static const uint64_t pauses_ns[] = { 1500, 5000, 5000, 900000, 3000000, 20000000 };
	struct vt_profile p;
	struct vt_metrics *m;
	char *buf = NULL;
	size_t len = 0;

	(void)state;
	vt_profile_init(&p);
	assert_int_equal(vt_profile_set_meta(&p, "vmtrace", "gc__begin", "x", 1), 0);
	p.gc_collections[0] = 6;
	/* counted as they arrive; the list keeps none of them (--gc-pauses 0) */
	for (size_t i = 0; i < sizeof(pauses_ns) / sizeof(pauses_ns[0]); i++) {
		struct vt_gc_pause g = { .kind = 0, .duration_ns = pauses_ns[i] };

		vt_gc_stats_add(&p.gc_stats[0], &g);
	}
	m = vt_metrics_new(10, "x", false);
	assert_non_null(m);
	assert_int_equal(vt_metrics_render(m, &p, false, &buf, &len), 0);
	/* le 2 us: 1.5 us; 8 us: and the two of 5 us; 1.024 ms: and 0.9 ms;
	 * 4.096 ms: and 3 ms; 32.768 ms: all six */
	assert_int_equal(value_of(buf, "vmtrace_gc_pause_seconds_bucket{runtime=\"vmtrace\",pid=\"1\",comm=\"x\",kind=\"minor\",le=\"2e-06\"}"), 1);
	assert_int_equal(value_of(buf, "vmtrace_gc_pause_seconds_bucket{runtime=\"vmtrace\",pid=\"1\",comm=\"x\",kind=\"minor\",le=\"8e-06\"}"), 3);
	assert_int_equal(value_of(buf, "vmtrace_gc_pause_seconds_bucket{runtime=\"vmtrace\",pid=\"1\",comm=\"x\",kind=\"minor\",le=\"0.001024\"}"), 4);
	assert_int_equal(value_of(buf, "vmtrace_gc_pause_seconds_bucket{runtime=\"vmtrace\",pid=\"1\",comm=\"x\",kind=\"minor\",le=\"0.004096\"}"), 5);
	assert_int_equal(value_of(buf, "vmtrace_gc_pause_seconds_bucket{runtime=\"vmtrace\",pid=\"1\",comm=\"x\",kind=\"minor\",le=\"0.032768\"}"), 6);
	assert_int_equal(value_of(buf, "vmtrace_gc_pause_seconds_bucket{runtime=\"vmtrace\",pid=\"1\",comm=\"x\",kind=\"minor\",le=\"+Inf\"}"), 6);
	assert_int_equal(value_of(buf, "vmtrace_gc_pause_seconds_count{runtime=\"vmtrace\",pid=\"1\",comm=\"x\",kind=\"minor\"}"), 6);
	free(buf);
	vt_metrics_free(m);
	vt_profile_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_latin1_class),
		cmocka_unit_test(test_pause_buckets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
