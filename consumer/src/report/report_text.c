/*
 * report_text.c: the report for people: aligned tables, one section per
 * kind of event, the loss counters always last and always shown.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_live.h"
#include "report/report_fmt.h"
#include "report/report_model.h"

/* ---- a table of cells, aligned on printing ---- */

struct table {
	int ncols;
	const char *align;           /* 'l' or 'r' per column */
	char **cells;                /* row-major */
	size_t n, cap;
	int err;
};

static void table_init(struct table *t, int ncols, const char *align)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
	t->align = align;
}

static void table_push(struct table *t, char *s)
{
	if (!s) {
		t->err = -ENOMEM;
		return;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		char **c = realloc(t->cells, cap * sizeof(*c));

		if (!c) {
			free(s);
			t->err = -ENOMEM;
			return;
		}
		t->cells = c;
		t->cap = cap;
	}
	t->cells[t->n++] = s;
}

__attribute__((format(printf, 2, 3)))
static void cell(struct table *t, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	table_push(t, s);
}

static void cell_u64(struct table *t, uint64_t v)
{
	cell(t, "%llu", (unsigned long long)v);
}

/* A name as the terminal should show it (vt_text_name); "" as empty_as. */
static void cell_name(struct table *t, const char *name, const char *empty_as)
{
	if (!name || !*name) {
		cell(t, "%s", empty_as);
		return;
	}
	table_push(t, vt_text_name(name));
}

static void cell_rate(struct table *t, const struct vt_profile *p, uint64_t v)
{
	cell(t, "%.1f", (double)v / p->duration_s);
}

static void cell_share(struct table *t, uint64_t part, uint64_t total)
{
	if (total)
		cell(t, "%.1f%%", 100.0 * (double)part / (double)total);
	else
		cell(t, "-");
}

static void cell_ns(struct table *t, uint64_t ns)
{
	char buf[32];

	cell(t, "%s", vt_format_ns(ns, buf, sizeof(buf)));
}

static size_t display_width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	return w;
}

static int table_print(FILE *out, struct table *t, const char *indent)
{
	size_t *width, rows;

	if (t->err)
		return t->err;
	width = calloc((size_t)t->ncols, sizeof(*width));
	if (!width)
		return -ENOMEM;
	rows = t->n / (size_t)t->ncols;
	for (size_t i = 0; i < rows * (size_t)t->ncols; i++) {
		size_t w = display_width(t->cells[i]);

		if (w > width[i % (size_t)t->ncols])
			width[i % (size_t)t->ncols] = w;
	}
	for (size_t r = 0; r < rows; r++) {
		char **row = &t->cells[r * (size_t)t->ncols];
		int last = t->ncols - 1;

		/* no trailing blanks: stop at the last non-empty cell */
		while (last > 0 && !*row[last])
			last--;
		fputs(indent, out);
		for (int c = 0; c <= last; c++) {
			size_t pad = width[c] - display_width(row[c]);

			if (c)
				fputs("  ", out);
			if (t->align[c] == 'r')
				fprintf(out, "%*s%s", (int)pad, "", row[c]);
			else if (c < last)
				fprintf(out, "%s%*s", row[c], (int)pad, "");
			else
				fputs(row[c], out);
		}
		fputc('\n', out);
	}
	free(width);
	return 0;
}

static int table_done(FILE *out, struct table *t, const char *indent)
{
	int err = table_print(out, t, indent);

	for (size_t i = 0; i < t->n; i++)
		free(t->cells[i]);
	free(t->cells);
	return err;
}

/* ---- sections ---- */

static void print_escaped(FILE *out, const char *s, const char *empty_as)
{
	struct table t;

	table_init(&t, 1, "l");
	cell_name(&t, s, empty_as);
	if (!t.err)
		fputs(t.cells[0], out);
	for (size_t i = 0; i < t.n; i++)
		free(t.cells[i]);
	free(t.cells);
}

static void print_header(FILE *out, const struct vt_profile *p)
{
	fputs("vmtrace report: runtime ", out);
	print_escaped(out, p->runtime, "unknown");
	fprintf(out, ", pid %d", (int)p->pid);
	if (p->duration_s > 0)
		fprintf(out, ", %.3f s", p->duration_s);
	fputc('\n', out);
	if (p->target && *p->target) {
		fputs("target: ", out);
		print_escaped(out, p->target, "");
		fputc('\n', out);
	}
	fputs("probes: ", out);
	print_escaped(out, p->probes, "(none recorded)");
	fputc('\n', out);
	if (p->sample_period && p->has_allocations)
		fprintf(out, "Allocation counts and bytes are estimates from sampling every %llu bytes;\n"
			"SAMPLES is the number of probe hits behind each row.\n",
			(unsigned long long)p->sample_period);
}

static const char *group_phrase(enum vt_group by)
{
	switch (by) {
	case VT_BY_CLASS: return "class";
	case VT_BY_METHOD: return "method";
	case VT_BY_SITE: return "class, method and site";
	case VT_BY_STACK: return "stack (root first)";
	default: return "class and method";
	}
}

static int print_allocations(FILE *out, const struct vt_profile *p,
			     const struct vt_report_opts *o)
{
	bool rates = p->duration_s > 0, sampled = p->sample_period != 0;
	struct vt_alloc_table at;
	char align[16], *a = align;
	struct table t;
	int keys = 0, err;

	if (!p->has_allocations) {
		fputs("\nAllocations: the ", out);
		print_escaped(out, p->runtime, "traced");
		fputs(" runtime has no allocation probes.\n", out);
		return 0;
	}
	err = vt_alloc_table_build(p, o, &at);
	if (err)
		return err;
	if (!at.total_rows) {
		fputs("\nAllocations: none recorded.\n", out);
		return 0;
	}
	bool by_pid = vt_report_by_pid(p, o), by_cgroup = vt_report_by_cgroup(p, o);

	fprintf(out, "\nAllocations by %s%s%s, sorted by %s:\n", by_cgroup ? "cgroup, " : "",
		by_pid ? "process, " : "", group_phrase(o->by), vt_sort_name(o->sort));
	if (by_cgroup)
		*a++ = 'l', keys++;
	if (by_pid)
		*a++ = 'r', *a++ = 'l', keys += 2;
	if (o->by != VT_BY_METHOD && o->by != VT_BY_STACK)
		*a++ = 'l', keys++;
	if (o->by != VT_BY_CLASS)
		*a++ = 'l', keys++;
	if (o->by == VT_BY_SITE)
		*a++ = 'l', keys++;
	memcpy(a, "rrrr", 4), a += 4;
	if (sampled)
		*a++ = 'r';
	if (rates)
		*a++ = 'r', *a++ = 'r';
	*a = '\0';
	table_init(&t, (int)(a - align), align);
	if (by_cgroup)
		cell(&t, "CGROUP");
	if (by_pid)
		cell(&t, "PID"), cell(&t, "COMM");
	if (o->by != VT_BY_METHOD && o->by != VT_BY_STACK)
		cell(&t, "CLASS");
	if (o->by != VT_BY_CLASS)
		cell(&t, o->by == VT_BY_STACK ? "STACK" : "METHOD");
	if (o->by == VT_BY_SITE)
		cell(&t, "SITE");
	cell(&t, "COUNT"), cell(&t, "COUNT%%"), cell(&t, "BYTES"), cell(&t, "BYTES%%");
	if (sampled)
		cell(&t, "SAMPLES");
	if (rates)
		cell(&t, "COUNT/s"), cell(&t, "BYTES/s");
	for (size_t i = 0; i <= at.n; i++) {
		bool total = i == at.n;
		struct vt_alloc_row r = total ? (struct vt_alloc_row){
			.count = at.total_count, .bytes = at.total_bytes,
			.samples = at.total_samples } : at.rows[i];

		if (total) {
			cell(&t, "total");
			for (int k = 1; k < keys; k++)
				cell(&t, "%s", "");
		} else {
			if (by_cgroup)
				cell_name(&t, r.cgroup, "-");
			if (by_pid)
				cell(&t, "%d", (int)r.pid), cell_name(&t, r.comm, "-");
			if (o->by != VT_BY_METHOD && o->by != VT_BY_STACK)
				cell_name(&t, r.klass, "-");
			if (o->by != VT_BY_CLASS)
				cell_name(&t, o->by == VT_BY_STACK ? r.stack : r.method, "-");
			if (o->by == VT_BY_SITE)
				cell_name(&t, r.site, "-");
		}
		cell_u64(&t, r.count);
		cell_share(&t, r.count, at.total_count);
		cell_u64(&t, r.bytes);
		cell_share(&t, r.bytes, at.total_bytes);
		if (sampled)
			cell_u64(&t, r.samples);
		if (rates)
			cell_rate(&t, p, r.count), cell_rate(&t, p, r.bytes);
	}
	err = table_done(out, &t, "  ");
	if (!err && at.n < at.total_rows)
		fprintf(out, "  (the top %zu of %zu rows; the total covers all of them)\n", at.n,
			at.total_rows);
	vt_alloc_table_free(&at);
	return err;
}

static int cmp_free(const void *pa, const void *pb)
{
	const struct vt_free *a = *(const struct vt_free *const *)pa;
	const struct vt_free *b = *(const struct vt_free *const *)pb;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return strcmp(a->klass, b->klass);
}

static int print_frees(FILE *out, const struct vt_profile *p)
{
	const struct vt_free **v;
	struct table t;

	if (!p->frees.n)
		return 0;
	v = malloc(p->frees.n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < p->frees.n; i++)
		v[i] = &p->frees.v[i];
	qsort(v, p->frees.n, sizeof(*v), cmp_free);
	fputs("\nFrees by class:\n", out);
	table_init(&t, 3, "lrr");
	cell(&t, "CLASS"), cell(&t, "COUNT"), cell(&t, "BYTES");
	for (size_t i = 0; i < p->frees.n; i++) {
		cell_name(&t, v[i]->klass, "-");
		cell_u64(&t, v[i]->count);
		cell_u64(&t, v[i]->bytes);
	}
	free(v);
	return table_done(out, &t, "  ");
}

static int print_gc(FILE *out, const struct vt_profile *p)
{
	uint64_t collections = 0;
	bool rates = p->duration_s > 0;
	struct vt_pause_stats st;
	struct table t;
	int err;

	for (int k = 0; k < VT_GC_KINDS; k++)
		collections += p->gc_collections[k];
	struct vt_gc_summary sum;
	vt_gc_summarize(p, &sum);
	if (!collections && !sum.pauses) {
		fputs("\nGC: no collections recorded.\n", out);
		return 0;
	}
	fputs("\nGC impact:\n", out);
	table_init(&t, rates ? 9 : 8, rates ? "lrrrrrrrr" : "lrrrrrrr");
	cell(&t, "KIND"), cell(&t, "COLLECTIONS");
	if (rates)
		cell(&t, "COLLECTIONS/s");
	cell(&t, "PAUSES"), cell(&t, "TOTAL"), cell(&t, "MEAN"), cell(&t, "P50"), cell(&t, "P99");
	cell(&t, "MAX");
	for (int i = 0; i <= VT_GC_KINDS; i++) {
		int kind = i < VT_GC_KINDS ? i : -1; /* each kind, then "all" */
		uint64_t n = kind < 0 ? collections : p->gc_collections[kind];

		if (kind >= 0 && !vt_gc_kind_shown(p, kind))
			continue;
		err = vt_pause_stats(p, kind, &st);
		if (err) {
			t.err = err;
			break;
		}
		cell(&t, "%s", kind < 0 ? "all" : vt_gc_kind_name(p, kind));
		cell_u64(&t, n);
		if (rates)
			cell_rate(&t, p, n);
		cell_u64(&t, st.pauses);
		if (st.pauses) {
			cell_ns(&t, st.total_ns), cell_ns(&t, st.mean_ns), cell_ns(&t, st.p50_ns);
			cell_ns(&t, st.p99_ns), cell_ns(&t, st.max_ns);
		} else {
			for (int i = 0; i < 5; i++)
				cell(&t, "-");
		}
	}
	err = table_done(out, &t, "  ");
	if (err || !sum.pauses)
		return err;
	if (collections > sum.pauses)
		fprintf(out, "  %llu collections have no pause record\n",
			(unsigned long long)(collections - sum.pauses));
	if (sum.not_kept)
		fprintf(out, "  the pause list keeps the %zu longest of %llu pauses; P50 and P99 "
			"are estimated from the histogram\n",
			p->gc_pauses.n, (unsigned long long)sum.pauses);
	if (sum.allocated_total)
		fprintf(out, "  bytes allocated per collection: mean %llu, max %llu\n",
			(unsigned long long)(sum.allocated_total / sum.pauses),
			(unsigned long long)sum.allocated_max);
	if (sum.objects_collected)
		fprintf(out, "  objects collected: %llu, mean %llu per collection\n",
			(unsigned long long)sum.objects_collected,
			(unsigned long long)(sum.objects_collected / sum.pauses));
	fputs("  pause distribution:\n", out);
	vt_print_log2_hist(out, sum.hist, VT_HIST_BUCKETS, "usecs", "    ");
	return 0;
}

/* A keyed-count section: one or two name columns, COUNT, per second. */
static int print_keyed(FILE *out, const struct vt_profile *p, const char *title,
		       const char *col1, const char *col2, const char *empty2,
		       const struct vt_keyed_count *v, size_t n, size_t top)
{
	bool rates = p->duration_s > 0;
	const struct vt_keyed_count **s;
	int ncols = (col2 ? 2 : 1) + 1 + (rates ? 1 : 0);
	uint64_t total = 0;
	size_t kept;
	struct table t;
	int err;

	if (!n) {
		fprintf(out, "\n%s: none.\n", title);
		return 0;
	}
	s = vt_keyed_sorted(v, n, top, &kept);
	if (!s)
		return -ENOMEM;
	fprintf(out, "\n%s:\n", title);
	table_init(&t, ncols, col2 ? "llrr" : "lrr");
	cell(&t, "%s", col1);
	if (col2)
		cell(&t, "%s", col2);
	cell(&t, "COUNT");
	if (rates)
		cell(&t, "COUNT/s");
	for (size_t i = 0; i < n; i++)
		total += v[i].count;
	for (size_t i = 0; i <= kept; i++) {
		uint64_t c = i < kept ? s[i]->count : total;

		if (i < kept) {
			cell_name(&t, s[i]->name, "-");
			if (col2)
				cell_name(&t, s[i]->name2, empty2);
		} else {
			cell(&t, "total");
			if (col2)
				cell(&t, "%s", "");
		}
		cell_u64(&t, c);
		if (rates)
			cell_rate(&t, p, c);
	}
	free(s);
	err = table_done(out, &t, "  ");
	if (!err && kept < n)
		fprintf(out, "  (the top %zu of %zu rows; the total covers all of them)\n", kept, n);
	return err;
}

static int cmp_signal(const void *pa, const void *pb)
{
	const struct vt_signal *a = *(const struct vt_signal *const *)pa;
	const struct vt_signal *b = *(const struct vt_signal *const *)pb;

	return a->signo < b->signo ? -1 : a->signo > b->signo;
}

static int print_signals(FILE *out, const struct vt_profile *p)
{
	bool rates = p->duration_s > 0;
	const struct vt_signal **v;
	struct table t;
	char name[32];
	int err;

	if (!p->signals.n) {
		fputs("\nSignals: none received.\n", out);
		return 0;
	}
	v = malloc(p->signals.n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < p->signals.n; i++)
		v[i] = &p->signals.v[i];
	qsort(v, p->signals.n, sizeof(*v), cmp_signal);
	fputs("\nSignals:\n", out);
	table_init(&t, rates ? 7 : 6, rates ? "lrrrrrr" : "lrrrrr");
	cell(&t, "SIGNAL"), cell(&t, "SIGNO"), cell(&t, "RECEIVED");
	if (rates)
		cell(&t, "RECEIVED/s");
	cell(&t, "HANDLED"), cell(&t, "LATENCY_MEAN"), cell(&t, "LATENCY_MAX");
	for (size_t i = 0; i < p->signals.n; i++) {
		const struct vt_signal *s = v[i];

		cell(&t, "%s", vt_signal_name(s->signo, name, sizeof(name)));
		cell(&t, "%d", s->signo);
		cell_u64(&t, s->received);
		if (rates)
			cell_rate(&t, p, s->received);
		cell_u64(&t, s->handled);
		if (s->handled) {
			cell_ns(&t, s->latency_total_ns / s->handled);
			cell_ns(&t, s->latency_max_ns);
		} else {
			cell(&t, "-"), cell(&t, "-");
		}
	}
	err = table_done(out, &t, "  ");
	for (size_t i = 0; !err && i < p->signals.n; i++) {
		uint64_t any = 0;

		for (int b = 0; b < VT_HIST_BUCKETS; b++)
			any |= v[i]->latency_hist[b];
		if (!any)
			continue;
		fprintf(out, "  handling latency of %s:\n",
			vt_signal_name(v[i]->signo, name, sizeof(name)));
		vt_print_log2_hist(out, v[i]->latency_hist, VT_HIST_BUCKETS, "nsecs", "    ");
	}
	free(v);
	return err;
}

static int print_lost(FILE *out, const struct vt_profile *p)
{
	uint64_t total = 0;
	struct table t;
	int err;

	if (!p->lost.n) {
		fputs("\nLost: 0 (this record holds no loss counters).\n", out);
		return 0;
	}
	fputs("\nLost (events and strings not counted where they belong):\n", out);
	table_init(&t, 2, "lr");
	for (size_t i = 0; i < p->lost.n; i++) {
		cell_name(&t, p->lost.v[i].what, "-");
		cell_u64(&t, p->lost.v[i].count);
		total += p->lost.v[i].count;
	}
	cell(&t, "total");
	cell_u64(&t, total);
	err = table_done(out, &t, "  ");
	if (err)
		return err;
	if (!total) {
		fputs("  nothing was lost.\n", out);
		return 0;
	}
	fprintf(out, "  %llu not counted: the figures above are lower bounds.\n",
		(unsigned long long)total);
	for (size_t i = 0; i < p->lost.n; i++)
		if (p->lost.v[i].count && strstr(p->lost.v[i].what, "--map-entries")) {
			fputs("  A map was full: record again with a larger --map-entries.\n", out);
			break;
		}
	return 0;
}

int vt_report_text(FILE *out, const struct vt_profile *p, const struct vt_report_opts *o)
{
	bool vmtrace_events = !p->runtime || !*p->runtime || !strcmp(p->runtime, "vmtrace");
	int err;

	print_header(out, p);
	err = print_allocations(out, p, o);
	if (!err)
		err = print_frees(out, p);
	if (!err)
		err = vt_report_live_text(out, p, o->top);
	if (!err)
		err = print_gc(out, p);
	/* cache and serial events are vmtrace's own probes: other runtimes
	 * never have them, so their empty sections would only be noise */
	if (!err && (vmtrace_events || p->method_cache_resets.n))
		err = print_keyed(out, p, "Method cache resets by class and method", "CLASS",
				  "METHOD", "(whole class)", p->method_cache_resets.v,
				  p->method_cache_resets.n, 0);
	if (!err && (vmtrace_events || p->constant_cache_resets.n))
		err = print_keyed(out, p, "Constant cache resets by name", "NAME", NULL, NULL,
				  p->constant_cache_resets.v, p->constant_cache_resets.n, 0);
	if (!err && (vmtrace_events || p->global_serial_incs.n)) {
		char title[96];

		snprintf(title, sizeof(title), "Global serial increments by reason (last serial %llu)",
			 (unsigned long long)p->last_serial);
		err = print_keyed(out, p, title, "REASON", NULL, NULL, p->global_serial_incs.v,
				  p->global_serial_incs.n, 0);
	}
	if (!err && (vmtrace_events || p->signals.n))
		err = print_signals(out, p);
	if (!err && p->calls.n)
		err = print_keyed(out, p, "Calls by function", "FUNCTION", "FILE", "-", p->calls.v,
				  p->calls.n, o->top);
	if (!err)
		err = print_lost(out, p);
	return err;
}
