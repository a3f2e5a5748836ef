/*
 * test_record_stacks: the record file's stacks (docs/record-format.md,
 * items `stack` and `alloc_stack`) and the profile's stack table: an exact
 * round trip, stacks interned once, a record without stacks unchanged, and
 * every malformed stack item refused; the folded and flame graph reports
 * of a profile with stacks.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "profile/profile.h"
#include "report/report_opts.h"

static char dir[] = "/tmp/vmtrace-stacks-test.XXXXXX";
static char path[256];

static const char head[] = "vmtrace-record 2\nruntime =vmtrace\nprobes =\ntarget =\npid 1\n"
			   "duration_s 0x0p+0\nsample_period 0\nhas_allocations 1\nlast_serial 0\n"
			   "gc_collections 3 0 0 0\n";

/* head, then body, then the right end line: vt_profile_read's result */
static int read_body(const char *body, struct vt_profile *p)
{
	unsigned long items = 9;
	FILE *f = fopen(path, "w");
	int err;

	assert_non_null(f);
	for (const char *c = body; *c; c++)
		items += *c == '\n';
	fprintf(f, "%s%send %lu\n", head, body, items);
	assert_int_equal(fclose(f), 0);
	err = vt_profile_read(p, path);
	if (err)
		assert_int_equal(p->stacks.n, 0); /* a refused record leaves nothing */
	return err;
}

static void fill(struct vt_profile *p)
{
	struct vt_frame tree[] = { { "Object#main", "w.c", 1 }, { "Tree#grow", "w.c", 9 },
				   { "Tree#grow", "w.c", 9 } };
	struct vt_frame odd[] = { { "a b;c%", "", 0 }, { "x\ty", "f.c", -3 } };
	uint32_t t, o, again;

	vt_profile_init(p);
	assert_int_equal(vt_profile_set_meta(p, "vmtrace", "alloc__batch", "demo", 7), 0);
	assert_int_equal(vt_profile_add_stack(p, tree, 3, false, &t), 0);
	assert_int_equal(vt_profile_add_stack(p, odd, 2, true, &o), 0);
	assert_int_equal(vt_profile_add_stack(p, tree, 3, false, &again), 0);
	assert_int_equal(t, 1);
	assert_int_equal(o, 2);
	assert_int_equal(again, t); /* the same frames: the same stack */
	assert_int_equal(vt_profile_add_alloc_stack(p, "Node", "Tree#grow", "w.c:12", t, 5, 240, 5), 0);
	assert_int_equal(vt_profile_add_alloc_stack(p, "Node", "Tree#grow", "w.c:12", o, 2, 96, 2), 0);
	assert_int_equal(vt_profile_add_alloc(p, "Node", "Tree#grow", "w.c:12", 1, 48, 1), 0);
	/* a row under one stack merges; under another it does not */
	assert_int_equal(vt_profile_add_alloc_stack(p, "Node", "Tree#grow", "w.c:12", t, 1, 48, 1), 0);
	assert_int_equal(p->allocs.n, 3);
	assert_int_equal(p->allocs.v[0].count, 6);
	/* a stack number that does not exist */
	assert_int_equal(vt_profile_add_alloc_stack(p, "Node", "m", "", 9, 1, 1, 1), -EINVAL);
}

static char *slurp(const char *file, size_t *n)
{
	FILE *f = fopen(file, "r");
	char *buf = malloc(1 << 16);

	assert_non_null(f);
	assert_non_null(buf);
	*n = fread(buf, 1, (1 << 16) - 1, f);
	buf[*n] = '\0';
	fclose(f);
	return buf;
}

static void test_round_trip(void **state)
{
	struct vt_profile a, b;
	char p2[300];
	size_t n1, n2;

	(void)state;
	fill(&a);
	assert_int_equal(vt_profile_write(&a, path, true), 0);
	assert_int_equal(vt_profile_read(&b, path), 0);
	assert_int_equal(b.stacks.n, 2);
	assert_int_equal(b.stacks.v[1].depth, 2);
	assert_true(b.stacks.v[1].cut);
	assert_string_equal(b.stacks.v[1].frames[0].name, "a b;c%");
	assert_string_equal(b.stacks.v[1].frames[1].name, "x\ty");
	assert_int_equal(b.stacks.v[1].frames[1].line, -3);
	assert_int_equal(b.allocs.n, 3);
	for (size_t i = 0; i < a.allocs.n; i++) {
		assert_int_equal(b.allocs.v[i].stack, a.allocs.v[i].stack);
		assert_int_equal(b.allocs.v[i].count, a.allocs.v[i].count);
	}
	snprintf(p2, sizeof(p2), "%s.2", path);
	assert_int_equal(vt_profile_write(&b, p2, true), 0);
	char *t1 = slurp(path, &n1), *t2 = slurp(p2, &n2);
	assert_int_equal(n1, n2);
	assert_memory_equal(t1, t2, n1);
	/* each text once, numbered from 1 in the order first met; frames name them */
	assert_non_null(strstr(t1, "\ntext =Object#main\ntext =w.c\ntext =Tree#grow\ntext =a%20b;c%25\n"
				   "text =\ntext =x%09y\ntext =f.c\n"));
	assert_non_null(strstr(t1, "\nstack 0 3 #1 #2 1 #3 #2 9 #3 #2 9\n"));
	assert_non_null(strstr(t1, "\nstack 1 2 #4 #5 0 #6 #7 -3\n"));
	assert_non_null(strstr(t1, "\nalloc_stack 1 =Node =Tree#grow =w.c:12 6 288 6\n"));
	assert_non_null(strstr(t1, "\nalloc =Node =Tree#grow =w.c:12 1 48 1\n"));
	free(t1);
	free(t2);
	unlink(p2);
	vt_profile_free(&a);
	vt_profile_free(&b);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
		"stack 0 0\n",                                  /* no frames */
		"stack 2 1 =a = 1\n",                           /* cut is 0 or 1 */
		"stack 0 2 =a = 1\n",                           /* a frame missing */
		"stack 0 1 =a = 1 =b\n",                        /* a field too many */
		"stack 0 1 =a = x\n",                           /* line not a number */
		"stack 0 1 a = 1\n",                            /* string without '=' */
		"stack 0 129 =a = 1\n",                         /* deeper than 128 */
		"stack 0 1 =a = 1\nstack 0 1 =a = 1\n",         /* one stack twice */
		"alloc_stack 1 =A =m = 1 2 3\n",                /* no such stack yet */
		"stack 0 1 =a = 1\nalloc_stack 0 =A =m = 1 2 3\n",
		"stack 0 1 =a = 1\nalloc_stack 2 =A =m = 1 2 3\n",
		"stack 0 1 =a = 1\nalloc_stack 1 =A =m = 1 2\n",
		"alloc_stack 1 =A =m = 1 2 3\nstack 0 1 =a = 1\n", /* used before its line */
		"text =a\nstack 0 1 #2 = 1\n",                /* no text 2 */
		"text =a\nstack 0 1 #0 = 1\n",                /* texts start at 1 */
		"text =a\nstack 0 1 #x = 1\n",                /* not a number */
		"text =a\ntext =a\n",                         /* one text twice */
		"stack 0 1 =a = 1\ntext =b\n",                /* a text after a stack */
		"text a\n",                                    /* string without '=' */
	};
	struct vt_profile p;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (read_body(bad[i], &p) != -EBADMSG)
			fail_msg("accepted: %s", bad[i]);
	assert_int_equal(read_body("stack 0 1 =a = 1\nalloc_stack 1 =A =m = 1 2 3\n", &p), 0);
	assert_int_equal(p.stacks.n, 1);
	assert_int_equal(p.allocs.v[0].stack, 1);
	vt_profile_free(&p);
	/* texts by number, and by string in the same stack */
	assert_int_equal(read_body("text =a%20b\ntext =f.c\nstack 0 2 #1 #2 3 =c #2 4\n", &p), 0);
	assert_int_equal(p.stacks.n, 1);
	assert_string_equal(p.stacks.v[0].frames[0].name, "a b");
	assert_string_equal(p.stacks.v[0].frames[0].file, "f.c");
	assert_string_equal(p.stacks.v[0].frames[1].name, "c");
	assert_int_equal(p.stacks.v[0].frames[1].line, 4);
	vt_profile_free(&p);
}

static char *render(vt_render_fn *fn, const struct vt_profile *p, enum vt_sort sort)
{
	struct vt_report_opts o = { .by = VT_BY_CLASS_METHOD, .sort = sort };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(fn(f, p, &o), 0);
	fclose(f);
	return buf;
}

static void test_folded_and_flamegraph(void **state)
{
	struct vt_profile p;
	char *folded, *html;

	(void)state;
	fill(&p);
	folded = render(vt_report_folded, &p, VT_SORT_COUNT);
	assert_string_equal(folded, "Object#main;Tree#grow;Tree#grow;Node 6\n"
				    "[cut];a b:c%;x?y;Node 2\n"
				    "Tree#grow;Node 1\n");
	free(folded);
	folded = render(vt_report_folded, &p, VT_SORT_BYTES);
	assert_non_null(strstr(folded, "Object#main;Tree#grow;Tree#grow;Node 288\n"));
	free(folded);
	html = render(vt_report_flamegraph, &p, VT_SORT_COUNT);
	/* the data inline: the whole tree, its total, names escaped for <script> */
	assert_non_null(strstr(html, "var data=[\"all\",9,"));
	assert_non_null(strstr(html, "[\"Tree#grow\",6,\"w.c:9\",[[\"Tree#grow\",6,\"w.c:9\",[[\"Node\",6,"));
	assert_non_null(strstr(html, "\"x\\ty\"")); /* a tab, as every JSON writer escapes it */
	assert_null(strstr(html, " src="));
	free(html);
	vt_profile_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_folded_and_flamegraph),
	};
	int failed;

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/rec", dir);
	failed = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(path);
	rmdir(dir);
	return failed;
}
