/*
 * report_model.c: the report model (report_model.h): grouping and sorting
 * of the allocation list, keyed lists, pause statistics, GC summaries.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_model.h"

static const char *const group_names[] = {
	[VT_BY_CLASS_METHOD] = "class,method", [VT_BY_CLASS] = "class",
	[VT_BY_METHOD] = "method", [VT_BY_SITE] = "site", [VT_BY_STACK] = "stack",
};
static const char *const sort_names[] = {
	[VT_SORT_COUNT] = "count", [VT_SORT_BYTES] = "bytes",
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static int lookup(const char *s, const char *const *names, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		if (!strcmp(s, names[i]))
			return (int)i;
	return -EINVAL;
}

int vt_parse_group(const char *s, enum vt_group *out)
{
	int i = lookup(s, group_names, ARRAY_SIZE(group_names));

	if (i < 0)
		return i;
	*out = (enum vt_group)i;
	return 0;
}

int vt_parse_sort(const char *s, enum vt_sort *out)
{
	int i = lookup(s, sort_names, ARRAY_SIZE(sort_names));

	if (i < 0)
		return i;
	*out = (enum vt_sort)i;
	return 0;
}

const char *vt_group_name(enum vt_group g)
{
	return (unsigned)g < ARRAY_SIZE(group_names) ? group_names[g] : "?";
}

const char *vt_sort_name(enum vt_sort s)
{
	return (unsigned)s < ARRAY_SIZE(sort_names) ? sort_names[s] : "?";
}

/* ---- allocation table ---- */

static int strcmp_null(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

int vt_alloc_row_cmp(const void *pa, const void *pb)
{
	const struct vt_alloc_row *a = pa, *b = pb;
	int c = strcmp_null(a->cgroup, b->cgroup);

	if (!c)
		c = a->pid < b->pid ? -1 : a->pid > b->pid;
	if (!c)
		c = strcmp_null(a->klass, b->klass);
	if (!c)
		c = strcmp_null(a->stack, b->stack);
	if (!c)
		c = strcmp_null(a->method, b->method);
	if (!c)
		c = strcmp_null(a->site, b->site);
	return c;
}

static int cmp_u64_desc(uint64_t a, uint64_t b)
{
	return a > b ? -1 : a < b;
}

static int cmp_rows_by_count(const void *pa, const void *pb)
{
	const struct vt_alloc_row *a = pa, *b = pb;
	int c = cmp_u64_desc(a->count, b->count);

	if (!c)
		c = cmp_u64_desc(a->bytes, b->bytes);
	return c ? c : vt_alloc_row_cmp(pa, pb);
}

static int cmp_rows_by_bytes(const void *pa, const void *pb)
{
	const struct vt_alloc_row *a = pa, *b = pb;
	int c = cmp_u64_desc(a->bytes, b->bytes);

	if (!c)
		c = cmp_u64_desc(a->count, b->count);
	return c ? c : vt_alloc_row_cmp(pa, pb);
}

char *vt_stack_text(const struct vt_stack *s)
{
	size_t len = s->cut ? 7 : 1;
	char *out, *w;

	for (uint32_t i = 0; i < s->depth; i++)
		len += strlen(s->frames[i].name) + 1;
	out = w = malloc(len);
	if (!out)
		return NULL;
	if (s->cut)
		w = stpcpy(w, "[cut];");
	for (uint32_t i = 0; i < s->depth; i++) {
		for (const char *c = s->frames[i].name; *c; c++)
			*w++ = *c == ';' ? ':' : *c;
		if (i + 1 < s->depth)
			*w++ = ';';
	}
	*w = '\0';
	return out;
}

/* --by stack: each stack's text once, for the rows to point at. */
static int stack_texts(const struct vt_profile *p, struct vt_alloc_table *t)
{
	if (!p->stacks.n)
		return 0;
	t->texts = calloc(p->stacks.n, sizeof(*t->texts));
	if (!t->texts)
		return -ENOMEM;
	t->ntexts = p->stacks.n;
	for (size_t i = 0; i < p->stacks.n; i++)
		if (!(t->texts[i] = vt_stack_text(&p->stacks.v[i])))
			return -ENOMEM;
	return 0;
}

bool vt_report_by_pid(const struct vt_profile *p, const struct vt_report_opts *opts)
{
	return p->procs.n && ((opts->per & VT_PER_PID) || p->procs.n > 1);
}

bool vt_report_by_cgroup(const struct vt_profile *p, const struct vt_report_opts *opts)
{
	return p->procs.n && (opts->per & VT_PER_CGROUP);
}

const char *vt_report_group_name(const struct vt_profile *p, const struct vt_report_opts *opts,
				 char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", vt_report_by_cgroup(p, opts) ? "cgroup," : "",
		 vt_report_by_pid(p, opts) ? "pid," : "", vt_group_name(opts->by));
	return buf;
}

int vt_alloc_table_build(const struct vt_profile *p, const struct vt_report_opts *opts,
			 struct vt_alloc_table *t)
{
	bool by_pid = vt_report_by_pid(p, opts), by_cgroup = vt_report_by_cgroup(p, opts);
	size_t n = p->allocs.n, out = 0;
	struct vt_alloc_row *rows;

	memset(t, 0, sizeof(*t));
	if (!n)
		return 0;
	rows = calloc(n, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	t->rows = rows;
	if (opts->by == VT_BY_STACK && stack_texts(p, t)) {
		vt_alloc_table_free(t);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const struct vt_alloc *a = &p->allocs.v[i];
		struct vt_alloc_row *r = &rows[i];

		r->klass = opts->by == VT_BY_METHOD || opts->by == VT_BY_STACK ? NULL : a->klass;
		r->method = opts->by == VT_BY_CLASS || opts->by == VT_BY_STACK ? NULL : a->method;
		r->site = opts->by == VT_BY_SITE ? a->site : NULL;
		/* a row without a stack stands for its method */
		if (opts->by == VT_BY_STACK)
			r->stack = a->stack ? t->texts[a->stack - 1] : a->method;
		if (by_cgroup && a->proc)
			r->cgroup = p->procs.v[a->proc - 1].cgroup;
		if (by_pid && a->proc) {
			r->pid = p->procs.v[a->proc - 1].pid;
			r->comm = p->procs.v[a->proc - 1].comm;
			r->proc = a->proc;
		}
		r->count = a->count;
		r->bytes = a->bytes;
		r->samples = a->samples;
		t->total_count += a->count;
		t->total_bytes += a->bytes;
		t->total_samples += a->samples;
	}
	/* merge rows whose remaining keys are equal */
	qsort(rows, n, sizeof(*rows), vt_alloc_row_cmp);
	for (size_t i = 0; i < n; i++) {
		if (out && !vt_alloc_row_cmp(&rows[out - 1], &rows[i])) {
			rows[out - 1].count += rows[i].count;
			rows[out - 1].bytes += rows[i].bytes;
			rows[out - 1].samples += rows[i].samples;
		} else {
			rows[out++] = rows[i];
		}
	}
	qsort(rows, out, sizeof(*rows),
	      opts->sort == VT_SORT_BYTES ? cmp_rows_by_bytes : cmp_rows_by_count);
	t->rows = rows;
	t->total_rows = out;
	t->n = opts->top && opts->top < out ? opts->top : out;
	return 0;
}

void vt_alloc_table_free(struct vt_alloc_table *t)
{
	if (!t)
		return;
	free(t->rows);
	for (size_t i = 0; i < t->ntexts; i++)
		free(t->texts[i]);
	free(t->texts);
	memset(t, 0, sizeof(*t));
}

static int cmp_keyed(const void *pa, const void *pb)
{
	const struct vt_keyed_count *a = *(const struct vt_keyed_count *const *)pa;
	const struct vt_keyed_count *b = *(const struct vt_keyed_count *const *)pb;
	int c = cmp_u64_desc(a->count, b->count);

	if (!c)
		c = strcmp_null(a->name, b->name);
	return c ? c : strcmp_null(a->name2, b->name2);
}

const struct vt_keyed_count **vt_keyed_sorted(const struct vt_keyed_count *v, size_t n,
					      size_t top, size_t *kept)
{
	const struct vt_keyed_count **s;

	*kept = 0;
	if (!n)
		return NULL;
	s = malloc(n * sizeof(*s));
	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i++)
		s[i] = &v[i];
	qsort(s, n, sizeof(*s), cmp_keyed);
	*kept = top && top < n ? top : n;
	return s;
}

/* ---- pauses ---- */

uint64_t vt_percentile(const uint64_t *sorted, size_t n, unsigned pct)
{
	size_t rank;

	if (!n)
		return 0;
	if (pct > 100)
		pct = 100;
	rank = (pct * n + 99) / 100; /* ceil(pct/100 * n) */
	return sorted[rank ? rank - 1 : 0];
}

static int cmp_u64(const void *pa, const void *pb)
{
	uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;

	return a < b ? -1 : a > b;
}

/* Nearest-rank percentile from a log2 histogram of microseconds: the upper
 * edge of the bucket holding that rank, at most the largest pause. */
static uint64_t hist_percentile(const uint64_t *hist, uint64_t n, uint64_t max_ns, unsigned pct)
{
	uint64_t rank = (pct * (unsigned __int128)n + 99) / 100, seen = 0;

	for (int b = 0; b < VT_HIST_BUCKETS; b++) {
		seen += hist[b];
		if (seen >= rank && seen) {
			uint64_t edge = b < 53 ? ((uint64_t)1000 << (b + 1)) : UINT64_MAX;

			return edge < max_ns ? edge : max_ns;
		}
	}
	return max_ns;
}

int vt_pause_stats(const struct vt_profile *p, int kind, struct vt_pause_stats *s)
{
	uint64_t hist[VT_HIST_BUCKETS] = { 0 };
	uint64_t *d;
	size_t n = 0;
	bool complete = true;

	memset(s, 0, sizeof(*s));
	/* count, total and max from the summary: exact whatever the list keeps */
	for (int k = 0; k < VT_GC_KINDS; k++) {
		const struct vt_gc_stats *g = &p->gc_stats[k];

		if (kind >= 0 && k != kind)
			continue;
		s->pauses += g->count;
		s->total_ns += g->total_ns;
		if (g->max_ns > s->max_ns)
			s->max_ns = g->max_ns;
		for (int b = 0; b < VT_HIST_BUCKETS; b++)
			hist[b] += g->hist[b];
		s->not_kept += vt_gc_not_kept(p, k);
	}
	if (!s->pauses)
		return 0;
	s->mean_ns = s->total_ns / s->pauses;
	complete = s->not_kept == 0;
	if (!complete) {
		s->estimated = true;
		s->p50_ns = hist_percentile(hist, s->pauses, s->max_ns, 50);
		s->p99_ns = hist_percentile(hist, s->pauses, s->max_ns, 99);
		return 0;
	}
	d = malloc(p->gc_pauses.n * sizeof(*d));
	if (!d)
		return -ENOMEM;
	for (size_t i = 0; i < p->gc_pauses.n; i++) {
		int k = p->gc_pauses.v[i].kind;

		if (k < 0 || k >= VT_GC_KINDS || (kind >= 0 && k != kind))
			continue;
		d[n++] = p->gc_pauses.v[i].duration_ns;
	}
	qsort(d, n, sizeof(*d), cmp_u64);
	s->p50_ns = vt_percentile(d, n, 50);
	s->p99_ns = vt_percentile(d, n, 99);
	free(d);
	return 0;
}

bool vt_gc_kind_shown(const struct vt_profile *p, int kind)
{
	if (kind < 0 || kind >= VT_GC_KINDS)
		return false;
	if (kind < 2 || (p->runtime && !strcmp(p->runtime, "python")))
		return true;
	return p->gc_collections[kind] || p->gc_stats[kind].count;
}

void vt_gc_summarize(const struct vt_profile *p, struct vt_gc_summary *out)
{
	memset(out, 0, sizeof(*out));
	for (int k = 0; k < VT_GC_KINDS; k++) {
		const struct vt_gc_stats *g = &p->gc_stats[k];

		out->pauses += g->count;
		out->not_kept += vt_gc_not_kept(p, k);
		out->allocated_total += g->allocated_bytes;
		if (g->allocated_max > out->allocated_max)
			out->allocated_max = g->allocated_max;
		out->objects_collected += g->objects_collected;
		for (int b = 0; b < VT_HIST_BUCKETS; b++)
			out->hist[b] += g->hist[b];
	}
}

int vt_log2_bucket(uint64_t v)
{
	int b = 0;

	while (v > 1) {
		v >>= 1;
		b++;
	}
	return b;
}

/* First match wins: the names of every adapter's loss counters (their
 * loss_names tables, vmtrace_maps.h's VT_LOSS_LIST, continuous.c's push). */
static const struct {
	const char *part;            /* a part of the counter's name */
	struct vt_loss_touch touch;
} loss_touches[] = {
	{ "before counting", { "allocations", true } },
	{ "first exact sample", { "allocations", true } },
	{ "push ", { "pushes only", false } },
	{ "timeline", { "timeline only", false } },
	{ "gc pause", { "pause list only", false } },
	{ "thread stack map full", { "methods only", false } },
	{ "frame name map", { "frame names only", false } },
	{ "stack", { "stacks only", false } },
	{ "live", { "the live heap", true } },
	{ "temporary allocation", { "the live heap's temporaries", true } },
	{ "buffer an address", { "the live heap", true } },
	{ "free map", { "frees", true } },
	{ "method cache reset", { "method cache resets", true } },
	{ "constant cache reset", { "constant cache resets", true } },
	{ "global serial", { "global serial increments", true } },
	{ "signal number", { "signals", true } },
	{ "bus dropped", { "its own bus only", false } },
	{ "gc", { "GC collections and pauses", true } },
	{ "methods unknown", { "methods only", false } },
	{ "site unknown", { "sites only", false } },
	{ "no method", { "methods only", false } },
	{ "no function", { "functions only", false } },
	{ "frame walk", { "methods only", false } },
	{ "method map", { "methods only", false } },
	{ "method deeper", { "methods only", false } },
	{ "name a callee", { "methods only", false } },
	{ "method probes silent", { "methods only", false } },
	{ "first line", { "lines only", false } },
	{ "size", { "bytes", true } },
	{ "call map", { "calls", true } },
	{ "function map", { "calls", true } },
	{ "string", { "names only", false } },
	{ "name", { "names only", false } },
	{ "batch", { "allocations and frees", true } },
	{ "process table", { "the processes it missed", true } },
	{ "2^47", { "the processes it missed", true } },
	{ "alloc", { "allocations", true } },
	{ "object", { "allocations", true } },
	{ "provider could not count", { "allocations", true } },
};

struct vt_loss_touch vt_loss_touches(const char *what)
{
	static const struct vt_loss_touch unknown = { "the figures above", true };
	char lower[256];
	size_t i;

	for (i = 0; what && what[i] && i + 1 < sizeof(lower); i++)
		lower[i] = (char)tolower((unsigned char)what[i]);
	lower[i] = '\0';
	for (i = 0; i < sizeof(loss_touches) / sizeof(loss_touches[0]); i++)
		if (strstr(lower, loss_touches[i].part))
			return loss_touches[i].touch;
	return unknown;
}
