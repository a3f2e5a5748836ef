/*
 * record_read.c: a record file (docs/record-format.md) read back into a
 * vt_profile. Every read is bounded, every number checked, and a damaged
 * file is refused with the line and the reason; record_write.c says how the
 * file is laid out.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile.h"
#include "record_format.h"

enum {
	SEEN_RUNTIME = 1 << 0,
	SEEN_PROBES = 1 << 1,
	SEEN_TARGET = 1 << 2,
	SEEN_PID = 1 << 3,
	SEEN_DURATION = 1 << 4,
	SEEN_PERIOD = 1 << 5,
	SEEN_HAS_ALLOCS = 1 << 6,
	SEEN_SERIAL = 1 << 7,
	SEEN_GC = 1 << 8,
	SEEN_ALL = (1 << 9) - 1,
	SEEN_START = 1 << 9,     /* optional: version 1 records lack it */
	SEEN_LIVE_HEAP = 1 << 10, /* optional: with --live (version 3) */
	SEEN_GC_PAUSE = 1 << 11, /* gc_summary lines come before every gc_pause */
	SEEN_GC_SUMMARY = 1 << 12, /* then each kind's once: bit SEEN_GC_SUMMARY << (1 + kind) */
};

#define STACK_MAX_FRAMES 128     /* frames of a `stack` line at most */
/* the longest items: a signal with its histogram, a stack of 128 frames */
#define MAX_FIELDS (3 + 3 * STACK_MAX_FRAMES > 4 + VT_HIST_BUCKETS + 2 ? 3 + 3 * STACK_MAX_FRAMES \
							      : 4 + VT_HIST_BUCKETS + 2)

/* Splits line at single spaces; empty fields are malformed. */
static int split(char *line, char **field, int max)
{
	int n = 0;

	for (char *s = line;;) {
		char *sp = strchr(s, ' ');

		if (n == max || sp == s || !*s)
			return -1;
		field[n++] = s;
		if (!sp)
			return n;
		*sp = '\0';
		s = sp + 1;
	}
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Decodes an =escaped field in place. */
static int get_str(char *field, char **out)
{
	char *w = field;

	if (*field != '=')
		return -1;
	for (const char *r = field + 1; *r; r++) {
		unsigned char c = (unsigned char)*r;

		if (c == '%') {
			int hi = hexval(r[1]), lo = hi < 0 ? -1 : hexval(r[2]);

			if (lo < 0 || (hi | lo) == 0)
				return -1;
			*w++ = (char)(hi << 4 | lo);
			r += 2;
		} else if (c > 0x20 && c < 0x7f) {
			*w++ = (char)c;
		} else {
			return -1;
		}
	}
	*w = '\0';
	*out = field;
	return 0;
}

static int get_u64(const char *s, uint64_t *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return (errno || *end) ? -1 : 0;
}

static int get_int(const char *s, long lo, long hi, long *out)
{
	char *end;

	if (!((*s >= '0' && *s <= '9') || (*s == '-' && s[1] >= '0' && s[1] <= '9')))
		return -1;
	errno = 0;
	*out = strtol(s, &end, 10);
	return (errno || *end || *out < lo || *out > hi) ? -1 : 0;
}

static int once(unsigned *seen, unsigned bit)
{
	if (*seen & bit)
		return -1;
	*seen |= bit;
	return 0;
}

/* "stack CUT DEPTH" then DEPTH times "=name =file line", root first: the
 * next stack number. A stack seen before is malformed (writers write each
 * once, and numbers must follow the lines). */
static int parse_stack(struct vt_profile *p, char **f, int n)
{
	struct vt_frame frames[STACK_MAX_FRAMES];
	long cut, depth;
	uint32_t id;
	int err;

	if (n < 3 || get_int(f[1], 0, 1, &cut) || get_int(f[2], 1, STACK_MAX_FRAMES, &depth) ||
	    n != 3 + 3 * depth)
		return -1;
	for (long i = 0; i < depth; i++) {
		long line;

		if (get_str(f[3 + 3 * i], &frames[i].name) || get_str(f[4 + 3 * i], &frames[i].file) ||
		    get_int(f[5 + 3 * i], INT32_MIN, INT32_MAX, &line))
			return -1;
		frames[i].line = line;
	}
	size_t before = p->stacks.n;

	err = vt_profile_add_stack(p, frames, (uint32_t)depth, cut == 1, &id);
	if (err)
		return err == -EINVAL ? -1 : err;
	return id == before + 1 ? 0 : -1; /* a new stack, not one seen before */
}

/* One item line: 0, -1 when malformed, -ENOMEM. */
/* n `B:COUNT` fields of a log2 histogram, B increasing, into hist. */
static int get_hist(char **f, int n, uint64_t hist[VT_HIST_BUCKETS])
{
	long prev = -1;

	for (int i = 0; i < n; i++) {
		char *colon = strchr(f[i], ':');
		long b;

		if (!colon)
			return -1;
		*colon = '\0';
		if (get_int(f[i], 0, VT_HIST_BUCKETS - 1, &b) || b <= prev || get_u64(colon + 1, &hist[b]))
			return -1;
		prev = b;
	}
	return 0;
}

/* "gc_summary KIND COUNT TOTAL_NS MAX_NS ALLOCATED ALLOCATED_MAX OBJECTS
 * [BUCKET:COUNT ...]": every pause of a kind, before the gc_pause lines. */
static int parse_gc_summary(struct vt_profile *p, char **f, int n, unsigned *seen)
{
	struct vt_gc_stats g = { 0 };
	uint64_t *u[6] = { &g.count, &g.total_ns, &g.max_ns, &g.allocated_bytes, &g.allocated_max,
			   &g.objects_collected };
	uint64_t in_hist = 0;
	long kind;
	unsigned bit;

	if (n < 8 || get_int(f[1], 0, VT_GC_KINDS - 1, &kind) || (*seen & SEEN_GC_PAUSE))
		return -1;
	bit = (unsigned)SEEN_GC_SUMMARY << (1 + kind);
	if (*seen & bit)
		return -1;
	for (int i = 0; i < 6; i++)
		if (get_u64(f[2 + i], u[i]))
			return -1;
	if (get_hist(f + 8, n - 8, g.hist))
		return -1;
	for (int b = 0; b < VT_HIST_BUCKETS; b++)
		if (__builtin_add_overflow(in_hist, g.hist[b], &in_hist))
			return -1;
	/* the histogram holds every pause counted; the largest is no more than all */
	if (in_hist != g.count || g.max_ns > g.total_ns || g.allocated_max > g.allocated_bytes)
		return -1;
	*seen |= SEEN_GC_SUMMARY | bit;
	return vt_profile_add_gc_stats(p, (int)kind, &g);
}

static int parse_item(struct vt_profile *p, char **f, int n, unsigned *seen)
{
	const char *key = f[0];
	char *s1, *s2, *s3;
	uint64_t u[5];
	long l;

	if (!strcmp(key, "runtime") || !strcmp(key, "probes") || !strcmp(key, "target")) {
		char **dst = key[0] == 'r' ? &p->runtime : key[0] == 'p' ? &p->probes : &p->target;
		unsigned bit = key[0] == 'r' ? SEEN_RUNTIME : key[0] == 'p' ? SEEN_PROBES : SEEN_TARGET;

		if (n != 2 || once(seen, bit) || get_str(f[1], &s1))
			return -1;
		*dst = strdup(s1);
		return *dst ? 0 : -ENOMEM;
	}
	if (!strcmp(key, "pid")) {
		if (n != 2 || once(seen, SEEN_PID) || get_int(f[1], INT32_MIN, INT32_MAX, &l))
			return -1;
		p->pid = (int32_t)l;
		return 0;
	}
	if (!strcmp(key, "duration_s")) {
		char *end;

		if (n != 2 || once(seen, SEEN_DURATION))
			return -1;
		p->duration_s = strtod(f[1], &end);
		/* a length of time: never NaN, infinite, negative or absurd */
		if (*end || !isfinite(p->duration_s) || p->duration_s < 0 ||
		    p->duration_s > VT_RECORD_DURATION_MAX)
			return -1;
		return 0;
	}
	if (!strcmp(key, "sample_period")) {
		if (n != 2 || once(seen, SEEN_PERIOD) || get_u64(f[1], &p->sample_period))
			return -1;
		return 0;
	}
	if (!strcmp(key, "has_allocations")) {
		if (n != 2 || once(seen, SEEN_HAS_ALLOCS) || get_int(f[1], 0, 1, &l))
			return -1;
		p->has_allocations = l == 1;
		return 0;
	}
	if (!strcmp(key, "start_unix_ns")) {
		if (n != 2 || once(seen, SEEN_START) || get_u64(f[1], &p->start_unix_ns))
			return -1;
		return 0;
	}
	if (!strcmp(key, "last_serial")) {
		if (n != 2 || once(seen, SEEN_SERIAL) || get_u64(f[1], &p->last_serial))
			return -1;
		return 0;
	}
	if (!strcmp(key, "gc_collections")) {
		if (n < 2 || once(seen, SEEN_GC) || get_int(f[1], 0, VT_GC_KINDS, &l) || n != 2 + l)
			return -1;
		uint64_t sum = 0;

		for (long k = 0; k < l; k++) {
			if (get_u64(f[2 + k], &p->gc_collections[k]))
				return -1;
			if (__builtin_add_overflow(sum, p->gc_collections[k], &sum))
				return -EOVERFLOW;
		}
		return 0;
	}
	if (!strcmp(key, "alloc")) {
		if (n != 7 || get_str(f[1], &s1) || get_str(f[2], &s2) || get_str(f[3], &s3) ||
		    get_u64(f[4], &u[0]) || get_u64(f[5], &u[1]) || get_u64(f[6], &u[2]))
			return -1;
		return vt_profile_add_alloc(p, s1, s2, s3, u[0], u[1], u[2]);
	}
	if (!strcmp(key, "stack"))
		return parse_stack(p, f, n);
	if (!strcmp(key, "alloc_stack")) {
		if (n != 8 || get_u64(f[1], &u[3]) || u[3] == 0 || u[3] > p->stacks.n ||
		    get_str(f[2], &s1) || get_str(f[3], &s2) || get_str(f[4], &s3) ||
		    get_u64(f[5], &u[0]) || get_u64(f[6], &u[1]) || get_u64(f[7], &u[2]))
			return -1;
		return vt_profile_add_alloc_stack(p, s1, s2, s3, (uint32_t)u[3], u[0], u[1], u[2]);
	}
	if (!strcmp(key, "process")) {
		uint32_t id;

		if (n != 4 || get_int(f[1], 1, INT32_MAX, &l) || get_str(f[2], &s1) ||
		    get_str(f[3], &s2))
			return -1;
		u[0] = p->procs.n;
		int err = vt_profile_add_process(p, (int32_t)l, s1, s2, &id);

		/* a pid twice is a damaged record, not a second process */
		return err ? err : (id <= u[0] ? -1 : 0);
	}
	if (!strcmp(key, "alloc_process")) {
		if (n != 9 || get_u64(f[1], &u[3]) || u[3] == 0 || u[3] > p->procs.n ||
		    get_u64(f[2], &u[4]) || u[4] > p->stacks.n ||
		    get_str(f[3], &s1) || get_str(f[4], &s2) || get_str(f[5], &s3) ||
		    get_u64(f[6], &u[0]) || get_u64(f[7], &u[1]) || get_u64(f[8], &u[2]))
			return -1;
		return vt_profile_add_alloc_proc(p, (uint32_t)u[3], s1, s2, s3, (uint32_t)u[4], u[0],
						 u[1], u[2]);
	}
	if (!strcmp(key, "method_cache_reset") || !strcmp(key, "call")) {
		if (n != 4 || get_str(f[1], &s1) || get_str(f[2], &s2) || get_u64(f[3], &u[0]))
			return -1;
		if (key[0] == 'c')
			return vt_profile_add_call(p, s1, s2, u[0]);
		return vt_profile_add_method_cache_reset(p, s1, s2, u[0]);
	}
	if (!strcmp(key, "constant_cache_reset") || !strcmp(key, "global_serial_inc") ||
	    !strcmp(key, "lost")) {
		if (n != 3 || get_str(f[1], &s1) || get_u64(f[2], &u[0]))
			return -1;
		if (key[0] == 'c')
			return vt_profile_add_constant_cache_reset(p, s1, u[0]);
		if (key[0] == 'g')
			return vt_profile_add_global_serial_inc(p, s1, u[0]);
		return vt_profile_add_lost(p, s1, u[0]);
	}
	if (!strcmp(key, "free")) {
		if (n != 4 || get_str(f[1], &s1) || get_u64(f[2], &u[0]) || get_u64(f[3], &u[1]))
			return -1;
		return vt_profile_add_free(p, s1, u[0], u[1]);
	}
	if (!strcmp(key, "gc_pause")) {
		struct vt_gc_pause g = { 0 };

		/* version 1: no start and thread */
		if ((n != 6 && n != 8) || get_int(f[1], INT_MIN, INT_MAX, &l))
			return -1;
		for (int i = 0; i < 4; i++)
			if (get_u64(f[2 + i], &u[i]))
				return -1;
		if (n == 8) {
			long at, tid;

			if (get_int(f[6], LONG_MIN, LONG_MAX, &at) || get_int(f[7], 0, UINT32_MAX, &tid))
				return -1;
			g.at_ns = at;
			g.tid = (uint32_t)tid;
		}
		g.kind = (int)l;
		g.duration_ns = u[0];
		g.heap_bytes = u[1];
		g.allocated_bytes = u[2];
		g.objects_collected = u[3];
		*seen |= SEEN_GC_PAUSE;
		/* with a summary, the list is what was kept of the pauses it counts */
		if (*seen & SEEN_GC_SUMMARY)
			return vt_profile_keep_gc_pause(p, &g);
		return vt_profile_add_gc_pause(p, &g);
	}
	if (!strcmp(key, "gc_summary"))
		return parse_gc_summary(p, f, n, seen);
	if (!strcmp(key, "event")) {
		struct vt_event e = { 0 };
		long kind, tid, at, arg;

		if (n != 9 || get_int(f[1], 0, VT_EVENT__COUNT - 1, &kind) ||
		    get_int(f[2], 0, UINT32_MAX, &tid) || get_int(f[3], LONG_MIN, LONG_MAX, &at) ||
		    get_u64(f[4], &e.dur_ns) || get_int(f[5], LONG_MIN, LONG_MAX, &arg) ||
		    get_u64(f[6], &e.serial) || get_str(f[7], &s1) || get_str(f[8], &s2))
			return -1;
		e.kind = (int)kind;
		e.tid = (uint32_t)tid;
		e.at_ns = at;
		e.arg = arg;
		e.name = s1;
		e.name2 = s2;
		return vt_profile_add_event(p, &e);
	}
	if (!strcmp(key, "live")) {
		struct vt_live r = { 0 };

		if (n != 9 || get_str(f[1], &r.klass) || get_str(f[2], &r.method) || get_str(f[3], &r.site) ||
		    get_u64(f[4], &r.count) || get_u64(f[5], &r.bytes) || get_u64(f[6], &r.objects) ||
		    get_u64(f[7], &r.temp_count) || get_u64(f[8], &r.temp_bytes))
			return -1;
		return vt_profile_add_live(p, &r);
	}
	if (!strcmp(key, "series")) {
		struct vt_series row = { 0 };
		long sec, live;

		if (n != 8 || get_str(f[1], &row.klass) || get_int(f[2], 0, UINT32_MAX, &sec) ||
		    get_u64(f[3], &row.allocs) || get_u64(f[4], &row.alloc_bytes) ||
		    get_u64(f[5], &row.frees) || get_u64(f[6], &row.free_bytes) ||
		    get_int(f[7], LONG_MIN, LONG_MAX, &live))
			return -1;
		row.second = (uint32_t)sec;
		row.live_bytes = live;
		return vt_profile_add_series(p, &row);
	}
	if (!strcmp(key, "live_heap")) {
		struct vt_live_info *li = &p->live_info;

		if (n < 5 || once(seen, SEEN_LIVE_HEAP) || get_u64(f[1], &li->max_tracked) ||
		    get_u64(f[2], &li->temp_ns) || get_u64(f[3], &li->peak_bytes) ||
		    get_int(f[4], LONG_MIN, LONG_MAX, &l))
			return -1;
		li->peak_at_ns = l;
		if (get_hist(f + 5, n - 5, li->age_hist))
			return -1;
		li->on = true;
		return 0;
	}
	if (!strcmp(key, "signal")) {
		uint64_t hist[VT_HIST_BUCKETS] = { 0 };

		if (n < 6 || get_int(f[1], INT_MIN, INT_MAX, &l))
			return -1;
		for (int i = 0; i < 4; i++)
			if (get_u64(f[2 + i], &u[i]))
				return -1;
		if (get_hist(f + 6, n - 6, hist))
			return -1;
		/* a signal appears once: adding a second row would merge silently */
		for (size_t i = 0; i < p->signals.n; i++)
			if (p->signals.v[i].signo == (int)l)
				return -1;
		return vt_profile_add_signal(p, (int)l, u[0], u[1], u[2], u[3], hist);
	}
	return -ENOENT; /* an unknown keyword */
}

/* Why the item on a line was refused, for the error message. */
static const char *item_problem(int r)
{
	return r == -EOVERFLOW ? "its counts overflow the totals (more than 2^64)" : "malformed";
}

static void set_error(struct vt_record_error *e, unsigned long line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_error(struct vt_record_error *e, unsigned long line, const char *fmt, ...)
{
	va_list ap;

	e->line = line;
	va_start(ap, fmt);
	vsnprintf(e->what, sizeof(e->what), fmt, ap);
	va_end(ap);
}

/*
 * One line into *buf, at most max bytes with its '\n'. Returns its length
 * (0 at the end of the file), -E2BIG when no '\n' comes within max bytes,
 * -EBADMSG for a NUL byte, -errno on a read error. Bounded, so that
 * /dev/zero or a multi-gigabyte line costs max bytes, not the whole input.
 */
static ssize_t read_line(FILE *f, char **buf, size_t *cap, size_t max)
{
	size_t len = 0;
	int c;

	while ((c = getc_unlocked(f)) != EOF) {
		if (len + 2 > *cap) {
			size_t ncap = *cap ? *cap * 2 : 256;
			char *nb;

			if (ncap > max + 1)
				ncap = max + 1;
			if (len + 2 > ncap)
				return -E2BIG;
			nb = realloc(*buf, ncap);
			if (!nb)
				return -ENOMEM;
			*buf = nb;
			*cap = ncap;
		}
		if (c == '\0')
			return -EBADMSG;
		(*buf)[len++] = (char)c;
		if (c == '\n')
			break;
	}
	if (ferror(f))
		return errno ? -errno : -EIO;
	if (*buf)
		(*buf)[len] = '\0';
	return (ssize_t)len;
}

static const char *missing_header(unsigned seen)
{
	static const char *const names[] = { "runtime", "probes", "target", "pid", "duration_s",
					     "sample_period", "has_allocations", "last_serial",
					     "gc_collections" };

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!(seen & (1u << i)))
			return names[i];
	return "?";
}

static int read_lines(struct vt_profile *p, FILE *f, struct vt_record_error *e)
{
	char *line = NULL, *field[MAX_FIELDS], key[32];
	size_t cap = 0;
	unsigned long items = 0, lineno = 0;
	unsigned seen = 0;
	bool ended = false;
	ssize_t len;
	int err = -EBADMSG;

	for (;;) {
		int n;

		/* the magic line is short: refuse a foreign file after a few bytes */
		len = read_line(f, &line, &cap, lineno ? VT_RECORD_LINE_MAX : RECORD_MAGIC_LINE_MAX);
		lineno++;
		if (len == 0)
			break;
		if (len == -ENOMEM || (len < 0 && len != -E2BIG && len != -EBADMSG)) {
			err = (int)len;
			set_error(e, lineno, "%s", strerror(-err));
			goto out;
		}
		if (lineno == 1 && len < 0) {
			set_error(e, 1, "not a vmtrace record (no '%s' line)", RECORD_MAGIC);
			goto out;
		}
		if (len == -E2BIG) {
			set_error(e, lineno, "longer than %d bytes", VT_RECORD_LINE_MAX);
			goto out;
		}
		if (len == -EBADMSG) {
			set_error(e, lineno, "holds a NUL byte");
			goto out;
		}
		if (line[len - 1] != '\n') {
			set_error(e, lineno, "cut short (no newline): the file is truncated");
			goto out;
		}
		if (ended) {
			set_error(e, lineno, "text after the end line");
			goto out;
		}
		line[len - 1] = '\0';
		n = split(line, field, MAX_FIELDS);
		if (lineno == 1) {
			long version;

			if (n != 2 || strcmp(field[0], RECORD_MAGIC) ||
			    get_int(field[1], 1, LONG_MAX, &version)) {
				set_error(e, 1, "not a vmtrace record (no '%s' line)", RECORD_MAGIC);
				goto out;
			}
			if (version > RECORD_VERSION) {
				set_error(e, 1, "format version %ld is newer than this reader's (%d)",
					  version, RECORD_VERSION);
				err = -EPROTONOSUPPORT;
				goto out;
			}
			continue;
		}
		if (n < 0) {
			set_error(e, lineno, "malformed (empty field, or too many fields)");
			goto out;
		}
		snprintf(key, sizeof(key), "%s", field[0]);
		if (!strcmp(field[0], "end")) {
			uint64_t declared;

			if (n != 2 || get_u64(field[1], &declared)) {
				set_error(e, lineno, "malformed end line");
				goto out;
			}
			if (declared != items) {
				set_error(e, lineno, "end says %" PRIu64 " items, the file holds %lu",
					  declared, items);
				goto out;
			}
			if ((seen & SEEN_ALL) != SEEN_ALL) {
				set_error(e, lineno, "header item '%s' missing", missing_header(seen));
				goto out;
			}
			if ((seen & SEEN_GC_SUMMARY) && !vt_gc_list_fits(p)) {
				set_error(e, lineno, "more gc_pause lines than gc_summary counts");
				goto out;
			}
			ended = true;
			continue;
		}
		n = parse_item(p, field, n, &seen);
		if (n == -ENOMEM) {
			err = -ENOMEM;
			set_error(e, lineno, "%s", strerror(ENOMEM));
			goto out;
		}
		if (n == -ENOENT) {
			set_error(e, lineno, "unknown item '%s'", key);
			goto out;
		}
		if (n) {
			set_error(e, lineno, "'%s' item %s", key, item_problem(n));
			goto out;
		}
		items++;
	}
	if (ended)
		err = 0;
	else
		set_error(e, 0, lineno == 1 ? "empty file" : "no end line: the file is truncated");
out:
	free(line);
	return err;
}

int vt_profile_read_stream(struct vt_profile *p, FILE *f, struct vt_record_error *e)
{
	struct vt_record_error ignored;
	int err;

	if (!e)
		e = &ignored;
	memset(e, 0, sizeof(*e));
	vt_profile_init(p);
	err = read_lines(p, f, e);
	if (err)
		vt_profile_free(p);
	return err;
}

int vt_profile_read_detail(struct vt_profile *p, const char *path, struct vt_record_error *e)
{
	FILE *f = fopen(path, "re");
	int err;

	if (!f) {
		err = -errno;
		if (e)
			memset(e, 0, sizeof(*e));
		vt_profile_init(p);
		return err;
	}
	err = vt_profile_read_stream(p, f, e);
	fclose(f);
	return err;
}

int vt_profile_read(struct vt_profile *p, const char *path)
{
	return vt_profile_read_detail(p, path, NULL);
}
