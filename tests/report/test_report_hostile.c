/* Reports of hostile input: names that try to forge rows or formulas, and
 * numbers at the edges of 64 bits. */
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
#include "report/report_fmt.h"

#include "report_capture.h"

static char *render(const struct vt_profile *p, enum vt_format fmt)
{
	struct vt_report_opts o = { .format = fmt, .by = VT_BY_CLASS_METHOD, .sort = VT_SORT_COUNT, .top = 0 };
	struct capture c;

	assert_int_equal(vt_report_print(capture_open(&c), p, &o), 0);
	return capture_close(&c);
}

/* A name holding a literal "\x0a" must not print as a name holding a
 * newline: the backslash itself is escaped. */
static void test_text_escapes_backslash(void **state)
{
	struct vt_profile p;
	char *out;

	(void)state;
	vt_profile_init(&p);
	assert_int_equal(vt_profile_set_meta(&p, "vmtrace", "", "a\\x0ab", 1), 0);
	assert_int_equal(vt_profile_add_alloc(&p, "Nl\nX", "m", "", 2, 8, 2), 0);
	assert_int_equal(vt_profile_add_alloc(&p, "Nl\\x0aX", "m", "", 1, 8, 1), 0);
	assert_int_equal(vt_profile_add_alloc(&p, "Over\xc0\xaf", "m", "", 1, 8, 1), 0);
	out = render(&p, VT_FORMAT_TEXT);
	assert_contains(out, "target: a\\\\x0ab\n");
	assert_contains(out, "\n  Nl\\x0aX ");
	assert_contains(out, "\n  Nl\\\\x0aX ");
	/* an overlong sequence is not UTF-8: escaped, never passed to the terminal */
	assert_contains(out, "\n  Over\\xc0\\xaf ");
	free(out);
	vt_profile_free(&p);
}

static char *csv_of(const char *s)
{
	struct capture c;

	vt_csv_field(capture_open(&c), s);
	return capture_close(&c);
}

static void test_csv_formula_injection(void **state)
{
	static const struct { const char *in, *out; } cases[] = {
		{ "=HYPERLINK(\"x\")", "\"'=HYPERLINK(\"\"x\"\")\"" },
		{ "+1", "\"'+1\"" },
		{ "-2+3", "\"'-2+3\"" },
		{ "@SUM(A1)", "\"'@SUM(A1)\"" },
		{ "\t=1", "\"'\t=1\"" },
		{ "\r=1", "\"'\r=1\"" },
		{ "a=b", "a=b" },
		{ "Array#-", "Array#-" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = csv_of(cases[i].in);

		assert_string_equal(got, cases[i].out);
		free(got);
	}
}

static int count_stars(const char *line)
{
	const char *bar = strchr(line, '|');
	int n = 0;

	assert_non_null(bar);
	while (*++bar == '*')
		n++;
	return n;
}

/* Counts above 2^64/40 once wrapped the bar's product: the largest bucket
 * got a short bar. */
static void test_hist_bar_huge_counts(void **state)
{
	uint64_t hist[VT_HIST_BUCKETS] = { 0 };
	struct capture c;
	char *out, *line;

	(void)state;
	hist[3] = UINT64_C(1) << 62;
	hist[4] = UINT64_C(1) << 61;
	vt_print_log2_hist(capture_open(&c), hist, VT_HIST_BUCKETS, "usecs", "");
	out = capture_close(&c);
	assert_non_null(line = strstr(out, "-> 15"));
	assert_int_equal(count_stars(line), 40);
	assert_non_null(line = strstr(out, "-> 31"));
	assert_int_equal(count_stars(line), 20);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_escapes_backslash),
		cmocka_unit_test(test_csv_formula_injection),
		cmocka_unit_test(test_hist_bar_huge_counts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
