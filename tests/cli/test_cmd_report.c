/* `vmtrace report`: flags, exit status 0/1/2, one-line errors, and the
 * report of a record file in each format. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/commands.h"
#include "profile/profile.h"

static char dir[] = "/tmp/vmtrace-cmd-report-test.XXXXXX";
static char record[256], not_record[256], newer[256];

struct run {
	int status;
	char *out, *err;
};

static char *slurp(int fd)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	char chunk[4096];
	ssize_t n;

	assert_non_null(f);
	lseek(fd, 0, SEEK_SET);
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		fwrite(chunk, 1, (size_t)n, f);
	fclose(f);
	close(fd);
	return buf;
}

/* Runs `vmtrace report ARGS...` in this process, capturing stdout and
 * stderr. */
static struct run run_report(const char *arg, ...)
{
	char *argv[16] = { "report" };
	int argc = 1, out_fd, err_fd, saved_out, saved_err;
	char out_path[300], err_path[300];
	struct run r;
	va_list ap;

	va_start(ap, arg);
	for (const char *a = arg; a; a = va_arg(ap, const char *))
		argv[argc++] = (char *)a;
	va_end(ap);

	snprintf(out_path, sizeof(out_path), "%s/stdout", dir);
	snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
	out_fd = open(out_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	err_fd = open(err_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(out_fd >= 0 && err_fd >= 0);
	fflush(stdout);
	fflush(stderr);
	saved_out = dup(1);
	saved_err = dup(2);
	dup2(out_fd, 1);
	dup2(err_fd, 2);
	r.status = vt_cmd_report(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(saved_out, 1);
	dup2(saved_err, 2);
	close(saved_out);
	close(saved_err);
	r.out = slurp(out_fd);
	r.err = slurp(err_fd);
	return r;
}

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

/* A usage or runtime error: the status, nothing on stdout, and exactly one
 * line on stderr that starts with prefix. */
static void assert_error(struct run r, int status, const char *prefix)
{
	if (r.status != status || strncmp(r.err, prefix, strlen(prefix)) ||
	    strchr(r.err, '\n') != r.err + strlen(r.err) - 1 || *r.out)
		fail_msg("status %d, stderr \"%s\", stdout \"%s\"; wanted %d and \"%s...\"",
			 r.status, r.err, r.out, status, prefix);
	run_free(&r);
}

static void make_record(const char *path)
{
	struct vt_profile p;

	vt_profile_init(&p);
	assert_int_equal(vt_profile_set_meta(&p, "vmtrace", "object__alloc", "demovm", 9), 0);
	assert_int_equal(vt_profile_add_alloc(&p, "Point", "Geometry#translate", "g.c:1", 3, 96, 3), 0);
	assert_int_equal(vt_profile_add_alloc(&p, "Point", "Geometry#translate", "g.c:2", 1, 32, 1), 0);
	assert_int_equal(vt_profile_add_alloc(&p, "Big", "load", "", 1, 4096, 1), 0);
	assert_int_equal(vt_profile_write(&p, path, true), 0);
	vt_profile_free(&p);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(record, sizeof(record), "%s/run.data", dir);
	snprintf(not_record, sizeof(not_record), "%s/notes.txt", dir);
	snprintf(newer, sizeof(newer), "%s/newer.data", dir);
	make_record(record);
	write_file(not_record, "just some notes\n");
	write_file(newer, "vmtrace-record 7\nwhatever comes next\n");
	return 0;
}

static int teardown(void **state)
{
	static const char *const names[] = { "run.data", "notes.txt", "newer.data", "stdout",
					      "stderr", "vmtrace.data" };
	char path[300];

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	return rmdir(dir);
}

static void test_help(void **state)
{
	struct run r = run_report("--help", NULL);

	(void)state;
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "Usage: vmtrace report [FILE]"));
	assert_non_null(strstr(r.out, "Examples:"));
	assert_string_equal(r.err, "");
	run_free(&r);
	r = run_report("-h", NULL);
	assert_int_equal(r.status, 0);
	run_free(&r);
}

static void test_usage_errors(void **state)
{
	(void)state;
	assert_error(run_report("--bogus", NULL), 2, "vmtrace: report: unknown option '--bogus'");
	assert_error(run_report("-x", record, NULL), 2, "vmtrace: report: unknown option '-x'");
	assert_error(run_report("--format", "xml", record, NULL), 2,
		     "vmtrace: report: --format: 'xml' is not one of text, json, csv, folded");
	assert_error(run_report(record, "--format", NULL), 2,
		     "vmtrace: report: option '--format' needs a value");
	assert_error(run_report("--by", "file", NULL), 2, "vmtrace: report: --by: 'file'");
	assert_error(run_report("--sort=size", NULL), 2, "vmtrace: report: --sort: 'size'");
	assert_error(run_report("--top", "abc", NULL), 2, "vmtrace: report: --top: 'abc'");
	assert_error(run_report("--top", "-1", NULL), 2, "vmtrace: report: --top: '-1'");
	assert_error(run_report("--top", "5x", NULL), 2, "vmtrace: report: --top: '5x'");
	assert_error(run_report("--top", "99999999999999999999999", NULL), 2,
		     "vmtrace: report: --top:");
	assert_error(run_report(record, record, NULL), 2, "vmtrace: report: one FILE at most");
}

static void test_runtime_errors(void **state)
{
	char missing[300], cwd[4096], expect[400];

	(void)state;
	snprintf(missing, sizeof(missing), "%s/nope.data", dir);
	snprintf(expect, sizeof(expect), "vmtrace: %s: No such file or directory\n", missing);
	{
		struct run r = run_report(missing, NULL);

		assert_int_equal(r.status, 1);
		assert_string_equal(r.err, expect);
		run_free(&r);
	}
	snprintf(expect, sizeof(expect), "vmtrace: %s: not a vmtrace record", not_record);
	assert_error(run_report(not_record, NULL), 1, expect);
	snprintf(expect, sizeof(expect), "vmtrace: %s: written by a newer vmtrace", newer);
	assert_error(run_report(newer, "--format", "json", NULL), 1, expect);
	snprintf(expect, sizeof(expect), "vmtrace: %s: Is a directory", dir);
	assert_error(run_report(dir, NULL), 1, expect);

	/* no FILE: ./vmtrace.data, and a hint when there is none */
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(dir), 0);
	assert_error(run_report(NULL), 1,
		     "vmtrace: vmtrace.data: No such file or directory (make one with vmtrace record)");
	assert_int_equal(chdir(cwd), 0);
}

static void test_reports(void **state)
{
	char cwd[4096], copy[300];
	struct run r;

	(void)state;
	r = run_report(record, "--format", "folded", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "Geometry#translate;Point 4\nload;Big 1\n");
	assert_string_equal(r.err, "");
	run_free(&r);

	/* options after FILE, --opt=value, and the same parser run twice */
	r = run_report("--sort=bytes", record, "--by", "site", "--format=folded", "--top", "2", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "load;-;Big 4096\nGeometry#translate;g.c:1;Point 96\n");
	run_free(&r);

	r = run_report(record, "--format", "json", "--by", "class", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "  \"allocations\": [\n"
			       "    {\"class\": \"Point\", \"count\": 4, \"bytes\": 128, \"samples\": 4},\n"
			       "    {\"class\": \"Big\", \"count\": 1, \"bytes\": 4096, \"samples\": 1}\n"
			       "  ],\n"));
	run_free(&r);

	r = run_report(record, "--format", "csv", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "\nsection,class,method,count,bytes,samples\n"
			       "allocations,Point,Geometry#translate,4,128,4\n"));
	run_free(&r);

	r = run_report(record, NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "vmtrace report: runtime vmtrace, pid 9\n"));
	assert_non_null(strstr(r.out, "  Point  Geometry#translate      4   80.0%    128    3.0%\n"));
	run_free(&r);

	/* the default FILE */
	snprintf(copy, sizeof(copy), "%s/vmtrace.data", dir);
	make_record(copy);
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(dir), 0);
	r = run_report("--format", "folded", "--by", "method", NULL);
	assert_int_equal(chdir(cwd), 0);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "Geometry#translate 4\nload 1\n");
	run_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_usage_errors),
		cmocka_unit_test(test_runtime_errors),
		cmocka_unit_test(test_reports),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
