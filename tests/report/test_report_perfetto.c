/* --format perfetto on profiles made by hand: the exact trace of a small
 * timeline (events before the start move the zero back; pauses without a
 * thread are left off and counted; names escaped), and times at the ends
 * of int64 that must not wrap. */
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

static char *render(const struct vt_profile *p)
{
	struct vt_report_opts o = { .format = VT_FORMAT_PERFETTO };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(vt_report_print(f, p, &o), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void timeline_profile(struct vt_profile *p)
{
	struct vt_gc_pause g[] = {
		{ .kind = 0, .duration_ns = 1500, .heap_bytes = 4096, .at_ns = 5000, .tid = 11 },
		{ .kind = 1, .duration_ns = 900, .at_ns = 0, .tid = 0 },   /* no start: left off */
		{ .kind = 1, .duration_ns = 2000000, .objects_collected = 7, .at_ns = 7000,
		  .tid = 10 },
	};
	struct vt_event e[] = {
		{ .kind = VT_EVENT_SIGNAL, .tid = 12, .at_ns = 10, .dur_ns = 4000, .arg = 12 },
		{ .kind = VT_EVENT_METHOD_CACHE_RESET, .tid = 11, .at_ns = 6000, .serial = 3,
		  .name = "Po\"int\xff", .name2 = "" },
		{ .kind = VT_EVENT_CONSTANT_CACHE_RESET, .tid = 10, .at_ns = 123456789, .serial = 4,
		  .name = "LIMIT" },
	};

	vt_profile_init(p);
	assert_int_equal(vt_profile_set_meta(p, "vmtrace", "gc__begin", "demovm \\ --wait", 10), 0);
	p->duration_s = 0.5;
	p->start_unix_ns = 1764750000123456789ull;
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(vt_profile_add_gc_pause(p, &g[i]), 0);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(vt_profile_add_event(p, &e[i]), 0);
	assert_int_equal(vt_profile_add_lost(p, "event ring buffer full", 2), 0);
}

static const char golden[] =
	"{\"displayTimeUnit\": \"ns\",\n\"traceEvents\": [\n"
	"{\"ph\": \"M\", \"name\": \"process_name\", \"ts\": 0, \"pid\": 10, \"tid\": 10, "
	"\"args\": {\"name\": \"demovm \\\\ --wait\"}},\n"
	"{\"ph\": \"M\", \"name\": \"thread_name\", \"cat\": \"__metadata\", \"ts\": 0.000, "
	"\"pid\": 10, \"tid\": 10, \"args\": {\"name\": \"main thread 10\"}},\n"
	"{\"ph\": \"M\", \"name\": \"thread_name\", \"cat\": \"__metadata\", \"ts\": 0.000, "
	"\"pid\": 10, \"tid\": 11, \"args\": {\"name\": \"thread 11\"}},\n"
	"{\"ph\": \"M\", \"name\": \"thread_name\", \"cat\": \"__metadata\", \"ts\": 0.000, "
	"\"pid\": 10, \"tid\": 12, \"args\": {\"name\": \"thread 12\"}},\n"
	"{\"ph\": \"X\", \"name\": \"GC minor\", \"cat\": \"gc\", \"ts\": 8.990, \"pid\": 10, "
	"\"tid\": 11, \"dur\": 1.500, \"args\": {\"kind\": \"minor\", \"duration_ns\": 1500, "
	"\"heap_bytes\": 4096, \"objects_collected\": 0}},\n"
	"{\"ph\": \"C\", \"name\": \"heap\", \"cat\": \"gc\", \"ts\": 10.490, \"pid\": 10, "
	"\"tid\": 11, \"args\": {\"bytes\": 4096}},\n"
	"{\"ph\": \"X\", \"name\": \"GC major\", \"cat\": \"gc\", \"ts\": 10.990, \"pid\": 10, "
	"\"tid\": 10, \"dur\": 2000.000, \"args\": {\"kind\": \"major\", \"duration_ns\": 2000000, "
	"\"heap_bytes\": 0, \"objects_collected\": 7}},\n"
	"{\"ph\": \"C\", \"name\": \"heap\", \"cat\": \"gc\", \"ts\": 2010.990, \"pid\": 10, "
	"\"tid\": 10, \"args\": {\"bytes\": 0}},\n"
	"{\"ph\": \"b\", \"name\": \"SIGUSR2\", \"cat\": \"signal\", \"ts\": 0.000, \"pid\": 10, "
	"\"tid\": 12, \"id\": \"0x0\", \"args\": {\"signo\": 12, \"latency_ns\": 4000}},\n"
	"{\"ph\": \"e\", \"name\": \"SIGUSR2\", \"cat\": \"signal\", \"ts\": 4.000, \"pid\": 10, "
	"\"tid\": 12, \"id\": \"0x0\"},\n"
	"{\"ph\": \"i\", \"name\": \"method cache reset\", \"cat\": \"cache\", \"ts\": 9.990, "
	"\"pid\": 10, \"tid\": 11, \"s\": \"t\", \"args\": {\"class\": \"Po\\\"int\\ufffd\", "
	"\"method\": \"\", \"serial\": 3}},\n"
	"{\"ph\": \"i\", \"name\": \"constant cache reset\", \"cat\": \"cache\", \"ts\": 123460.779, "
	"\"pid\": 10, \"tid\": 10, \"s\": \"t\", \"args\": {\"name\": \"LIMIT\", \"serial\": 4}}\n"
	"],\n"
	"\"otherData\": {\"runtime\": \"vmtrace\", \"target\": \"demovm \\\\ --wait\", \"pid\": 10, "
	"\"start_unix_ns\": 1764750000123456789, \"duration_s\": 0.500000000, "
	"\"ts_origin_ns\": -3990, \"gc_pauses_without_start\": 1, \"gc_pauses_not_kept\": 0, "
	"\"lost\": {\"event ring buffer full\": 2}}}\n";

static void test_exact(void **state)
{
	struct vt_profile p;
	char *got;

	(void)state;
	timeline_profile(&p);
	got = render(&p);
	if (strcmp(got, golden)) {
		print_error("--- expected\n%s--- got\n%s---\n", golden, got);
		free(got);
		fail();
	}
	free(got);
	vt_profile_free(&p);
}

/* A damaged record's extremes: the signal's start saturates at INT64_MIN,
 * which becomes the zero, and the latest time is 2^64 - 1 ns after it. */
static void test_extremes(void **state)
{
	struct vt_profile p;
	struct vt_event e[] = {
		{ .kind = VT_EVENT_SIGNAL, .tid = 1, .at_ns = INT64_MIN + 5, .dur_ns = UINT64_MAX,
		  .arg = 99 },
		{ .kind = VT_EVENT_CONSTANT_CACHE_RESET, .tid = 1, .at_ns = INT64_MAX, .name = "X" },
	};
	char *got;

	(void)state;
	vt_profile_init(&p);
	assert_int_equal(vt_profile_set_meta(&p, "vmtrace", "", "", 1), 0);
	for (size_t i = 0; i < 2; i++)
		assert_int_equal(vt_profile_add_event(&p, &e[i]), 0);
	got = render(&p);
	if (!strstr(got, "\"name\": \"SIG99\", \"cat\": \"signal\", \"ts\": 0.000,") ||
	    !strstr(got, "\"ts\": 18446744073709551.615,") ||
	    !strstr(got, "\"ts_origin_ns\": -9223372036854775808,"))
		fail_msg("extremes:\n%s", got);
	free(got);
	vt_profile_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact),
		cmocka_unit_test(test_extremes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
