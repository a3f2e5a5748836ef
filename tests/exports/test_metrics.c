/*
 * test_metrics: label values of /metrics (consumer/src/export/metrics.c)
 * stay well-formed UTF-8 whatever a runtime names its classes: a class
 * name from a Latin-1 source file gets U+FFFD for its bad byte, so
 * Prometheus keeps the target (one invalid label value makes it drop the
 * whole scrape), in both exposition formats.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "export/metrics.h"
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_latin1_class),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
