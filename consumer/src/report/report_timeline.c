/*
 * report_timeline.c: `--format timeline`, the record's timeline as one
 * self-contained HTML page (no script, no network): per class, an SVG chart
 * of its live bytes (allocated less freed since the start) at the end of
 * each step (record --timeline-step), and a table of allocations and frees
 * per step. The classes are the VT_TIMELINE_CLASSES with the most bytes
 * allocated.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_model.h"
#include "report/report_fmt.h"

#define VT_TIMELINE_CLASSES 8
#define W 640
#define H 160

static void html_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		default: fputc(*s, out);
		}
	}
}

struct cls {
	const char *name;
	uint64_t bytes;              /* allocated over the run: the order of the charts */
	size_t first, n;             /* its rows (the series is by class, then step) */
};

static int cls_cmp(const void *pa, const void *pb)
{
	const struct cls *a = pa, *b = pb;

	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* The start of step n, in seconds. */
static double step_s(const struct vt_profile *p, uint64_t n)
{
	return (double)vt_series_start_ns(p, n) / 1e9;
}

static void chart(FILE *out, const struct vt_profile *p, const struct cls *c)
{
	const struct vt_series *r = &p->series.v[c->first];
	int64_t lo = 0, hi = 1;
	uint32_t last = r[c->n - 1].step + 1;

	for (size_t i = 0; i < c->n; i++) {
		if (r[i].live_bytes > hi)
			hi = r[i].live_bytes;
		if (r[i].live_bytes < lo)
			lo = r[i].live_bytes;
	}
	fprintf(out, "<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n", W, H + 20, W, H + 20);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#f8f8f8\" stroke=\"#ccc\"/>\n", W, H);
	fputs("<polyline fill=\"none\" stroke=\"#c0392b\" stroke-width=\"2\" points=\"0,", out);
	fprintf(out, "%.1f", H - (double)(0 - lo) * H / (double)(hi - lo));
	for (size_t i = 0; i < c->n; i++)
		fprintf(out, " %.1f,%.1f", (double)(r[i].step + 1) * W / last,
			H - (double)(r[i].live_bytes - lo) * H / (double)(hi - lo));
	fputs("\"/>\n", out);
	fprintf(out, "<text x=\"4\" y=\"14\" font-size=\"12\">%" PRId64 " bytes</text>\n", hi);
	fprintf(out, "<text x=\"4\" y=\"%d\" font-size=\"12\">0 s</text>\n", H + 16);
	fprintf(out, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"end\">%.9g s</text>\n", W - 4,
		H + 16, step_s(p, last));
	fputs("</svg>\n", out);
}

static void table(FILE *out, const struct vt_profile *p, const struct cls *c)
{
	fputs("<table><tr><th>from (s)</th><th>allocs</th><th>alloc bytes</th><th>frees</th>"
	      "<th>free bytes</th><th>live bytes</th></tr>\n", out);
	for (size_t i = c->first; i < c->first + c->n; i++) {
		const struct vt_series *r = &p->series.v[i];

		fprintf(out, "<tr><td>%.9g</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%" PRIu64
			     "</td><td>%" PRIu64 "</td><td>%" PRId64 "</td></tr>\n",
			step_s(p, r->step), r->allocs, r->alloc_bytes, r->frees, r->free_bytes, r->live_bytes);
	}
	fputs("</table>\n", out);
}

int vt_report_timeline(FILE *out, const struct vt_profile *p, const struct vt_report_opts *o)
{
	struct cls *c = calloc(p->series.n ? p->series.n : 1, sizeof(*c));
	size_t nc = 0, shown;

	(void)o;
	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < p->series.n; i++) {
		if (!nc || strcmp(c[nc - 1].name, p->series.v[i].klass)) {
			c[nc].name = p->series.v[i].klass;
			c[nc++].first = i;
		}
		c[nc - 1].n++;
		c[nc - 1].bytes += p->series.v[i].alloc_bytes;
	}
	qsort(c, nc, sizeof(*c), cls_cmp);
	fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>vmtrace timeline: ", out);
	html_text(out, p->target ? p->target : "");
	fputs("</title>\n<style>body{font-family:sans-serif}table{border-collapse:collapse;font-size:12px}"
	      "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}</style></head><body>\n", out);
	fputs("<h1>vmtrace timeline</h1>\n<p>", out);
	html_text(out, p->target ? p->target : "");
	fprintf(out, " (pid %d, %.3f s). Per class, bytes allocated less freed since the start at the end "
		     "of each %.9g s, and what each %.9g s allocated and freed.</p>\n", (int)p->pid,
		p->duration_s, step_s(p, 1), step_s(p, 1));
	if (!nc)
		fputs("<p>This record has no timeline (recorded without one, or with --every).</p>\n", out);
	shown = nc < VT_TIMELINE_CLASSES ? nc : VT_TIMELINE_CLASSES;
	for (size_t i = 0; i < shown; i++) {
		fputs("<h2>", out);
		html_text(out, *c[i].name ? c[i].name : "-");
		fputs("</h2>\n", out);
		chart(out, p, &c[i]);
		table(out, p, &c[i]);
	}
	if (nc > shown)
		fprintf(out, "<p>%zu more classes: --format json has every one.</p>\n", nc - shown);
	fputs("</body></html>\n", out);
	free(c);
	return 0;
}
