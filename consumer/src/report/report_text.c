/*
 * report_text.c: the report for people: a summary, then aligned tables, one
 * section per kind of event, and what was lost last. On a terminal
 * (opts->width) each table fits its columns: rate columns go first, then
 * the widest names are shortened in the middle, keeping their ends (a
 * class's last names, a method's own name); the CLI sets --top's default
 * there, and each cut table says what it left out.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_live.h"
#include "report/report_fmt.h"
#include "report/report_model.h"
#include "report/report_table.h"

static void cell_rate(struct vt_table *t, const struct vt_profile *p, uint64_t v)
{
	vt_cell(t, "%.1f", (double)v / p->duration_s);
}

static void cell_share(struct vt_table *t, uint64_t part, uint64_t total)
{
	if (total)
		vt_cell(t, "%.1f%%", 100.0 * (double)part / (double)total);
	else
		vt_cell(t, "-");
}

static void cell_ns(struct vt_table *t, uint64_t ns)
{
	char buf[32];

	vt_cell(t, "%s", vt_format_ns(ns, buf, sizeof(buf)));
}

/* ---- sections ---- */

static void print_escaped(FILE *out, const char *s, const char *empty_as)
{
	struct vt_table t;

	vt_table_init(&t, 1, "l");
	vt_cell_name(&t, s, empty_as);
	if (!t.err)
		fputs(t.cells[0], out);
	for (size_t i = 0; i < t.n; i++)
		free(t.cells[i]);
	free(t.cells);
}

/* bytes as people read them: "1.70 GiB", "640 B" */
static const char *human_bytes(double v, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	int u = 0;

	while (v >= 1024 && u < 5)
		v /= 1024, u++;
	/* whole: no decimals (floor, not a cast: v may pass any integer type) */
	snprintf(buf, len, u && v != floor(v) ? "%.2f %s" : "%.0f %s", v, unit[u]);
	return buf;
}

/* a rate per second with K, M, G */
static const char *human_rate(double v, char *buf, size_t len)
{
	static const char *const unit[] = { "", "K", "M", "G", "T" };
	int u = 0;

	while (v >= 1000 && u < 4)
		v /= 1000, u++;
	snprintf(buf, len, u ? "%.1f%s" : "%.0f%s", v, unit[u]);
	return buf;
}

/* What was traced, how, for how long, and the allocations in one line. */
static void print_summary(FILE *out, const struct vt_profile *p)
{
	bool own = !p->runtime || !*p->runtime || !strcmp(p->runtime, "vmtrace");
	uint64_t count = 0, bytes = 0;
	char n[32], b[32], r1[32], r2[32];

	fputs("traced: ", out);
	if (own) {
		fputs("vmtrace's provider inside the process", out);
	} else {
		print_escaped(out, p->runtime, "unknown");
		fputs("'s own probes and uprobes (a trap per event)", out);
	}
	if (p->sample_period && p->has_allocations)
		fprintf(out, ", sampled every %llu bytes (%s): counts and bytes are estimates\n",
			(unsigned long long)p->sample_period,
			human_bytes((double)p->sample_period, b, sizeof(b)));
	else
		fputs(", exact\n", out);
	if (!p->has_allocations)
		return;
	for (size_t i = 0; i < p->allocs.n; i++)
		count += p->allocs.v[i].count, bytes += p->allocs.v[i].bytes;
	fprintf(out, "allocations: %s objects, %s", vt_thousands(count, n, sizeof(n)),
		human_bytes((double)bytes, b, sizeof(b)));
	if (p->duration_s > 0)
		fprintf(out, " in %.3f s: %s/s, %s/s", p->duration_s,
			human_rate((double)count / p->duration_s, r1, sizeof(r1)),
			human_bytes((double)bytes / p->duration_s, r2, sizeof(r2)));
	fputc('\n', out);
}

static void print_header(FILE *out, const struct vt_profile *p, const struct vt_report_opts *o)
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
	print_summary(out, p);
	fputs("probes: ", out);
	if (o->width > 16 && p->probes && *p->probes) {
		/* a list as long as it is: one line, cut to the screen */
		char *shown = vt_text_name(p->probes);

		if (shown)
			vt_put_shortened(out, shown, o->width - 8);
		free(shown);
	} else {
		print_escaped(out, p->probes, "(none recorded)");
	}
	fputc('\n', out);
	if (p->sample_period && p->has_allocations)
		fputs("SAMPLES is the number of probe hits behind each row.\n", out);
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
	char align[16], drop[16], *a = align;
	uint64_t shown = 0;
	struct vt_table t;
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
	vt_table_init(&t, (int)(a - align), align);
	/* the rates (the last two columns), then BYTES%, go first on a narrow
	 * terminal: the summary above has the rates */
	memset(drop, '-', sizeof(drop));
	drop[keys + 3] = 'd';
	if (rates)
		drop[a - align - 1] = drop[a - align - 2] = 'd';
	t.drop = drop;
	if (by_cgroup)
		vt_cell(&t, "CGROUP");
	if (by_pid)
		vt_cell(&t, "PID"), vt_cell(&t, "COMM");
	if (o->by != VT_BY_METHOD && o->by != VT_BY_STACK)
		vt_cell(&t, "CLASS");
	if (o->by != VT_BY_CLASS)
		vt_cell(&t, o->by == VT_BY_STACK ? "STACK" : "METHOD");
	if (o->by == VT_BY_SITE)
		vt_cell(&t, "SITE");
	vt_cell(&t, "COUNT"), vt_cell(&t, "COUNT%%"), vt_cell(&t, "BYTES"), vt_cell(&t, "BYTES%%");
	if (sampled)
		vt_cell(&t, "SAMPLES");
	if (rates)
		vt_cell(&t, "COUNT/s"), vt_cell(&t, "BYTES/s");
	for (size_t i = 0; i <= at.n; i++) {
		bool total = i == at.n;
		struct vt_alloc_row r = total ? (struct vt_alloc_row){
			.count = at.total_count, .bytes = at.total_bytes,
			.samples = at.total_samples } : at.rows[i];

		if (total) {
			vt_cell(&t, "total");
			for (int k = 1; k < keys; k++)
				vt_cell(&t, "%s", "");
		} else {
			if (by_cgroup)
				vt_cell_name(&t, r.cgroup, "-");
			if (by_pid)
				vt_cell(&t, "%d", (int)r.pid), vt_cell_name(&t, r.comm, "-");
			if (o->by != VT_BY_METHOD && o->by != VT_BY_STACK)
				vt_cell_name(&t, r.klass, "-");
			if (o->by != VT_BY_CLASS)
				vt_cell_name(&t, o->by == VT_BY_STACK ? r.stack : r.method, "-");
			if (o->by == VT_BY_SITE)
				vt_cell_name(&t, r.site, "-");
		}
		vt_cell_u64(&t, r.count);
		cell_share(&t, r.count, at.total_count);
		vt_cell_u64(&t, r.bytes);
		cell_share(&t, r.bytes, at.total_bytes);
		if (sampled)
			vt_cell_u64(&t, r.samples);
		if (rates)
			cell_rate(&t, p, r.count), cell_rate(&t, p, r.bytes);
	}
	err = vt_table_done(out, &t, "  ", o->width);
	/* what the rows left out hold, of what they are sorted by */
	bool by_bytes = o->sort == VT_SORT_BYTES;
	for (size_t i = 0; i < at.n; i++)
		shown += by_bytes ? at.rows[i].bytes : at.rows[i].count;
	if (!err)
		vt_print_left_out(out, at.total_rows - at.n,
				  (by_bytes ? at.total_bytes : at.total_count) - shown,
				  by_bytes ? at.total_bytes : at.total_count,
				  by_bytes ? "bytes" : "allocations");
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

static int print_frees(FILE *out, const struct vt_profile *p, const struct vt_report_opts *o)
{
	const struct vt_free **v;
	size_t kept = o->top && o->top < p->frees.n ? o->top : p->frees.n;
	uint64_t total = 0, shown = 0;
	struct vt_table t;
	int err;

	if (!p->frees.n)
		return 0;
	v = malloc(p->frees.n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < p->frees.n; i++)
		v[i] = &p->frees.v[i];
	qsort(v, p->frees.n, sizeof(*v), cmp_free);
	fputs("\nFrees by class:\n", out);
	vt_table_init(&t, 3, "lrr");
	vt_cell(&t, "CLASS"), vt_cell(&t, "COUNT"), vt_cell(&t, "BYTES");
	for (size_t i = 0; i < p->frees.n; i++) {
		total += v[i]->count;
		if (i >= kept)
			continue;
		shown += v[i]->count;
		vt_cell_name(&t, v[i]->klass, "-");
		vt_cell_u64(&t, v[i]->count);
		vt_cell_u64(&t, v[i]->bytes);
	}
	free(v);
	err = vt_table_done(out, &t, "  ", o->width);
	if (!err)
		vt_print_left_out(out, p->frees.n - kept, total - shown, total, "frees");
	return err;
}

static int print_gc(FILE *out, const struct vt_profile *p, const struct vt_report_opts *o)
{
	uint64_t collections = 0;
	bool rates = p->duration_s > 0;
	struct vt_pause_stats st;
	struct vt_table t;
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
	vt_table_init(&t, rates ? 9 : 8, rates ? "lrrrrrrrr" : "lrrrrrrr");
	t.drop = rates ? "--d------" : NULL;
	vt_cell(&t, "KIND"), vt_cell(&t, "COLLECTIONS");
	if (rates)
		vt_cell(&t, "COLLECTIONS/s");
	vt_cell(&t, "PAUSES"), vt_cell(&t, "TOTAL"), vt_cell(&t, "MEAN"), vt_cell(&t, "P50"), vt_cell(&t, "P99");
	vt_cell(&t, "MAX");
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
		vt_cell(&t, "%s", kind < 0 ? "all" : vt_gc_kind_name(p, kind));
		vt_cell_u64(&t, n);
		if (rates)
			cell_rate(&t, p, n);
		vt_cell_u64(&t, st.pauses);
		if (st.pauses) {
			cell_ns(&t, st.total_ns), cell_ns(&t, st.mean_ns), cell_ns(&t, st.p50_ns);
			cell_ns(&t, st.p99_ns), cell_ns(&t, st.max_ns);
		} else {
			for (int i = 0; i < 5; i++)
				vt_cell(&t, "-");
		}
	}
	err = vt_table_done(out, &t, "  ", o->width);
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
static int print_keyed(FILE *out, const struct vt_profile *p, const struct vt_report_opts *o,
		       const char *title, const char *col1, const char *col2, const char *empty2,
		       const struct vt_keyed_count *v, size_t n, const char *what)
{
	bool rates = p->duration_s > 0;
	const struct vt_keyed_count **s;
	int ncols = (col2 ? 2 : 1) + 1 + (rates ? 1 : 0);
	uint64_t total = 0, shown = 0;
	size_t kept;
	struct vt_table t;
	int err;

	if (!n) {
		fprintf(out, "\n%s: none.\n", title);
		return 0;
	}
	s = vt_keyed_sorted(v, n, o->top, &kept);
	if (!s)
		return -ENOMEM;
	fprintf(out, "\n%s:\n", title);
	vt_table_init(&t, ncols, col2 ? "llrr" : "lrr");
	t.drop = col2 ? "---d" : "--d";
	vt_cell(&t, "%s", col1);
	if (col2)
		vt_cell(&t, "%s", col2);
	vt_cell(&t, "COUNT");
	if (rates)
		vt_cell(&t, "COUNT/s");
	for (size_t i = 0; i < n; i++)
		total += v[i].count;
	for (size_t i = 0; i < kept; i++)
		shown += s[i]->count;
	for (size_t i = 0; i <= kept; i++) {
		uint64_t c = i < kept ? s[i]->count : total;

		if (i < kept) {
			vt_cell_name(&t, s[i]->name, "-");
			if (col2)
				vt_cell_name(&t, s[i]->name2, empty2);
		} else {
			vt_cell(&t, "total");
			if (col2)
				vt_cell(&t, "%s", "");
		}
		vt_cell_u64(&t, c);
		if (rates)
			cell_rate(&t, p, c);
	}
	free(s);
	err = vt_table_done(out, &t, "  ", o->width);
	if (!err)
		vt_print_left_out(out, n - kept, total - shown, total, what);
	return err;
}

static int cmp_signal(const void *pa, const void *pb)
{
	const struct vt_signal *a = *(const struct vt_signal *const *)pa;
	const struct vt_signal *b = *(const struct vt_signal *const *)pb;

	return a->signo < b->signo ? -1 : a->signo > b->signo;
}

static int print_signals(FILE *out, const struct vt_profile *p, const struct vt_report_opts *o)
{
	bool rates = p->duration_s > 0;
	const struct vt_signal **v;
	struct vt_table t;
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
	vt_table_init(&t, rates ? 7 : 6, rates ? "lrrrrrr" : "lrrrrr");
	t.drop = rates ? "---d---" : NULL;
	vt_cell(&t, "SIGNAL"), vt_cell(&t, "SIGNO"), vt_cell(&t, "RECEIVED");
	if (rates)
		vt_cell(&t, "RECEIVED/s");
	vt_cell(&t, "HANDLED"), vt_cell(&t, "LATENCY_MEAN"), vt_cell(&t, "LATENCY_MAX");
	for (size_t i = 0; i < p->signals.n; i++) {
		const struct vt_signal *s = v[i];

		vt_cell(&t, "%s", vt_signal_name(s->signo, name, sizeof(name)));
		vt_cell(&t, "%d", s->signo);
		vt_cell_u64(&t, s->received);
		if (rates)
			cell_rate(&t, p, s->received);
		vt_cell_u64(&t, s->handled);
		if (s->handled) {
			cell_ns(&t, s->latency_total_ns / s->handled);
			cell_ns(&t, s->latency_max_ns);
		} else {
			vt_cell(&t, "-"), vt_cell(&t, "-");
		}
	}
	err = vt_table_done(out, &t, "  ", o->width);
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

/* Only the counters that are not 0, each with the figure it touches; a
 * lower bound is called one only for a figure that is a count here. */
static int print_lost(FILE *out, const struct vt_profile *p, const struct vt_report_opts *o)
{
	uint64_t total = 0, bounding = 0;
	const char *bounds[8];
	size_t nbounds = 0;
	bool map_full = false;
	struct vt_table t;
	char n[32];
	int err;

	if (!p->lost.n) {
		fputs("\nLost: 0 (this record holds no loss counters).\n", out);
		return 0;
	}
	for (size_t i = 0; i < p->lost.n; i++)
		total += p->lost.v[i].count;
	if (!total) {
		fputs("\nLost: nothing.\n", out);
		return 0;
	}
	fputs("\nLost (not counted where it belongs, and what it touches):\n", out);
	vt_table_init(&t, 3, "lrL");
	vt_cell(&t, "LOST"), vt_cell(&t, "COUNT"), vt_cell(&t, "TOUCHES");
	for (size_t i = 0; i < p->lost.n; i++) {
		const struct vt_lost *l = &p->lost.v[i];
		struct vt_loss_touch touch = vt_loss_touches(l->what);
		size_t b;

		if (!l->count)
			continue;
		vt_cell_name(&t, l->what, "-");
		vt_cell_u64(&t, l->count);
		vt_cell(&t, "%s", touch.figure);
		map_full |= strstr(l->what, "--map-entries") != NULL;
		if (!touch.lower_bound)
			continue;
		bounding += l->count;
		for (b = 0; b < nbounds && strcmp(bounds[b], touch.figure); b++)
			;
		if (b == nbounds && nbounds < sizeof(bounds) / sizeof(bounds[0]))
			bounds[nbounds++] = touch.figure;
	}
	err = vt_table_done(out, &t, "  ", o->width);
	if (err)
		return err;
	if (!bounding) {
		fputs("  no count above is touched: only what each line names.\n", out);
		return 0;
	}
	fprintf(out, "  %s not counted: the counts of ", vt_thousands(bounding, n, sizeof(n)));
	for (size_t b = 0; b < nbounds; b++)
		fprintf(out, "%s%s", b ? (b + 1 == nbounds ? " and " : ", ") : "", bounds[b]);
	fputs(" above are lower bounds.\n", out);
	if (map_full)
		fputs("  A map was full: record again with a larger --map-entries.\n", out);
	return 0;
}

int vt_report_text(FILE *out, const struct vt_profile *p, const struct vt_report_opts *o)
{
	bool vmtrace_events = !p->runtime || !*p->runtime || !strcmp(p->runtime, "vmtrace");
	int err;

	print_header(out, p, o);
	err = print_allocations(out, p, o);
	if (!err)
		err = print_frees(out, p, o);
	if (!err)
		err = vt_report_live_text(out, p, o->top);
	if (!err)
		err = print_gc(out, p, o);
	/* cache and serial events are vmtrace's own probes: other runtimes
	 * never have them, so their empty sections would only be noise */
	if (!err && (vmtrace_events || p->method_cache_resets.n))
		err = print_keyed(out, p, o, "Method cache resets by class and method", "CLASS",
				  "METHOD", "(whole class)", p->method_cache_resets.v,
				  p->method_cache_resets.n, "resets");
	if (!err && (vmtrace_events || p->constant_cache_resets.n))
		err = print_keyed(out, p, o, "Constant cache resets by name", "NAME", NULL, NULL,
				  p->constant_cache_resets.v, p->constant_cache_resets.n, "resets");
	if (!err && (vmtrace_events || p->global_serial_incs.n)) {
		char title[96];

		snprintf(title, sizeof(title), "Global serial increments by reason (last serial %llu)",
			 (unsigned long long)p->last_serial);
		err = print_keyed(out, p, o, title, "REASON", NULL, NULL, p->global_serial_incs.v,
				  p->global_serial_incs.n, "increments");
	}
	if (!err && (vmtrace_events || p->signals.n))
		err = print_signals(out, p, o);
	if (!err && p->calls.n)
		err = print_keyed(out, p, o, "Calls by function", "FUNCTION", "FILE", "-", p->calls.v,
				  p->calls.n, "calls");
	if (!err)
		err = print_lost(out, p, o);
	return err;
}
