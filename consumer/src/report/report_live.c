/*
 * report_live.c: the live heap in the text and JSON reports (docs/live.md):
 * what was allocated while tracing and not freed at the end, per class,
 * method and site, largest first (the leaks of a run that exits); the peak
 * of live bytes; allocations freed within the temporary threshold; and
 * the ages of what is alive.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_fmt.h"
#include "report/report_live.h"

static int cmp_live_bytes(const void *pa, const void *pb)
{
	const struct vt_live *a = *(const struct vt_live *const *)pa;
	const struct vt_live *b = *(const struct vt_live *const *)pb;
	int c;

	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	if ((c = strcmp(a->klass, b->klass)) || (c = strcmp(a->method, b->method)))
		return c;
	return strcmp(a->site, b->site);
}

static int cmp_temp_bytes(const void *pa, const void *pb)
{
	const struct vt_live *a = *(const struct vt_live *const *)pa;
	const struct vt_live *b = *(const struct vt_live *const *)pb;

	if (a->temp_bytes != b->temp_bytes)
		return a->temp_bytes > b->temp_bytes ? -1 : 1;
	return cmp_live_bytes(pa, pb);
}

/* The rows, sorted by cmp; NULL when out of memory. */
static const struct vt_live **sorted(const struct vt_profile *p, int (*cmp)(const void *, const void *))
{
	const struct vt_live **v = malloc((p->live.n ? p->live.n : 1) * sizeof(*v));

	if (!v)
		return NULL;
	for (size_t i = 0; i < p->live.n; i++)
		v[i] = &p->live.v[i];
	qsort(v, p->live.n, sizeof(*v), cmp);
	return v;
}

static const char *or_dash(const char *s)
{
	return *s ? s : "-";
}

/* The first top rows (0: all) that hold objects alive (temporaries). */
static void print_rows(FILE *out, const struct vt_live **v, size_t n, size_t top, bool temp)
{
	size_t shown = 0;

	for (size_t i = 0; i < n && (!top || shown < top); i++) {
		uint64_t count = temp ? v[i]->temp_count : v[i]->count;

		if (!count)
			continue;
		shown++;
		fprintf(out, "  %-20s %-28s %-24s %10" PRIu64 " %12" PRIu64 "\n", or_dash(v[i]->klass),
			or_dash(v[i]->method), or_dash(v[i]->site), count,
			temp ? v[i]->temp_bytes : v[i]->bytes);
	}
}

int vt_report_live_text(FILE *out, const struct vt_profile *p, size_t top)
{
	const struct vt_live_info *li = &p->live_info;
	const struct vt_live **v;
	uint64_t objects = 0, bytes = 0, temps = 0, temp_bytes = 0;
	char ns[32];

	if (!li->on)
		return 0;
	v = sorted(p, cmp_live_bytes);
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < p->live.n; i++) {
		objects += p->live.v[i].count;
		bytes += p->live.v[i].bytes;
		temps += p->live.v[i].temp_count;
		temp_bytes += p->live.v[i].temp_bytes;
	}
	fprintf(out, "\nLive heap at the end (allocated while tracing, not freed%s):\n",
		p->sample_period ? "; sampled, estimates" : "");
	fprintf(out, "  %" PRIu64 " objects, %" PRIu64 " bytes; peak %" PRIu64 " bytes at %.3f s\n",
		objects, bytes, li->peak_bytes, (double)li->peak_at_ns / 1e9);
	fprintf(out, "  %-20s %-28s %-24s %10s %12s\n", "CLASS", "METHOD", "SITE", "OBJECTS", "BYTES");
	print_rows(out, v, p->live.n, top, false);
	qsort(v, p->live.n, sizeof(*v), cmp_temp_bytes);
	fprintf(out, "\nTemporary allocations (freed within %s): %" PRIu64 " objects, %" PRIu64 " bytes\n",
		vt_format_ns(li->temp_ns, ns, sizeof(ns)), temps, temp_bytes);
	print_rows(out, v, p->live.n, top, true);
	free(v);
	if (objects) {
		fputs("\nAge of the live objects:\n", out);
		vt_print_log2_hist(out, li->age_hist, VT_HIST_BUCKETS, "nsecs", "    ");
	}
	return 0;
}

int vt_report_live_json(FILE *out, const struct vt_profile *p)
{
	const struct vt_live_info *li = &p->live_info;
	const struct vt_live **v;
	int first = 1;

	if (!li->on)
		return 0;
	v = sorted(p, cmp_live_bytes);
	if (!v)
		return -ENOMEM;
	fprintf(out, "  \"live\": {\"max_tracked\": %" PRIu64 ", \"temp_ns\": %" PRIu64
		     ", \"peak_bytes\": %" PRIu64 ", \"peak_at_ns\": %" PRId64 ",\n    \"age_hist\": [",
		li->max_tracked, li->temp_ns, li->peak_bytes, li->peak_at_ns);
	for (int b = 0; b < VT_HIST_BUCKETS; b++) {
		if (!li->age_hist[b])
			continue;
		fprintf(out, "%s{\"log2_ns\": %d, \"count\": %" PRIu64 "}", first ? "" : ", ", b, li->age_hist[b]);
		first = 0;
	}
	fputs("],\n    \"rows\": [", out);
	for (size_t i = 0; i < p->live.n; i++) {
		fputs(i ? ",\n      {\"class\": " : "\n      {\"class\": ", out);
		vt_json_string(out, v[i]->klass);
		fputs(", \"method\": ", out);
		vt_json_string(out, v[i]->method);
		fputs(", \"site\": ", out);
		vt_json_string(out, v[i]->site);
		fprintf(out, ", \"count\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"objects\": %" PRIu64
			     ", \"temp_count\": %" PRIu64 ", \"temp_bytes\": %" PRIu64 "}",
			v[i]->count, v[i]->bytes, v[i]->objects, v[i]->temp_count, v[i]->temp_bytes);
	}
	fputs(p->live.n ? "\n    ]},\n" : "]},\n", out);
	free(v);
	return 0;
}

int vt_report_series_json(FILE *out, const struct vt_profile *p)
{
	if (!p->series.n)
		return 0;
	fprintf(out, "  \"timeline_step_s\": %.9g,\n", (double)p->series_step_ns / 1e9);
	fputs("  \"timeline\": [", out);
	for (size_t i = 0; i < p->series.n; i++) {
		const struct vt_series *r = &p->series.v[i];
		uint64_t start_ns = vt_series_start_ns(p, r->step);

		fputs(i ? ",\n    {\"class\": " : "\n    {\"class\": ", out);
		vt_json_string(out, r->klass);
		/* second: the whole second the step starts in (the step's index at 1 s) */
		fprintf(out, ", \"step\": %" PRIu32 ", \"start_s\": %.9g, \"second\": %" PRIu64
			     ", \"allocs\": %" PRIu64 ", \"alloc_bytes\": %" PRIu64 ", \"frees\": %" PRIu64
			     ", \"free_bytes\": %" PRIu64 ", \"live_bytes\": %" PRId64 "}",
			r->step, (double)start_ns / 1e9, start_ns / UINT64_C(1000000000), r->allocs, r->alloc_bytes,
			r->frees, r->free_bytes, r->live_bytes);
	}
	fputs("\n  ],\n", out);
	return 0;
}
