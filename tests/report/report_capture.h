/* What the report tests share: a report printed into memory, and a check
 * that it holds a piece of text. Include after <cmocka.h>. */
#ifndef VMTRACE_TEST_REPORT_CAPTURE_H
#define VMTRACE_TEST_REPORT_CAPTURE_H

#include <stdio.h>
#include <string.h>

struct capture {
	FILE *f;
	char *buf;
	size_t len;
};

static inline FILE *capture_open(struct capture *c)
{
	c->buf = NULL;
	c->len = 0;
	c->f = open_memstream(&c->buf, &c->len);
	assert_non_null(c->f);
	return c->f;
}

static inline char *capture_close(struct capture *c)
{
	assert_int_equal(fclose(c->f), 0);
	return c->buf;
}

static inline void assert_contains(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("missing \"%s\" in:\n%s", needle, hay);
}

static inline void assert_not_contains(const char *hay, const char *needle)
{
	if (strstr(hay, needle))
		fail_msg("unexpected \"%s\" in:\n%s", needle, hay);
}

#endif
