/*
 * record_items.c: one record item (a line of docs/record-format.md) parsed
 * into a vt_profile. Every number is checked and every string unescaped
 * within its field; record_read.c reads the lines around them.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/record_format.h"
#include "record/record_items.h"

/* Splits line at single spaces; empty fields are malformed. */
int vt_record_split(char *line, char **field, int max)
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

int vt_record_get_u64(const char *s, uint64_t *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return (errno || *end) ? -1 : 0;
}

int vt_record_get_int(const char *s, long lo, long hi, long *out)
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

/* A frame's text: "=string", or "#N", the record's text line N. */
static int get_text(struct vt_profile *p, char *field, char **out)
{
	uint64_t n;
	const char *t;

	if (*field != '#')
		return get_str(field, out);
	if (vt_record_get_u64(field + 1, &n) || n == 0 || !(t = vt_stack_table_text(&p->stacks, n - 1)))
		return -1;
	*out = (char *)t;
	return 0;
}

/* "text =string": the next text line's number names it. Every text line
 * comes before the first stack, and each text once, so text line N is the
 * stack table's text N - 1. */
static int parse_text(struct vt_profile *p, char **f, int n, unsigned *seen)
{
	char *s;
	size_t before = vt_stack_table_ntexts(&p->stacks);
	int64_t i;

	if (n != 2 || (*seen & SEEN_STACK) || get_str(f[1], &s))
		return -1;
	i = vt_stack_table_text_add(&p->stacks, s);
	if (i < 0)
		return -ENOMEM;
	return (size_t)i == before ? 0 : -1; /* a new text, not one seen before */
}

/* "stack CUT DEPTH" then DEPTH times "NAME FILE line", root first, each
 * text "=string" or "#N": the next stack number. A stack seen before is
 * malformed (writers write each once, and numbers must follow the lines). */
static int parse_stack(struct vt_profile *p, char **f, int n, unsigned *seen)
{
	struct vt_frame frames[STACK_MAX_FRAMES];
	long cut, depth;
	uint32_t id;
	int err;

	*seen |= SEEN_STACK;
	if (n < 3 || vt_record_get_int(f[1], 0, 1, &cut) || vt_record_get_int(f[2], 1, STACK_MAX_FRAMES, &depth) ||
	    n != 3 + 3 * depth)
		return -1;
	for (long i = 0; i < depth; i++) {
		long line;

		if (get_text(p, f[3 + 3 * i], &frames[i].name) || get_text(p, f[4 + 3 * i], &frames[i].file) ||
		    vt_record_get_int(f[5 + 3 * i], INT32_MIN, INT32_MAX, &line))
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
		if (vt_record_get_int(f[i], 0, VT_HIST_BUCKETS - 1, &b) || b <= prev || vt_record_get_u64(colon + 1, &hist[b]))
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

	if (n < 8 || vt_record_get_int(f[1], 0, VT_GC_KINDS - 1, &kind) || (*seen & SEEN_GC_PAUSE))
		return -1;
	bit = (unsigned)SEEN_GC_SUMMARY << (1 + kind);
	if (*seen & bit)
		return -1;
	for (int i = 0; i < 6; i++)
		if (vt_record_get_u64(f[2 + i], u[i]))
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

int vt_record_parse_item(struct vt_profile *p, char **f, int n, unsigned *seen)
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
		if (n != 2 || once(seen, SEEN_PID) || vt_record_get_int(f[1], INT32_MIN, INT32_MAX, &l))
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
		if (n != 2 || once(seen, SEEN_PERIOD) || vt_record_get_u64(f[1], &p->sample_period))
			return -1;
		return 0;
	}
	if (!strcmp(key, "has_allocations")) {
		if (n != 2 || once(seen, SEEN_HAS_ALLOCS) || vt_record_get_int(f[1], 0, 1, &l))
			return -1;
		p->has_allocations = l == 1;
		return 0;
	}
	if (!strcmp(key, "start_unix_ns")) {
		if (n != 2 || once(seen, SEEN_START) || vt_record_get_u64(f[1], &p->start_unix_ns))
			return -1;
		return 0;
	}
	if (!strcmp(key, "last_serial")) {
		if (n != 2 || once(seen, SEEN_SERIAL) || vt_record_get_u64(f[1], &p->last_serial))
			return -1;
		return 0;
	}
	if (!strcmp(key, "gc_collections")) {
		if (n < 2 || once(seen, SEEN_GC) || vt_record_get_int(f[1], 0, VT_GC_KINDS, &l) || n != 2 + l)
			return -1;
		uint64_t sum = 0;

		for (long k = 0; k < l; k++) {
			if (vt_record_get_u64(f[2 + k], &p->gc_collections[k]))
				return -1;
			if (__builtin_add_overflow(sum, p->gc_collections[k], &sum))
				return -EOVERFLOW;
		}
		return 0;
	}
	if (!strcmp(key, "alloc")) {
		if (n != 7 || get_str(f[1], &s1) || get_str(f[2], &s2) || get_str(f[3], &s3) ||
		    vt_record_get_u64(f[4], &u[0]) || vt_record_get_u64(f[5], &u[1]) || vt_record_get_u64(f[6], &u[2]))
			return -1;
		return vt_profile_add_alloc(p, s1, s2, s3, u[0], u[1], u[2]);
	}
	if (!strcmp(key, "text"))
		return parse_text(p, f, n, seen);
	if (!strcmp(key, "stack"))
		return parse_stack(p, f, n, seen);
	if (!strcmp(key, "alloc_stack")) {
		if (n != 8 || vt_record_get_u64(f[1], &u[3]) || u[3] == 0 || u[3] > p->stacks.n ||
		    get_str(f[2], &s1) || get_str(f[3], &s2) || get_str(f[4], &s3) ||
		    vt_record_get_u64(f[5], &u[0]) || vt_record_get_u64(f[6], &u[1]) || vt_record_get_u64(f[7], &u[2]))
			return -1;
		return vt_profile_add_alloc_stack(p, s1, s2, s3, (uint32_t)u[3], u[0], u[1], u[2]);
	}
	if (!strcmp(key, "process")) {
		uint32_t id;

		if (n != 4 || vt_record_get_int(f[1], 1, INT32_MAX, &l) || get_str(f[2], &s1) ||
		    get_str(f[3], &s2))
			return -1;
		u[0] = p->procs.n;
		int err = vt_profile_add_process(p, (int32_t)l, s1, s2, &id);

		/* a pid twice is a damaged record, not a second process */
		return err ? err : (id <= u[0] ? -1 : 0);
	}
	if (!strcmp(key, "alloc_process")) {
		if (n != 9 || vt_record_get_u64(f[1], &u[3]) || u[3] == 0 || u[3] > p->procs.n ||
		    vt_record_get_u64(f[2], &u[4]) || u[4] > p->stacks.n ||
		    get_str(f[3], &s1) || get_str(f[4], &s2) || get_str(f[5], &s3) ||
		    vt_record_get_u64(f[6], &u[0]) || vt_record_get_u64(f[7], &u[1]) || vt_record_get_u64(f[8], &u[2]))
			return -1;
		return vt_profile_add_alloc_proc(p, (uint32_t)u[3], s1, s2, s3, (uint32_t)u[4], u[0],
						 u[1], u[2]);
	}
	if (!strcmp(key, "method_cache_reset") || !strcmp(key, "call")) {
		if (n != 4 || get_str(f[1], &s1) || get_str(f[2], &s2) || vt_record_get_u64(f[3], &u[0]))
			return -1;
		if (key[0] == 'c')
			return vt_profile_add_call(p, s1, s2, u[0]);
		return vt_profile_add_method_cache_reset(p, s1, s2, u[0]);
	}
	if (!strcmp(key, "constant_cache_reset") || !strcmp(key, "global_serial_inc") ||
	    !strcmp(key, "lost")) {
		if (n != 3 || get_str(f[1], &s1) || vt_record_get_u64(f[2], &u[0]))
			return -1;
		if (key[0] == 'c')
			return vt_profile_add_constant_cache_reset(p, s1, u[0]);
		if (key[0] == 'g')
			return vt_profile_add_global_serial_inc(p, s1, u[0]);
		return vt_profile_add_lost(p, s1, u[0]);
	}
	if (!strcmp(key, "free")) {
		if (n != 4 || get_str(f[1], &s1) || vt_record_get_u64(f[2], &u[0]) || vt_record_get_u64(f[3], &u[1]))
			return -1;
		return vt_profile_add_free(p, s1, u[0], u[1]);
	}
	if (!strcmp(key, "gc_pause")) {
		struct vt_gc_pause g = { 0 };

		/* version 1: no start and thread */
		if ((n != 6 && n != 8) || vt_record_get_int(f[1], INT_MIN, INT_MAX, &l))
			return -1;
		for (int i = 0; i < 4; i++)
			if (vt_record_get_u64(f[2 + i], &u[i]))
				return -1;
		if (n == 8) {
			long at, tid;

			if (vt_record_get_int(f[6], LONG_MIN, LONG_MAX, &at) || vt_record_get_int(f[7], 0, UINT32_MAX, &tid))
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

		if (n != 9 || vt_record_get_int(f[1], 0, VT_EVENT__COUNT - 1, &kind) ||
		    vt_record_get_int(f[2], 0, UINT32_MAX, &tid) || vt_record_get_int(f[3], LONG_MIN, LONG_MAX, &at) ||
		    vt_record_get_u64(f[4], &e.dur_ns) || vt_record_get_int(f[5], LONG_MIN, LONG_MAX, &arg) ||
		    vt_record_get_u64(f[6], &e.serial) || get_str(f[7], &s1) || get_str(f[8], &s2))
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
		    vt_record_get_u64(f[4], &r.count) || vt_record_get_u64(f[5], &r.bytes) || vt_record_get_u64(f[6], &r.objects) ||
		    vt_record_get_u64(f[7], &r.temp_count) || vt_record_get_u64(f[8], &r.temp_bytes))
			return -1;
		return vt_profile_add_live(p, &r);
	}
	if (!strcmp(key, "series")) {
		struct vt_series row = { 0 };
		long sec, live;

		if (n != 8 || get_str(f[1], &row.klass) || vt_record_get_int(f[2], 0, UINT32_MAX, &sec) ||
		    vt_record_get_u64(f[3], &row.allocs) || vt_record_get_u64(f[4], &row.alloc_bytes) ||
		    vt_record_get_u64(f[5], &row.frees) || vt_record_get_u64(f[6], &row.free_bytes) ||
		    vt_record_get_int(f[7], LONG_MIN, LONG_MAX, &live))
			return -1;
		row.step = (uint32_t)sec;
		row.live_bytes = live;
		return vt_profile_add_series(p, &row);
	}
	if (!strcmp(key, "series_step")) {
		if (n != 2 || once(seen, SEEN_SERIES_STEP) || vt_record_get_u64(f[1], &p->series_step_ns) ||
		    !p->series_step_ns)
			return -1;
		return 0;
	}
	if (!strcmp(key, "live_heap")) {
		struct vt_live_info *li = &p->live_info;

		if (n < 5 || once(seen, SEEN_LIVE_HEAP) || vt_record_get_u64(f[1], &li->max_tracked) ||
		    vt_record_get_u64(f[2], &li->temp_ns) || vt_record_get_u64(f[3], &li->peak_bytes) ||
		    vt_record_get_int(f[4], LONG_MIN, LONG_MAX, &l))
			return -1;
		li->peak_at_ns = l;
		if (get_hist(f + 5, n - 5, li->age_hist))
			return -1;
		li->on = true;
		return 0;
	}
	if (!strcmp(key, "signal")) {
		uint64_t hist[VT_HIST_BUCKETS] = { 0 };

		if (n < 6 || vt_record_get_int(f[1], INT_MIN, INT_MAX, &l))
			return -1;
		for (int i = 0; i < 4; i++)
			if (vt_record_get_u64(f[2 + i], &u[i]))
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

