/* Record files: exact round trip, atomic no-overwrite writes, and every kind
 * of file that is not a whole record of a version we read. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "profile/profile.h"

static char dir[] = "/tmp/vmtrace-record-test.XXXXXX";

static const char *in_dir(const char *name)
{
	static char path[4][512];
	static int next;
	char *p = path[next++ % 4];

	snprintf(p, sizeof(path[0]), "%.64s/%.256s", dir, name);
	return p;
}

static void write_text(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* Every string a runtime might hand us: spaces, '%', '=', control bytes,
 * UTF-8 and bytes that are not UTF-8. */
static void fill(struct vt_profile *p)
{
	uint64_t hist[VT_HIST_BUCKETS] = { 0 };
	struct vt_gc_pause g1 = { 0, 1500, 1 << 20, 4096, 0, 0, 0 };
	struct vt_gc_pause g2 = { 1, 2000000, 2 << 20, 8192, 17, -250, 4242 };
	struct vt_event e1 = { VT_EVENT_SIGNAL, 7, 123456789, 2500, 12, 0, NULL, NULL };
	struct vt_event e2 = { VT_EVENT_METHOD_CACHE_RESET, 8, -1, 0, 0, UINT64_MAX, "Point", "a b\n" };

	vt_profile_init(p);
	assert_int_equal(vt_profile_set_meta(p, "vmtrace", "object__alloc,gc__begin",
					     "demovm --ops 100 \"x y\"", -7), 0);
	p->duration_s = 0.1;
	p->start_unix_ns = 1764750000123456789ull;
	p->sample_period = 524288;
	p->has_allocations = false;
	p->last_serial = UINT64_MAX;
	p->gc_collections[0] = 12;
	p->gc_collections[1] = 2;
	p->gc_collections[2] = 1;
	assert_int_equal(vt_profile_add_alloc(p, "Point", "Geometry#translate", "", 123, 4567, 9), 0);
	assert_int_equal(vt_profile_add_alloc(p, "a b%20=c", "line\nbreak\r\t", "f.rb:1", 1, 2, 3), 0);
	assert_int_equal(vt_profile_add_alloc(p, "\x01\x7f\xff\xfe", "h\xc3\xa9llo", "=", 4, 5, 6), 0);
	assert_int_equal(vt_profile_add_alloc(p, "", "", "", 0, 0, 0), 0);
	assert_int_equal(vt_profile_add_method_cache_reset(p, "Point", "translate", 3), 0);
	assert_int_equal(vt_profile_add_method_cache_reset(p, "Shape", NULL, 1), 0);
	assert_int_equal(vt_profile_add_constant_cache_reset(p, "LIMIT", 4), 0);
	assert_int_equal(vt_profile_add_global_serial_inc(p, "method redefined", 7), 0);
	assert_int_equal(vt_profile_add_gc_pause(p, &g1), 0);
	assert_int_equal(vt_profile_add_gc_pause(p, &g2), 0);
	hist[0] = 1;
	hist[13] = 4;
	hist[63] = 2;
	assert_int_equal(vt_profile_add_signal(p, 12, 5, 4, 40000, 20000, hist), 0);
	assert_int_equal(vt_profile_add_signal(p, 10, 1, 0, 0, 0, NULL), 0);
	assert_int_equal(vt_profile_add_call(p, "main", "app.py", 1), 0);
	assert_int_equal(vt_profile_add_lost(p, "alloc map full", 0), 0);
	assert_int_equal(vt_profile_add_lost(p, "unreadable string", 2), 0);
	assert_int_equal(vt_profile_add_free(p, "Point", 100, 3200), 0);
	assert_int_equal(vt_profile_add_event(p, &e1), 0);
	assert_int_equal(vt_profile_add_event(p, &e2), 0);
	struct vt_live l1 = { "Session", "Registry#remember", "w.c:1", 80, 5120, 40, 3, 192 };
	struct vt_live l2 = { "a b", "", "", 0, 0, 0, 7, 70 };
	assert_int_equal(vt_profile_add_live(p, &l1), 0);
	assert_int_equal(vt_profile_add_live(p, &l2), 0);
	p->live_info.max_tracked = 1000;
	p->live_info.temp_ns = 10000000;
	p->live_info.peak_bytes = 9999;
	p->live_info.peak_at_ns = -5;
	p->live_info.age_hist[3] = 2;
	p->live_info.age_hist[40] = 78;
	struct vt_series s1 = { "Session", 0, 10, 640, 0, 0, 640 };
	struct vt_series s2 = { "Session", 1, 5, 320, 2, 128, -3 };
	assert_int_equal(vt_profile_add_series(p, &s1), 0);
	assert_int_equal(vt_profile_add_series(p, &s2), 0);
	p->series_step_ns = 250000000;
}

static void assert_keyed_equal(const struct vt_keyed_count *a, const struct vt_keyed_count *b,
			       size_t n)
{
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(a[i].name, b[i].name);
		assert_string_equal(a[i].name2, b[i].name2);
		assert_int_equal(a[i].count, b[i].count);
	}
}

static void assert_profiles_equal(const struct vt_profile *a, const struct vt_profile *b)
{
	assert_string_equal(a->runtime, b->runtime);
	assert_string_equal(a->probes, b->probes);
	assert_string_equal(a->target, b->target);
	assert_int_equal(a->pid, b->pid);
	assert_memory_equal(&a->duration_s, &b->duration_s, sizeof(double));
	assert_int_equal(a->start_unix_ns, b->start_unix_ns);
	assert_int_equal(a->sample_period, b->sample_period);
	assert_int_equal(a->has_allocations, b->has_allocations);
	assert_int_equal(a->last_serial, b->last_serial);
	assert_memory_equal(a->gc_collections, b->gc_collections, sizeof(a->gc_collections));
	assert_int_equal(a->allocs.n, b->allocs.n);
	for (size_t i = 0; i < a->allocs.n; i++) {
		assert_string_equal(a->allocs.v[i].klass, b->allocs.v[i].klass);
		assert_string_equal(a->allocs.v[i].method, b->allocs.v[i].method);
		assert_string_equal(a->allocs.v[i].site, b->allocs.v[i].site);
		assert_int_equal(a->allocs.v[i].count, b->allocs.v[i].count);
		assert_int_equal(a->allocs.v[i].bytes, b->allocs.v[i].bytes);
		assert_int_equal(a->allocs.v[i].samples, b->allocs.v[i].samples);
	}
	assert_int_equal(a->method_cache_resets.n, b->method_cache_resets.n);
	assert_keyed_equal(a->method_cache_resets.v, b->method_cache_resets.v,
			   a->method_cache_resets.n);
	assert_int_equal(a->constant_cache_resets.n, b->constant_cache_resets.n);
	assert_keyed_equal(a->constant_cache_resets.v, b->constant_cache_resets.v,
			   a->constant_cache_resets.n);
	assert_int_equal(a->global_serial_incs.n, b->global_serial_incs.n);
	assert_keyed_equal(a->global_serial_incs.v, b->global_serial_incs.v,
			   a->global_serial_incs.n);
	assert_int_equal(a->calls.n, b->calls.n);
	assert_keyed_equal(a->calls.v, b->calls.v, a->calls.n);
	assert_memory_equal(a->gc_stats, b->gc_stats, sizeof(a->gc_stats));
	assert_int_equal(a->gc_pauses.n, b->gc_pauses.n);
	for (size_t i = 0; i < a->gc_pauses.n; i++) {
		const struct vt_gc_pause *x = &a->gc_pauses.v[i], *y = &b->gc_pauses.v[i];

		assert_int_equal(x->kind, y->kind);
		assert_int_equal(x->duration_ns, y->duration_ns);
		assert_int_equal(x->heap_bytes, y->heap_bytes);
		assert_int_equal(x->allocated_bytes, y->allocated_bytes);
		assert_int_equal(x->objects_collected, y->objects_collected);
		assert_int_equal(x->at_ns, y->at_ns);
		assert_int_equal(x->tid, y->tid);
	}
	assert_int_equal(a->events.n, b->events.n);
	for (size_t i = 0; i < a->events.n; i++) {
		const struct vt_event *x = &a->events.v[i], *y = &b->events.v[i];

		assert_int_equal(x->kind, y->kind);
		assert_int_equal(x->tid, y->tid);
		assert_int_equal(x->at_ns, y->at_ns);
		assert_int_equal(x->dur_ns, y->dur_ns);
		assert_int_equal(x->arg, y->arg);
		assert_int_equal(x->serial, y->serial);
		assert_string_equal(x->name, y->name);
		assert_string_equal(x->name2, y->name2);
	}
	assert_int_equal(a->signals.n, b->signals.n);
	for (size_t i = 0; i < a->signals.n; i++) {
		const struct vt_signal *x = &a->signals.v[i], *y = &b->signals.v[i];

		assert_int_equal(x->signo, y->signo);
		assert_int_equal(x->received, y->received);
		assert_int_equal(x->handled, y->handled);
		assert_int_equal(x->latency_total_ns, y->latency_total_ns);
		assert_int_equal(x->latency_max_ns, y->latency_max_ns);
		assert_memory_equal(x->latency_hist, y->latency_hist, sizeof(x->latency_hist));
	}
	assert_int_equal(a->lost.n, b->lost.n);
	for (size_t i = 0; i < a->lost.n; i++) {
		assert_string_equal(a->lost.v[i].what, b->lost.v[i].what);
		assert_int_equal(a->lost.v[i].count, b->lost.v[i].count);
	}
	assert_int_equal(a->frees.n, b->frees.n);
	for (size_t i = 0; i < a->frees.n; i++) {
		assert_string_equal(a->frees.v[i].klass, b->frees.v[i].klass);
		assert_int_equal(a->frees.v[i].count, b->frees.v[i].count);
		assert_int_equal(a->frees.v[i].bytes, b->frees.v[i].bytes);
	}
	assert_int_equal(a->live_info.on, b->live_info.on);
	assert_memory_equal(&a->live_info, &b->live_info, sizeof(a->live_info));
	assert_int_equal(a->series.n, b->series.n);
	assert_int_equal(a->series_step_ns, b->series_step_ns);
	for (size_t i = 0; i < a->series.n; i++) {
		assert_string_equal(a->series.v[i].klass, b->series.v[i].klass);
		assert_int_equal(a->series.v[i].step, b->series.v[i].step);
		assert_memory_equal(&a->series.v[i].allocs, &b->series.v[i].allocs, 5 * sizeof(uint64_t));
	}
	assert_int_equal(a->live.n, b->live.n);
	for (size_t i = 0; i < a->live.n; i++) {
		assert_string_equal(a->live.v[i].klass, b->live.v[i].klass);
		assert_string_equal(a->live.v[i].method, b->live.v[i].method);
		assert_string_equal(a->live.v[i].site, b->live.v[i].site);
		assert_memory_equal(&a->live.v[i].count, &b->live.v[i].count, 5 * sizeof(uint64_t));
	}
}

static size_t files_in_dir(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void empty_dir(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlink(in_dir(e->d_name));
	closedir(d);
}

static int setup(void **state)
{
	(void)state;
	empty_dir();
	return 0;
}

static void test_round_trip_exact(void **state)
{
	struct vt_profile a, b;
	char *t1, *t2;
	size_t n1, n2;

	(void)state;
	fill(&a);
	assert_int_equal(vt_profile_write(&a, in_dir("r1"), false), 0);
	assert_int_equal(vt_profile_read(&b, in_dir("r1")), 0);
	assert_profiles_equal(&a, &b);
	/* and again: the second file is byte for byte the first */
	assert_int_equal(vt_profile_write(&b, in_dir("r2"), false), 0);
	t1 = read_all(in_dir("r1"), &n1);
	t2 = read_all(in_dir("r2"), &n2);
	assert_int_equal(n1, n2);
	assert_memory_equal(t1, t2, n1);
	assert_int_equal(files_in_dir(), 2); /* no temporary file left behind */
	/* a read profile still merges through its adders */
	assert_int_equal(vt_profile_add_alloc(&b, "Point", "Geometry#translate", "", 1, 1, 1), 0);
	assert_int_equal(b.allocs.n, a.allocs.n);
	assert_int_equal(b.allocs.v[0].count, 124);
	free(t1);
	free(t2);
	vt_profile_free(&a);
	vt_profile_free(&b);
}

static void test_round_trip_empty(void **state)
{
	struct vt_profile a, b;

	(void)state;
	vt_profile_init(&a);
	assert_int_equal(vt_profile_write(&a, in_dir("empty"), false), 0);
	assert_int_equal(vt_profile_read(&b, in_dir("empty")), 0);
	assert_string_equal(b.runtime, "");
	assert_true(b.has_allocations);
	assert_int_equal(b.allocs.n, 0);
	vt_profile_free(&a);
	vt_profile_free(&b);
}

/* More pauses than the list keeps: the summary counts every one of them and
 * comes back exactly, beside the list of the longest. */
static void test_round_trip_gc_summary(void **state)
{
	struct vt_profile a, b;
	uint64_t total[2] = { 0 };

	(void)state;
	vt_profile_init(&a);
	assert_int_equal(vt_profile_set_meta(&a, "vmtrace", "gc__begin", "demovm", 7), 0);
	a.gc_pauses_limit = 16;
	for (uint64_t i = 0; i < 1000; i++) {
		struct vt_gc_pause g = { .kind = (int)(i % 2), .duration_ns = 1000 + i * 7919,
					 .allocated_bytes = i, .objects_collected = 2 * i,
					 .at_ns = (int64_t)i, .tid = 9 };

		total[i % 2] += g.duration_ns;
		assert_int_equal(vt_profile_add_gc_pause(&a, &g), 0);
	}
	assert_int_equal(a.gc_pauses.n, 16);
	assert_int_equal(a.gc_pauses.v[15].at_ns, 999);
	assert_int_equal(vt_profile_write(&a, in_dir("gcsum"), false), 0);
	assert_int_equal(vt_profile_read(&b, in_dir("gcsum")), 0);
	assert_profiles_equal(&a, &b);
	assert_int_equal(b.gc_stats[0].count, 500);
	assert_int_equal(b.gc_stats[1].count, 500);
	assert_int_equal(b.gc_stats[0].total_ns, total[0]);
	assert_int_equal(b.gc_stats[1].total_ns, total[1]);
	assert_int_equal(b.gc_stats[1].max_ns, 1000 + 999 * 7919);
	assert_int_equal(vt_gc_not_kept(&b, 0) + vt_gc_not_kept(&b, 1), 1000 - 16);
	vt_profile_free(&a);
	vt_profile_free(&b);
}

static void test_no_overwrite_without_force(void **state)
{
	struct vt_profile a, b;
	char *text;
	size_t len;

	(void)state;
	write_text(in_dir("taken"), "precious\n", 9);
	fill(&a);
	assert_int_equal(vt_profile_write(&a, in_dir("taken"), false), -EEXIST);
	text = read_all(in_dir("taken"), &len);
	assert_string_equal(text, "precious\n");
	free(text);
	assert_int_equal(files_in_dir(), 1);
	assert_int_equal(vt_profile_write(&a, in_dir("taken"), true), 0);
	assert_int_equal(vt_profile_read(&b, in_dir("taken")), 0);
	assert_profiles_equal(&a, &b);
	assert_int_equal(files_in_dir(), 1);
	/* a directory in the way, or no directory at all */
	assert_int_equal(vt_profile_write(&a, in_dir("missing/r"), false), -ENOENT);
	assert_int_equal(vt_profile_write(&a, "", false), -EINVAL);
	vt_profile_free(&a);
	vt_profile_free(&b);
}

static void test_write_honours_umask(void **state)
{
	struct vt_profile a;
	struct stat st;
	mode_t old = umask(027);

	(void)state;
	vt_profile_init(&a);
	assert_int_equal(vt_profile_write(&a, in_dir("mode"), false), 0);
	umask(old);
	assert_int_equal(stat(in_dir("mode"), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640);
	vt_profile_free(&a);
}

static int read_text(const char *text)
{
	struct vt_profile p;
	int err;

	write_text(in_dir("t"), text, strlen(text));
	err = vt_profile_read(&p, in_dir("t"));
	if (!err)
		vt_profile_free(&p);
	/* on failure the profile is left empty and freeable */
	assert_int_equal(p.allocs.n, 0);
	return err;
}

static void test_truncated_at_every_byte(void **state)
{
	struct vt_profile a, b;
	char *text;
	size_t len;

	(void)state;
	fill(&a);
	assert_int_equal(vt_profile_write(&a, in_dir("whole"), false), 0);
	text = read_all(in_dir("whole"), &len);
	for (size_t cut = 0; cut < len; cut++) {
		write_text(in_dir("cut"), text, cut);
		assert_int_equal(vt_profile_read(&b, in_dir("cut")), -EBADMSG);
		assert_int_equal(b.allocs.n, 0);
	}
	free(text);
	vt_profile_free(&a);
}

static const char *const meta[] = {
	"runtime =vmtrace", "probes =", "target =", "pid 1", "duration_s 0x0p+0",
	"sample_period 0", "has_allocations 1", "last_serial 0", "gc_collections 3 0 0 0",
};

/* A record of the meta lines and body; a body line that starts with a meta
 * key replaces that meta line, so each value is checked on its own. */
static int read_with(const char *body)
{
	size_t cap = strlen(body) + 4096, len = 0;
	char *text = malloc(cap);
	unsigned long items = 0;
	int err;

	assert_non_null(text);
	len += (size_t)snprintf(text + len, cap - len, "vmtrace-record 1\n");
	for (size_t i = 0; i < sizeof(meta) / sizeof(meta[0]); i++) {
		size_t key = strcspn(meta[i], " ");

		if (!strncmp(body, meta[i], key + 1))
			continue;
		len += (size_t)snprintf(text + len, cap - len, "%s\n", meta[i]);
		items++;
	}
	for (const char *c = body; *c; c++)
		items += *c == '\n';
	snprintf(text + len, cap - len, "%send %lu\n", body, items);
	err = read_text(text);
	free(text);
	return err;
}

static void test_well_formed_minimum(void **state)
{
	(void)state;
	assert_int_equal(read_with(""), 0);
	assert_int_equal(read_with("alloc =A =m =%25%0A 1 2 3\n"), 0);
	assert_int_equal(read_with("signal 12 1 1 5 5 2:1 3:4\n"), 0);
	assert_int_equal(read_with("gc_summary 1 2 30 20 0 0 0 3:1 4:1\ngc_pause 1 20 0 0 0\n"), 0);
	assert_int_equal(read_with("pid -2147483648\n"), 0);
	assert_int_equal(read_with("duration_s 0x1.4p+1\n"), 0);
	/* older gc_collections lines with fewer kinds read fine */
	assert_int_equal(read_text("vmtrace-record 1\n"
				   "runtime =vmtrace\nprobes =\ntarget =\npid 1\nduration_s 0x0p+0\n"
				   "sample_period 0\nhas_allocations 1\nlast_serial 0\n"
				   "gc_collections 2 4 5\nend 9\n"), 0);
}

/* A timeline written before its step was (version 3) is one of seconds; a
 * record with no timeline has no step. */
static void test_series_step_default(void **state)
{
	static const char head[] = "vmtrace-record 3\nruntime =vmtrace\nprobes =\ntarget =\npid 1\n"
				   "duration_s 0x0p+0\nsample_period 0\nhas_allocations 1\nlast_serial 0\n"
				   "gc_collections 3 0 0 0\n";
	struct vt_profile p;
	char text[512];

	(void)state;
	snprintf(text, sizeof(text), "%sseries =A 0 1 2 3 4 5\nend 10\n", head);
	write_text(in_dir("t"), text, strlen(text));
	assert_int_equal(vt_profile_read(&p, in_dir("t")), 0);
	assert_int_equal(p.series.n, 1);
	assert_int_equal(p.series_step_ns, 1000000000);
	vt_profile_free(&p);
	snprintf(text, sizeof(text), "%send 9\n", head);
	write_text(in_dir("t"), text, strlen(text));
	assert_int_equal(vt_profile_read(&p, in_dir("t")), 0);
	assert_int_equal(p.series_step_ns, 0);
	vt_profile_free(&p);
}

static void test_foreign_files(void **state)
{
	static const char binary[] = "\x7f" "ELF\x02\x01\x01\0\0\0\0";

	(void)state;
	assert_int_equal(read_text(""), -EBADMSG);
	assert_int_equal(read_text("{\"allocations\": []}\n"), -EBADMSG);
	assert_int_equal(read_text("vmtrace-record\n"), -EBADMSG);
	assert_int_equal(read_text("vmtrace-record x\n"), -EBADMSG);
	assert_int_equal(read_text("vmtrace-record 0\nend 0\n"), -EBADMSG);
	assert_int_equal(read_text("vmtrace-recorder 1\nend 0\n"), -EBADMSG);
	write_text(in_dir("elf"), binary, sizeof(binary) - 1);
	{
		struct vt_profile p;

		assert_int_equal(vt_profile_read(&p, in_dir("elf")), -EBADMSG);
		/* a NUL inside an otherwise good line */
		write_text(in_dir("nul"), "vmtrace-record 1\nruntime =a\0b\n", 29);
		assert_int_equal(vt_profile_read(&p, in_dir("nul")), -EBADMSG);
		assert_int_equal(vt_profile_read(&p, in_dir("does-not-exist")), -ENOENT);
		assert_int_equal(vt_profile_read(&p, dir), -EISDIR);
	}
}

static void test_newer_version(void **state)
{
	(void)state;
	assert_int_equal(read_text("vmtrace-record 6\nsomething new 1 2 3\nend 1\n"),
			 -EPROTONOSUPPORT);
	assert_int_equal(read_text("vmtrace-record 99999999999999999999\n"), -EBADMSG);
}

static void test_malformed_items(void **state)
{
	static const char *const bad[] = {
		"unknown =x 1\n",                 /* unknown item */
		"live =A =m = 1 2 3 4\n",         /* a live field missing */
		"series =A 0 1 2 3 4\n",          /* no live bytes */
		"series =A -1 1 2 3 4 5\n",       /* a negative step */
		"series_step 0\n",                /* no step */
		"series_step\n",
		"series_step 5 5\n",
		"series_step 5\nseries_step 5\n", /* twice */
		"live_heap 1 2 3\n",              /* no peak time */
		"live_heap 1 2 3 4 5:1 5:1\n",    /* a bucket twice */
		"alloc =A =m 1 2 3\n",            /* a field missing */
		"alloc =A =m = 1 2 3 4\n",        /* a field too many */
		"alloc A =m = 1 2 3\n",           /* string without '=' */
		"alloc =A =m = -1 2 3\n",         /* negative count */
		"alloc =A =m = 1 2 18446744073709551616\n", /* out of range */
		"alloc =A =m = 1 2 0x3\n",
		"alloc =A%0 =m = 1 2 3\n",        /* short escape */
		"alloc =A%00 =m = 1 2 3\n",       /* NUL escaped */
		"alloc =A%G1 =m = 1 2 3\n",       /* not hex */
		"alloc =A =m  = 1 2 3\n",         /* empty field */
		"alloc =A\t=m = 1 2 3\n",         /* raw control byte */
		"alloc =A =m = 1 2 3 \n",         /* trailing space */
		"pid 2147483648\n",
		"gc_summary 0 2 30 20 0 0 0 3:1\n",            /* histogram short of count */
		"gc_summary 0 1 30 40 0 0 0 3:1\n",            /* max above the total */
		"gc_summary 3 1 30 20 0 0 0 3:1\n",            /* no such kind */
		"gc_summary 0 1 3 2 0 0 0 0:1\ngc_summary 0 1 3 2 0 0 0 0:1\n", /* twice */
		"gc_pause 0 1 2 3 4\ngc_summary 0 1 1 1 0 0 0 0:1\n", /* after the list */
		"gc_summary 0 1 1 1 0 0 0 0:1\ngc_pause 0 1 0 0 0\ngc_pause 0 1 0 0 0\n",
		"has_allocations 2\n",
		"gc_collections 4 1 2 3 4\n",     /* more kinds than we know */
		"gc_collections 2 1\n",
		"signal 12 1 1 5 5 64:1\n",       /* bucket out of range */
		"signal 12 1 1 5 5 3:1 2:1\n",    /* buckets out of order */
		"signal 12 1 1 5 5 3\n",
		"signal 12 1 1 5 5\nsignal 12 1 1 5 5\n", /* one signal twice */
		"gc_pause 0 1 2 3\n",
		"duration_s abc\n",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (read_with(bad[i]) != -EBADMSG)
			fail_msg("accepted: %s", bad[i]);
	}
	/* duplicate or missing meta, wrong end count, anything after end */
	assert_int_equal(read_with("last_serial 1\nlast_serial 2\n"), -EBADMSG);
	assert_int_equal(read_text("vmtrace-record 1\nruntime =x\nend 1\n"), -EBADMSG);
	{
		static const char good[] =
			"vmtrace-record 1\n"
			"runtime =vmtrace\nprobes =\ntarget =\npid 1\nduration_s 0x0p+0\n"
			"sample_period 0\nhas_allocations 1\nlast_serial 0\ngc_collections 3 0 0 0\n";
		char text[1024];

		snprintf(text, sizeof(text), "%send 9\n", good);
		assert_int_equal(read_text(text), 0);
		snprintf(text, sizeof(text), "%send 8\n", good);
		assert_int_equal(read_text(text), -EBADMSG);
		snprintf(text, sizeof(text), "%send 9\nalloc =A =m = 1 2 3\n", good);
		assert_int_equal(read_text(text), -EBADMSG);
		snprintf(text, sizeof(text), "%send 9\r\n", good);
		assert_int_equal(read_text(text), -EBADMSG);
	}
}

/* A pipe whose writer never ends the line nor closes: a reader that
 * waited for the whole line would block for ever (the alarm turns that into
 * a failure); a bounded one refuses after its limit. */
static int read_endless(const char *head, size_t filler, char fill)
{
	struct vt_record_error e;
	struct vt_profile p;
	char path[64], buf[4096];
	int fds[2], err;
	pid_t writer;

	assert_int_equal(pipe(fds), 0);
	writer = fork();
	assert_true(writer >= 0);
	if (writer == 0) {
		close(fds[0]);
		memset(buf, fill, sizeof(buf));
		if (write(fds[1], head, strlen(head)) < 0)
			_exit(1);
		for (size_t done = 0; done < filler; done += sizeof(buf))
			if (write(fds[1], buf, sizeof(buf)) < 0)
				_exit(0); /* the reader gave up: what we want */
		pause();
		_exit(0);
	}
	close(fds[1]);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[0]);
	alarm(30);
	err = vt_profile_read_detail(&p, path, &e);
	alarm(0);
	kill(writer, SIGKILL);
	waitpid(writer, NULL, 0);
	close(fds[0]);
	return err == -EBADMSG ? (int)e.line : err;
}

static void test_bounded_reads(void **state)
{
	char *big;
	size_t len;

	(void)state;
	/* a foreign stream (/dev/zero, /dev/urandom, a log): refused on the
	 * magic line, after a few bytes */
	assert_int_equal(read_endless("", 1 << 16, 'x'), 1);
	assert_int_equal(read_endless("", 1 << 16, '\0'), 1);
	/* a line past the limit after a good magic: refused at that line */
	assert_int_equal(read_endless("vmtrace-record 1\nruntime =", VT_RECORD_LINE_MAX + 8192, 'a'), 2);
	/* at the limit exactly a line still reads: runtime =aaa...\n */
	len = VT_RECORD_LINE_MAX;
	big = malloc(len + 4096);
	assert_non_null(big);
	strcpy(big, "runtime =");
	memset(big + 9, 'a', len - 10);
	big[len - 1] = '\n';
	big[len] = '\0';
	assert_int_equal(read_with(big), 0);
	big[len - 1] = 'a';
	big[len] = '\n';
	big[len + 1] = '\0';
	assert_int_equal(read_with(big), -EBADMSG);
	free(big);
}

/* Where and why a damaged record failed. */
static void test_error_lines(void **state)
{
	static const struct {
		const char *text;
		unsigned long line;
		const char *what;
	} cases[] = {
		{ "hello\n", 1, "not a vmtrace record" },
		{ "vmtrace-record 1\nruntime =x\nfoo 1\n", 3, "unknown item 'foo'" },
		{ "vmtrace-record 1\nruntime =x\npid x\n", 3, "'pid' item malformed" },
		{ "vmtrace-record 1\nruntime =x\nruntime =y\n", 3, "'runtime' item malformed" },
		{ "vmtrace-record 1\nend 0\n", 2, "header item 'runtime' missing" },
		{ "vmtrace-record 1\nruntime =x\n", 0, "no end line" },
		{ "vmtrace-record 1\nruntime =x", 2, "cut short" },
		{ "vmtrace-record 1\nalloc =A =m = 9223372036854775808 0 0\n"
		  "alloc =B =m = 9223372036854775808 0 0\n", 3, "'alloc' item its counts overflow" },
	};
	struct vt_record_error e;
	struct vt_profile p;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		write_text(in_dir("e"), cases[i].text, strlen(cases[i].text));
		assert_int_equal(vt_profile_read_detail(&p, in_dir("e"), &e), -EBADMSG);
		if (e.line != cases[i].line || !strstr(e.what, cases[i].what))
			fail_msg("case %zu: line %lu '%s', want line %lu '%s'", i, e.line, e.what,
				 cases[i].line, cases[i].what);
	}
}

/* Crafted values no recording holds: sums past 2^64 (the report's totals
 * and merged rows would wrap), durations that are not a length of time. */
static void test_impossible_values(void **state)
{
	static const char *const bad[] = {
		/* the same key twice: the merged row would wrap */
		"alloc =A =m = 18446744073709551615 0 0\nalloc =A =m = 1 0 0\n",
		/* different keys: their total would wrap */
		"alloc =A =m = 9223372036854775808 0 0\nalloc =B =m = 9223372036854775808 0 0\n",
		"alloc =A =m = 0 18446744073709551615 0\nalloc =B =m = 0 1 0\n",
		"alloc =A =m = 0 0 18446744073709551615\nalloc =B =m = 0 0 1\n",
		"call =f =a.py 18446744073709551615\ncall =g =a.py 1\n",
		"lost =x 18446744073709551615\nlost =y 1\n",
		"free =A 18446744073709551615 0\nfree =B 1 0\n",
		"method_cache_reset =A =m 18446744073709551615\nmethod_cache_reset =B =m 1\n",
		"constant_cache_reset =A 18446744073709551615\nconstant_cache_reset =B 1\n",
		"global_serial_inc =A 18446744073709551615\nglobal_serial_inc =B 1\n",
		"gc_pause 0 18446744073709551615 0 0 0\ngc_pause 0 1 0 0 0\n",
		"gc_pause 0 0 0 18446744073709551615 0\ngc_pause 1 0 0 1 0\n",
		"signal 10 18446744073709551615 0 0 0\nsignal 12 1 0 0 0\n",
		"signal 10 0 0 18446744073709551615 0\nsignal 12 0 0 1 0\n",
		"signal 10 0 0 0 0 3:18446744073709551615 4:1\n",
		"gc_collections 3 18446744073709551615 1 0\n",
		"duration_s nan\n",
		"duration_s inf\n",
		"duration_s -inf\n",
		"duration_s -0x1p+0\n",
		"duration_s 1e308\n",
		"duration_s 0x1p+1000\n",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (read_with(bad[i]) != -EBADMSG)
			fail_msg("accepted: %s", bad[i]);
	/* the largest values that fit still read */
	assert_int_equal(read_with("alloc =A =m = 18446744073709551614 0 0\nalloc =B =m = 1 0 0\n"), 0);
	assert_int_equal(read_with("duration_s 0x1.2a05f2p+33\n"), 0); /* 1e10 s */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_round_trip_exact, setup),
		cmocka_unit_test_setup(test_round_trip_empty, setup),
		cmocka_unit_test_setup(test_round_trip_gc_summary, setup),
		cmocka_unit_test_setup(test_no_overwrite_without_force, setup),
		cmocka_unit_test_setup(test_write_honours_umask, setup),
		cmocka_unit_test_setup(test_truncated_at_every_byte, setup),
		cmocka_unit_test_setup(test_well_formed_minimum, setup),
		cmocka_unit_test_setup(test_series_step_default, setup),
		cmocka_unit_test_setup(test_foreign_files, setup),
		cmocka_unit_test_setup(test_newer_version, setup),
		cmocka_unit_test_setup(test_malformed_items, setup),
		cmocka_unit_test_setup(test_bounded_reads, setup),
		cmocka_unit_test_setup(test_error_lines, setup),
		cmocka_unit_test_setup(test_impossible_values, setup),
	};
	int failed;

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	failed = cmocka_run_group_tests(tests, NULL, NULL);
	empty_dir();
	rmdir(dir);
	return failed;
}
