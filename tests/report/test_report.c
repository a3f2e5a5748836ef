/* Reports: grouping, sorting, top-N, percentiles, escaping, and the exact
 * text of every format for small profiles. */
#include <errno.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profile/profile.h"
#include "report/report.h"

#include "report_capture.h"

static char *render(const struct vt_profile *p, enum vt_format fmt, enum vt_group by,
		    enum vt_sort sort, size_t top)
{
	struct vt_report_opts o = { .format = fmt, .by = by, .sort = sort, .top = top };
	struct capture c;

	assert_int_equal(vt_report_print(capture_open(&c), p, &o), 0);
	return capture_close(&c);
}

static void assert_render(const struct vt_profile *p, enum vt_format fmt, enum vt_group by,
			  enum vt_sort sort, size_t top, const char *expected)
{
	char *got = render(p, fmt, by, sort, top);

	if (strcmp(got, expected)) {
		print_error("--- expected\n%s--- got\n%s---\n", expected, got);
		free(got);
		fail();
	}
	free(got);
}

/* ---- profiles ---- */

/* Sites split rows that --by class,method merges; String ties Point on
 * count within Geometry#translate so names break the tie. */
static void small_profile(struct vt_profile *p)
{
	uint64_t hist[VT_HIST_BUCKETS] = { 0 };
	struct vt_gc_pause g[] = {
		{ .kind = 0, .duration_ns = 1500, .heap_bytes = 1 << 20, .allocated_bytes = 4096 },
		{ .kind = 0, .duration_ns = 2500, .heap_bytes = 1 << 20, .allocated_bytes = 8192 },
		{ .kind = 1, .duration_ns = 2000000, .heap_bytes = 2 << 20, .allocated_bytes = 16384 },
	};

	vt_profile_init(p);
	assert_int_equal(vt_profile_set_meta(p, "vmtrace", "object__alloc,gc__begin,gc__end",
					     "demovm --wait", 4242), 0);
	p->duration_s = 2.0;
	p->last_serial = 7;
	assert_int_equal(vt_profile_add_alloc(p, "Point", "Geometry#translate", "geo.c:10", 40, 1280, 40), 0);
	assert_int_equal(vt_profile_add_alloc(p, "Point", "Geometry#translate", "geo.c:12", 10, 320, 10), 0);
	assert_int_equal(vt_profile_add_alloc(p, "String", "Geometry#translate", "geo.c:11", 50, 6400, 50), 0);
	assert_int_equal(vt_profile_add_alloc(p, "Point", "Shape#new", "", 100, 3200, 100), 0);
	p->gc_collections[0] = 2;
	p->gc_collections[1] = 1;
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(vt_profile_add_gc_pause(p, &g[i]), 0);
	assert_int_equal(vt_profile_add_method_cache_reset(p, "Point", "translate", 3), 0);
	assert_int_equal(vt_profile_add_method_cache_reset(p, "Shape", NULL, 1), 0);
	assert_int_equal(vt_profile_add_constant_cache_reset(p, "LIMIT", 4), 0);
	assert_int_equal(vt_profile_add_global_serial_inc(p, "method redefined", 7), 0);
	hist[13] = 4;
	hist[14] = 1;
	assert_int_equal(vt_profile_add_signal(p, 12, 5, 5, 50000, 20000, hist), 0);
	assert_int_equal(vt_profile_add_lost(p, "alloc map full", 0), 0);
	assert_int_equal(vt_profile_add_lost(p, "unreadable string", 0), 0);
}

/* ---- parsing ---- */

static void test_parse(void **state)
{
	enum vt_format f = VT_FORMAT_TEXT;
	enum vt_group g = VT_BY_CLASS_METHOD;
	enum vt_sort s = VT_SORT_COUNT;

	(void)state;
	assert_int_equal(vt_parse_format("json", &f), 0);
	assert_int_equal(f, VT_FORMAT_JSON);
	assert_int_equal(vt_parse_format("folded", &f), 0);
	assert_int_equal(f, VT_FORMAT_FOLDED);
	assert_int_equal(vt_parse_format("JSON", &f), -EINVAL);
	assert_int_equal(vt_parse_format("", &f), -EINVAL);
	assert_int_equal(vt_parse_format(NULL, &f), -EINVAL);
	assert_int_equal(f, VT_FORMAT_FOLDED); /* untouched on error */
	assert_int_equal(vt_parse_group("class,method", &g), 0);
	assert_int_equal(g, VT_BY_CLASS_METHOD);
	assert_int_equal(vt_parse_group("site", &g), 0);
	assert_int_equal(g, VT_BY_SITE);
	assert_int_equal(vt_parse_group("method,class", &g), -EINVAL);
	assert_int_equal(vt_parse_sort("bytes", &s), 0);
	assert_int_equal(s, VT_SORT_BYTES);
	assert_int_equal(vt_parse_sort("size", &s), -EINVAL);
	assert_string_equal(vt_group_name(VT_BY_CLASS_METHOD), "class,method");
	assert_string_equal(vt_format_name(VT_FORMAT_CSV), "csv");
	assert_string_equal(vt_sort_name(VT_SORT_BYTES), "bytes");
}

/* ---- grouping, sorting, top ---- */

static void test_grouping(void **state)
{
	struct vt_report_opts o = { .format = VT_FORMAT_TEXT, .by = VT_BY_CLASS_METHOD, .sort = VT_SORT_COUNT, .top = 0 };
	struct vt_alloc_table t;
	struct vt_profile p;

	(void)state;
	small_profile(&p);
	assert_int_equal(vt_alloc_table_build(&p, &o, &t), 0);
	assert_int_equal(t.total_rows, 3);
	assert_int_equal(t.n, 3);
	assert_int_equal(t.total_count, 200);
	assert_int_equal(t.total_bytes, 11200);
	/* Point/Geometry#translate merges its two sites: 50, ties String's 50 */
	assert_string_equal(t.rows[0].klass, "Point");
	assert_string_equal(t.rows[0].method, "Shape#new");
	assert_null(t.rows[0].site);
	assert_int_equal(t.rows[1].count, 50);
	assert_int_equal(t.rows[1].bytes, 6400); /* tie on count: more bytes first */
	assert_string_equal(t.rows[1].klass, "String");
	assert_int_equal(t.rows[2].bytes, 1600);
	vt_alloc_table_free(&t);

	o.by = VT_BY_CLASS;
	assert_int_equal(vt_alloc_table_build(&p, &o, &t), 0);
	assert_int_equal(t.n, 2);
	assert_string_equal(t.rows[0].klass, "Point");
	assert_null(t.rows[0].method);
	assert_int_equal(t.rows[0].count, 150);
	assert_int_equal(t.rows[0].bytes, 4800);
	assert_int_equal(t.rows[0].samples, 150);
	vt_alloc_table_free(&t);

	o.by = VT_BY_METHOD;
	assert_int_equal(vt_alloc_table_build(&p, &o, &t), 0);
	assert_int_equal(t.n, 2);
	assert_null(t.rows[0].klass);
	assert_string_equal(t.rows[0].method, "Geometry#translate");
	assert_int_equal(t.rows[0].count, 100);
	assert_int_equal(t.rows[1].count, 100);
	assert_string_equal(t.rows[1].method, "Shape#new"); /* tie: more bytes first */
	vt_alloc_table_free(&t);

	o.by = VT_BY_SITE;
	assert_int_equal(vt_alloc_table_build(&p, &o, &t), 0);
	assert_int_equal(t.n, 4);
	assert_string_equal(t.rows[3].site, "geo.c:12");
	assert_string_equal(t.rows[0].site, "");
	vt_alloc_table_free(&t);
	vt_profile_free(&p);
}

static void test_sort_and_top(void **state)
{
	struct vt_report_opts o = { .format = VT_FORMAT_TEXT, .by = VT_BY_CLASS_METHOD, .sort = VT_SORT_BYTES, .top = 2 };
	struct vt_alloc_table t;
	struct vt_profile p;

	(void)state;
	small_profile(&p);
	assert_int_equal(vt_alloc_table_build(&p, &o, &t), 0);
	assert_int_equal(t.total_rows, 3);
	assert_int_equal(t.n, 2);
	assert_string_equal(t.rows[0].klass, "String");
	assert_int_equal(t.rows[0].bytes, 6400);
	assert_string_equal(t.rows[1].method, "Shape#new");
	/* the totals cover the rows --top leaves out */
	assert_int_equal(t.total_bytes, 11200);
	vt_alloc_table_free(&t);

	o.top = 10;
	assert_int_equal(vt_alloc_table_build(&p, &o, &t), 0);
	assert_int_equal(t.n, 3);
	vt_alloc_table_free(&t);
	vt_profile_free(&p);

	/* equal numbers sort by name, so output never depends on map order */
	vt_profile_init(&p);
	assert_int_equal(vt_profile_add_alloc(&p, "B", "m", "", 1, 1, 1), 0);
	assert_int_equal(vt_profile_add_alloc(&p, "A", "n", "", 1, 1, 1), 0);
	assert_int_equal(vt_profile_add_alloc(&p, "A", "m", "", 1, 1, 1), 0);
	o.top = 0;
	assert_int_equal(vt_alloc_table_build(&p, &o, &t), 0);
	assert_string_equal(t.rows[0].klass, "A");
	assert_string_equal(t.rows[0].method, "m");
	assert_string_equal(t.rows[1].method, "n");
	assert_string_equal(t.rows[2].klass, "B");
	vt_alloc_table_free(&t);
	vt_profile_free(&p);

	/* an empty profile is an empty table */
	vt_profile_init(&p);
	assert_int_equal(vt_alloc_table_build(&p, &o, &t), 0);
	assert_int_equal(t.n, 0);
	assert_null(t.rows);
	vt_alloc_table_free(&t);
	vt_profile_free(&p);
}

static void test_keyed_sorted(void **state)
{
	struct vt_keyed_count v[] = {
		{ "b", "", 2 }, { "a", "y", 5 }, { "a", "x", 5 }, { "c", "", 9 },
	};
	const struct vt_keyed_count **s;
	size_t kept;

	(void)state;
	s = vt_keyed_sorted(v, 4, 0, &kept);
	assert_int_equal(kept, 4);
	assert_ptr_equal(s[0], &v[3]);
	assert_ptr_equal(s[1], &v[2]);
	assert_ptr_equal(s[2], &v[1]);
	assert_ptr_equal(s[3], &v[0]);
	free(s);
	s = vt_keyed_sorted(v, 4, 1, &kept);
	assert_int_equal(kept, 1);
	free(s);
	assert_null(vt_keyed_sorted(v, 0, 0, &kept));
	assert_int_equal(kept, 0);
}

/* ---- pauses ---- */

static void test_percentile(void **state)
{
	uint64_t v[100];
	uint64_t four[] = { 10, 20, 30, 40 };
	uint64_t one[] = { 7 };

	(void)state;
	for (int i = 0; i < 100; i++)
		v[i] = (uint64_t)i + 1;
	assert_int_equal(vt_percentile(v, 100, 50), 50);
	assert_int_equal(vt_percentile(v, 100, 99), 99);
	assert_int_equal(vt_percentile(v, 100, 100), 100);
	assert_int_equal(vt_percentile(v, 100, 0), 1);
	assert_int_equal(vt_percentile(v, 99, 99), 99);  /* ceil(98.01) = 99 */
	assert_int_equal(vt_percentile(v, 101 - 1, 1), 1);
	assert_int_equal(vt_percentile(four, 4, 50), 20);
	assert_int_equal(vt_percentile(four, 4, 51), 30);
	assert_int_equal(vt_percentile(four, 4, 99), 40);
	assert_int_equal(vt_percentile(one, 1, 50), 7);
	assert_int_equal(vt_percentile(one, 1, 99), 7);
	assert_int_equal(vt_percentile(NULL, 0, 99), 0);
}

static void test_pause_stats(void **state)
{
	struct vt_pause_stats s;
	struct vt_profile p;

	(void)state;
	vt_profile_init(&p);
	assert_int_equal(vt_pause_stats(&p, -1, &s), 0);
	assert_int_equal(s.pauses, 0);
	assert_int_equal(s.p99_ns, 0);
	/* 200 pauses, out of order: 1..199 us minor, one 5 ms major */
	for (int i = 199; i >= 1; i--) {
		struct vt_gc_pause g = { .kind = 0, .duration_ns = (uint64_t)i * 1000 };

		assert_int_equal(vt_profile_add_gc_pause(&p, &g), 0);
	}
	{
		struct vt_gc_pause g = { .kind = 1, .duration_ns = 5000000 };

		assert_int_equal(vt_profile_add_gc_pause(&p, &g), 0);
	}
	assert_int_equal(vt_pause_stats(&p, -1, &s), 0);
	assert_int_equal(s.pauses, 200);
	assert_int_equal(s.total_ns, 199 * 200 / 2 * 1000 + 5000000);
	assert_int_equal(s.mean_ns, (199 * 200 / 2 * 1000 + 5000000) / 200);
	assert_int_equal(s.p50_ns, 100000);
	assert_int_equal(s.p99_ns, 198000);
	assert_int_equal(s.max_ns, 5000000);
	assert_int_equal(vt_pause_stats(&p, 1, &s), 0);
	assert_int_equal(s.pauses, 1);
	assert_int_equal(s.p50_ns, 5000000);
	assert_int_equal(vt_pause_stats(&p, 0, &s), 0);
	assert_int_equal(s.pauses, 199);
	assert_int_equal(s.max_ns, 199000);
	assert_int_equal(s.p50_ns, 100000);
	assert_int_equal(vt_pause_stats(&p, 2, &s), 0);
	assert_int_equal(s.pauses, 0);
	vt_profile_free(&p);
}

static void test_log2(void **state)
{
	uint64_t hist[VT_HIST_BUCKETS] = { 0 };
	struct capture c;
	char *out;

	(void)state;
	assert_int_equal(vt_log2_bucket(0), 0);
	assert_int_equal(vt_log2_bucket(1), 0);
	assert_int_equal(vt_log2_bucket(2), 1);
	assert_int_equal(vt_log2_bucket(3), 1);
	assert_int_equal(vt_log2_bucket(4), 2);
	assert_int_equal(vt_log2_bucket(1023), 9);
	assert_int_equal(vt_log2_bucket(1024), 10);
	assert_int_equal(vt_log2_bucket(UINT64_MAX), 63);

	vt_print_log2_hist(capture_open(&c), hist, VT_HIST_BUCKETS, "usecs", "");
	out = capture_close(&c);
	assert_string_equal(out, ""); /* nothing to draw */
	free(out);

	hist[2] = 3;
	hist[4] = 12;
	hist[5] = 1;
	vt_print_log2_hist(capture_open(&c), hist, VT_HIST_BUCKETS, "usecs", "  ");
	out = capture_close(&c);
	assert_string_equal(out,
		"  usecs          : count    distribution\n"
		"      4 -> 7     : 3        |**********                              |\n"
		"      8 -> 15    : 0        |                                        |\n"
		"     16 -> 31    : 12       |****************************************|\n"
		"     32 -> 63    : 1        |***                                     |\n");
	free(out);

	memset(hist, 0, sizeof(hist));
	hist[63] = 1;
	vt_print_log2_hist(capture_open(&c), hist, VT_HIST_BUCKETS, "nsecs", "");
	out = capture_close(&c);
	assert_string_equal(out,
		"               nsecs                         : count    distribution\n"
		" 9223372036854775808 -> 18446744073709551615 : 1        |****************************************|\n");
	free(out);
}

/* ---- escaping ---- */

static char *json_of(const char *s)
{
	struct capture c;

	vt_json_string(capture_open(&c), s);
	return capture_close(&c);
}

static char *csv_of(const char *s)
{
	struct capture c;

	vt_csv_field(capture_open(&c), s);
	return capture_close(&c);
}

static void test_json_escaping(void **state)
{
	static const struct { const char *in, *out; } cases[] = {
		{ "", "\"\"" },
		{ "Point", "\"Point\"" },
		{ "say \"hi\"", "\"say \\\"hi\\\"\"" },
		{ "C:\\path", "\"C:\\\\path\"" },
		{ "a\nb\rc\td\be\ff", "\"a\\nb\\rc\\td\\be\\ff\"" },
		{ "\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"" },
		{ "/</script>", "\"/</script>\"" },
		{ "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80", "\"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80\"" },
		{ "bad\xff", "\"bad\\ufffd\"" },
		{ "\xc3", "\"\\ufffd\"" },                 /* cut short */
		{ "\xc0\xaf", "\"\\ufffd\\ufffd\"" },      /* overlong '/' */
		{ "\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"" }, /* surrogate */
		{ "\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"" }, /* > U+10FFFF */
		{ "\xe2\x82", "\"\\ufffd\\ufffd\"" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = json_of(cases[i].in);

		assert_string_equal(got, cases[i].out);
		free(got);
	}
	{
		char *got = json_of(NULL);

		assert_string_equal(got, "\"\"");
		free(got);
	}
}

static void test_csv_quoting(void **state)
{
	static const struct { const char *in, *out; } cases[] = {
		{ "", "" },
		{ "Point", "Point" },
		{ "method redefined", "method redefined" },
		{ "a,b", "\"a,b\"" },
		{ "say \"hi\"", "\"say \"\"hi\"\"\"" },
		{ "two\nlines", "\"two\nlines\"" },
		{ "cr\r", "\"cr\r\"" },
		{ " padded", "\" padded\"" },
		{ "padded ", "\"padded \"" },
		{ "Geometry#translate", "Geometry#translate" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = csv_of(cases[i].in);

		assert_string_equal(got, cases[i].out);
		free(got);
	}
}

static void test_names_and_units(void **state)
{
	char buf[32];

	(void)state;
	assert_string_equal(vt_signal_name(12, buf, sizeof(buf)), "SIGUSR2");
	assert_string_equal(vt_signal_name(10, buf, sizeof(buf)), "SIGUSR1");
	assert_string_equal(vt_signal_name(27, buf, sizeof(buf)), "SIGPROF");
	assert_string_equal(vt_signal_name(SIGRTMIN, buf, sizeof(buf)), "SIGRTMIN");
	assert_string_equal(vt_signal_name(SIGRTMIN + 3, buf, sizeof(buf)), "SIGRTMIN+3");
	assert_string_equal(vt_signal_name(SIGRTMAX, buf, sizeof(buf)), "SIGRTMAX");
	assert_string_equal(vt_signal_name(0, buf, sizeof(buf)), "SIG0");
	assert_string_equal(vt_signal_name(99, buf, sizeof(buf)), "SIG99");
	assert_string_equal(vt_format_ns(0, buf, sizeof(buf)), "0 ns");
	assert_string_equal(vt_format_ns(999, buf, sizeof(buf)), "999 ns");
	assert_string_equal(vt_format_ns(1500, buf, sizeof(buf)), "1.5 us");
	assert_string_equal(vt_format_ns(999949, buf, sizeof(buf)), "999.9 us");
	assert_string_equal(vt_format_ns(999999, buf, sizeof(buf)), "1.00 ms");
	assert_string_equal(vt_format_ns(2000000, buf, sizeof(buf)), "2.00 ms");
	assert_string_equal(vt_format_ns(999999999, buf, sizeof(buf)), "1.00 s");
	assert_string_equal(vt_format_ns(61500000000ULL, buf, sizeof(buf)), "61.50 s");
}

/* ---- whole reports ---- */

#include "test_report_golden.h"

static void test_text_exact(void **state)
{
	struct vt_profile p;

	(void)state;
	small_profile(&p);
	assert_render(&p, VT_FORMAT_TEXT, VT_BY_CLASS_METHOD, VT_SORT_COUNT, 0, golden_text);
	assert_render(&p, VT_FORMAT_TEXT, VT_BY_SITE, VT_SORT_BYTES, 2, golden_text_site_bytes_top2);
	vt_profile_free(&p);
}

static void test_json_exact(void **state)
{
	struct vt_profile p;

	(void)state;
	small_profile(&p);
	assert_render(&p, VT_FORMAT_JSON, VT_BY_CLASS_METHOD, VT_SORT_COUNT, 0, golden_json);
	vt_profile_free(&p);
}

static void test_json_by_changes_keys(void **state)
{
	struct vt_profile p;
	char *out;

	(void)state;
	small_profile(&p);
	out = render(&p, VT_FORMAT_JSON, VT_BY_CLASS, VT_SORT_COUNT, 1);
	assert_contains(out, "  \"group_by\": \"class\",\n  \"sort\": \"count\",\n  \"top\": 1,\n"
			"  \"allocations\": [\n"
			"    {\"class\": \"Point\", \"count\": 150, \"bytes\": 4800, \"samples\": 150}\n"
			"  ],\n"
			"  \"allocations_total\": {\"rows\": 2, \"count\": 200, \"bytes\": 11200, \"samples\": 200},\n");
	free(out);
	out = render(&p, VT_FORMAT_JSON, VT_BY_METHOD, VT_SORT_BYTES, 0);
	assert_contains(out, "  \"allocations\": [\n"
			"    {\"method\": \"Geometry#translate\", \"count\": 100, \"bytes\": 8000, \"samples\": 100},\n"
			"    {\"method\": \"Shape#new\", \"count\": 100, \"bytes\": 3200, \"samples\": 100}\n"
			"  ],\n");
	free(out);
	out = render(&p, VT_FORMAT_JSON, VT_BY_SITE, VT_SORT_COUNT, 0);
	assert_contains(out, "{\"class\": \"Point\", \"method\": \"Geometry#translate\", "
			"\"site\": \"geo.c:12\", \"count\": 10, \"bytes\": 320, \"samples\": 10}\n  ],");
	free(out);
	vt_profile_free(&p);
}

static void test_csv_exact(void **state)
{
	struct vt_profile p;

	(void)state;
	small_profile(&p);
	assert_int_equal(vt_profile_add_constant_cache_reset(&p, "odd, \"name\"", 1), 0);
	assert_render(&p, VT_FORMAT_CSV, VT_BY_CLASS_METHOD, VT_SORT_COUNT, 0, golden_csv);
	vt_profile_free(&p);
}

static void test_folded_exact(void **state)
{
	struct vt_profile p;

	(void)state;
	small_profile(&p);
	assert_render(&p, VT_FORMAT_FOLDED, VT_BY_CLASS_METHOD, VT_SORT_COUNT, 0,
		      "Shape#new;Point 100\n"
		      "Geometry#translate;String 50\n"
		      "Geometry#translate;Point 50\n");
	assert_render(&p, VT_FORMAT_FOLDED, VT_BY_SITE, VT_SORT_BYTES, 0,
		      "Geometry#translate;geo.c:11;String 6400\n"
		      "Shape#new;-;Point 3200\n"
		      "Geometry#translate;geo.c:10;Point 1280\n"
		      "Geometry#translate;geo.c:12;Point 320\n");
	assert_render(&p, VT_FORMAT_FOLDED, VT_BY_CLASS, VT_SORT_COUNT, 1, "Point 150\n");
	assert_render(&p, VT_FORMAT_FOLDED, VT_BY_METHOD, VT_SORT_BYTES, 0,
		      "Geometry#translate 8000\n"
		      "Shape#new 3200\n");
	vt_profile_free(&p);

	/* ';' would split a frame and '\n' a line */
	vt_profile_init(&p);
	assert_int_equal(vt_profile_add_alloc(&p, "a;b", "x\ny", "", 2, 2, 2), 0);
	assert_render(&p, VT_FORMAT_FOLDED, VT_BY_CLASS_METHOD, VT_SORT_COUNT, 0, "x?y;a:b 2\n");
	vt_profile_free(&p);
}

static void test_no_allocation_probes(void **state)
{
	struct vt_profile p;
	char *out;

	(void)state;
	vt_profile_init(&p);
	assert_int_equal(vt_profile_set_meta(&p, "python", "function__entry,function__return,gc__start,gc__done",
					     "python3 app.py", 77), 0);
	p.has_allocations = false;
	p.gc_collections[2] = 1;
	assert_int_equal(vt_profile_add_call(&p, "main", "app.py", 1), 0);
	assert_int_equal(vt_profile_add_call(&p, "work", "app.py", 1000), 0);
	out = render(&p, VT_FORMAT_TEXT, VT_BY_CLASS_METHOD, VT_SORT_COUNT, 0);
	assert_contains(out, "vmtrace report: runtime python, pid 77\n");
	assert_contains(out, "probes: function__entry,function__return,gc__start,gc__done\n");
	assert_contains(out, "\nAllocations: the python runtime has no allocation probes.\n");
	assert_null(strstr(out, "CLASS"));
	assert_null(strstr(out, "Method cache resets")); /* not a python event */
	assert_contains(out, "  gen2            1       0");
	assert_contains(out, "Calls by function:\n"
			"  FUNCTION  FILE    COUNT\n"
			"  work      app.py   1000\n"
			"  main      app.py      1\n"
			"  total              1001\n");
	assert_contains(out, "\nLost: 0 (this record holds no loss counters).\n");
	free(out);
	out = render(&p, VT_FORMAT_JSON, VT_BY_CLASS_METHOD, VT_SORT_COUNT, 0);
	assert_contains(out, "  \"has_allocations\": false,\n");
	assert_contains(out, "\"gen0\": 0, \"gen1\": 0, \"gen2\": 1, \"collections\": 1, ");
	assert_contains(out, "  \"calls\": [\n    {\"name\": \"work\", \"file\": \"app.py\", \"count\": 1000},\n");
	free(out);
	assert_render(&p, VT_FORMAT_FOLDED, VT_BY_CLASS_METHOD, VT_SORT_COUNT, 1, "app.py;work 1000\n");
	vt_profile_free(&p);
}

static void test_sampled_estimates(void **state)
{
	struct vt_profile p;
	char *out;

	(void)state;
	vt_profile_init(&p);
	assert_int_equal(vt_profile_set_meta(&p, "vmtrace", "object__alloc", "", 5), 0);
	p.sample_period = 524288;
	assert_int_equal(vt_profile_add_alloc(&p, "Big", "load", "", 8, 4194304, 8), 0);
	assert_int_equal(vt_profile_add_alloc(&p, "Small", "tick", "", 100000, 3200000, 6), 0);
	out = render(&p, VT_FORMAT_TEXT, VT_BY_CLASS_METHOD, VT_SORT_BYTES, 0);
	assert_contains(out, "traced: vmtrace's provider inside the process, sampled every 524288 bytes "
			"(512 KiB): counts and bytes are estimates\n");
	assert_contains(out, "Allocations by class and method, sorted by bytes:\n"
			"  CLASS  METHOD   COUNT  COUNT%    BYTES  BYTES%  SAMPLES\n"
			"  Big    load         8    0.0%  4194304   56.7%        8\n"
			"  Small  tick    100000  100.0%  3200000   43.3%        6\n"
			"  total          100008  100.0%  7394304  100.0%       14\n");
	/* no duration: no rates, and no division by zero */
	assert_null(strstr(out, "/s"));
	free(out);
	out = render(&p, VT_FORMAT_JSON, VT_BY_CLASS_METHOD, VT_SORT_COUNT, 0);
	assert_contains(out, "  \"sample_period\": 524288,\n  \"estimated\": true,\n");
	free(out);
	vt_profile_free(&p);
}

static void test_text_escapes_names(void **state)
{
	struct vt_profile p;
	char *out;

	(void)state;
	vt_profile_init(&p);
	assert_int_equal(vt_profile_set_meta(&p, "vmtrace", "", "evil\n\x1b[2J", 1), 0);
	assert_int_equal(vt_profile_add_alloc(&p, "Caf\xc3\xa9", "bad\xff\x01", "", 1, 8, 1), 0);
	assert_int_equal(vt_profile_add_alloc(&p, "A", "", "", 1, 8, 1), 0);
	out = render(&p, VT_FORMAT_TEXT, VT_BY_CLASS_METHOD, VT_SORT_COUNT, 0);
	assert_contains(out, "target: evil\\x0a\\x1b[2J\n");
	assert_contains(out, "probes: (none recorded)\n");
	/* the column lines up after a two-byte character */
	assert_contains(out, "  CLASS  METHOD       COUNT  COUNT%  BYTES  BYTES%\n"
			"  A      -                1   50.0%      8   50.0%\n"
			"  Caf\xc3\xa9   bad\\xff\\x01      1   50.0%      8   50.0%\n");
	assert_contains(out, "GC: no collections recorded.\n");
	assert_contains(out, "Signals: none received.\n");
	assert_contains(out, "Method cache resets by class and method: none.\n");
	free(out);
	vt_profile_free(&p);
}

static void test_lost_counts_shown(void **state)
{
	struct vt_profile p;
	char *out;

	(void)state;
	small_profile(&p);
	assert_int_equal(vt_profile_add_lost(&p, "unreadable string", 3), 0);
	out = render(&p, VT_FORMAT_TEXT, VT_BY_CLASS_METHOD, VT_SORT_COUNT, 0);
	/* only what is not 0, with what it touches: names are no count */
	assert_contains(out, "Lost (not counted where it belongs, and what it touches):\n"
			"  LOST               COUNT  TOUCHES\n"
			"  unreadable string      3  names only\n"
			"  no count above is touched: only what each line names.\n");
	assert_not_contains(out, "alloc map full");
	free(out);
	assert_int_equal(vt_profile_add_lost(&p, "alloc map full", 1234), 0);
	assert_int_equal(vt_profile_add_lost(&p, "free map full (events)", 2), 0);
	out = render(&p, VT_FORMAT_TEXT, VT_BY_CLASS_METHOD, VT_SORT_COUNT, 0);
	assert_contains(out, "  LOST                    COUNT  TOUCHES\n"
			"  alloc map full           1234  allocations\n"
			"  unreadable string           3  names only\n"
			"  free map full (events)      2  frees\n"
			"  1,236 not counted: the counts of allocations and frees above are lower bounds.\n");
	free(out);
	out = render(&p, VT_FORMAT_JSON, VT_BY_CLASS_METHOD, VT_SORT_COUNT, 0);
	assert_contains(out, "  \"lost_total\": 1239\n}\n");
	free(out);
	vt_profile_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_grouping),
		cmocka_unit_test(test_sort_and_top),
		cmocka_unit_test(test_keyed_sorted),
		cmocka_unit_test(test_percentile),
		cmocka_unit_test(test_pause_stats),
		cmocka_unit_test(test_log2),
		cmocka_unit_test(test_json_escaping),
		cmocka_unit_test(test_csv_quoting),
		cmocka_unit_test(test_names_and_units),
		cmocka_unit_test(test_text_exact),
		cmocka_unit_test(test_json_exact),
		cmocka_unit_test(test_json_by_changes_keys),
		cmocka_unit_test(test_csv_exact),
		cmocka_unit_test(test_folded_exact),
		cmocka_unit_test(test_no_allocation_probes),
		cmocka_unit_test(test_sampled_estimates),
		cmocka_unit_test(test_text_escapes_names),
		cmocka_unit_test(test_lost_counts_shown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
