/*
 * report_timeline.c: `--format timeline`, the record's timeline as one
 * self-contained HTML page (no script, no network): per class, an SVG chart
 * of its live bytes (allocated less freed since the start) at the end of
 * each step (record --timeline-step), its axes ticked in bytes and seconds
 * to the run's end, and a table of allocations and frees
 * per step. The classes are the VT_TIMELINE_CLASSES with the most bytes
 * allocated.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
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

/* A tick spacing of 1, 2 or 5 times a power of ten giving about n ticks
 * over range (> 0). */
static double tick_step(double range, int n)
{
	double raw = range / n, mag = pow(10, floor(log10(raw))), norm = raw / mag;

	return (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
}

/* bytes as a tick label, in the ticks' own decimal steps: 500, 1.5k, 20M */
static void byte_label(FILE *out, double v)
{
	static const char unit[] = " kMGTP";
	int u = 0;

	while (fabs(v) >= 1000 && u < 5)
		v /= 1000, u++;
	if (u)
		fprintf(out, "%.4g%c", v, unit[u]);
	else
		fprintf(out, "%.4g", v);
}

#define ML 64 /* left margin: the bytes' labels */
#define MB 22 /* bottom margin: the seconds' labels */

/* Live bytes over the run: a point at the end of each step (the last at
 * the run's end, not its step's), both axes ticked. */
static void chart(FILE *out, const struct vt_profile *p, const struct cls *c)
{
	const struct vt_series *r = &p->series.v[c->first];
	int64_t lo = 0, hi = 1;
	double end = p->duration_s > 0 ? p->duration_s : step_s(p, r[c->n - 1].step + 1), dy, dx;

	for (size_t i = 0; i < c->n; i++) {
		if (r[i].live_bytes > hi)
			hi = r[i].live_bytes;
		if (r[i].live_bytes < lo)
			lo = r[i].live_bytes;
	}
	dy = tick_step((double)(hi - lo), 4);
	dx = tick_step(end, 6);
	fprintf(out, "<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n",
		ML + W + 8, H + MB + 8, ML + W + 8, H + MB + 8);
	fprintf(out, "<rect x=\"%d\" y=\"4\" width=\"%d\" height=\"%d\" fill=\"#f8f8f8\" stroke=\"#ccc\"/>\n",
		ML, W, H);
	/* y: live bytes, from the lowest (0, or below after frees of older objects) */
	for (double v = ceil((double)lo / dy) * dy; v <= (double)hi; v += dy) {
		double y = 4 + H - (v - (double)lo) * H / (double)(hi - lo);

		fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>"
			     "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">", ML, y,
			ML + W, y, ML - 4, y + 4);
		byte_label(out, v);
		fputs("</text>\n", out);
	}
	/* x: seconds since the probes went live, to the run's end */
	for (double t = 0; t <= end + dx * 1e-9; t += dx) {
		double x = ML + t * W / end;

		fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#999\"/>"
			     "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%.4g s</text>\n",
			x, 4 + H, x, 4 + H + 4, x, 4 + H + 17, t);
	}
	fprintf(out, "<polyline fill=\"none\" stroke=\"#c0392b\" stroke-width=\"2\" points=\"%d,%.1f", ML,
		4 + H - (double)(0 - lo) * H / (double)(hi - lo));
	for (size_t i = 0; i < c->n; i++) {
		double t = step_s(p, r[i].step + 1);

		fprintf(out, " %.1f,%.1f", ML + (t < end ? t : end) * W / end,
			4 + H - (double)(r[i].live_bytes - lo) * H / (double)(hi - lo));
	}
	fputs("\"/>\n</svg>\n", out);
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
