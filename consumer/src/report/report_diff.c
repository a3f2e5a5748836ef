/*
 * report_diff.c: the diff renderers (`vmtrace diff`, report_opts.h's
 * VT_DIFF_FORMATS): the rows of two recordings that changed, growth first
 * (profile/profile_compare.h), as a table, json, csv, or folded stacks with
 * two weights each (as flamegraph.pl --diff reads).
 */
#include <inttypes.h>
#include <stdio.h>

#include "profile/profile_compare.h"
#include "report/report_fmt.h"
#include "report/report_opts.h"
#include "report/report_table.h"

static const char *const col_name[VT_DIFF_COLS] = { "count", "bytes", "live_count", "live_bytes" };

/* The changed rows as a table: on a terminal fitted to it, the live
 * columns going first, and the rows left out by --top counted. */
int vt_diff_report_text(FILE *out, const struct vt_diff *d, const struct vt_diff_names *names,
			const struct vt_report_opts *o)
{
	size_t shown = 0, changed = 0;
	uint64_t moved = 0, moved_shown = 0; /* bytes changed, either way */
	struct vt_table t;
	int err;

	(void)names;

	vt_table_init(&t, d->live ? 7 : 5, d->live ? "lllrrrr" : "lllrr");
	t.drop = d->live ? "-----dd" : NULL;
	vt_cell(&t, "CLASS"), vt_cell(&t, "METHOD"), vt_cell(&t, "SITE");
	vt_cell(&t, "COUNT+-"), vt_cell(&t, "BYTES+-");
	if (d->live)
		vt_cell(&t, "LIVE+-"), vt_cell(&t, "LIVE_BYTES+-");
	for (size_t i = 0; i < d->n; i++) {
		const struct vt_diff_row *r = &d->v[i];
		int64_t bytes = vt_diff_delta(r, VT_DIFF_BYTES);
		uint64_t size = bytes < 0 ? (uint64_t)-bytes : (uint64_t)bytes;

		if (!vt_diff_changed(r))
			continue;
		changed++;
		moved += size;
		if (o->top && shown == o->top)
			continue;
		shown++;
		moved_shown += size;
		vt_cell_name(&t, r->klass, "-"), vt_cell_name(&t, r->method, "-");
		vt_cell_name(&t, r->site, "-");
		vt_cell(&t, "%+" PRId64, vt_diff_delta(r, VT_DIFF_COUNT));
		vt_cell(&t, "%+" PRId64, bytes);
		if (d->live) {
			vt_cell(&t, "%+" PRId64, vt_diff_delta(r, VT_DIFF_LIVE_COUNT));
			vt_cell(&t, "%+" PRId64, vt_diff_delta(r, VT_DIFF_LIVE_BYTES));
		}
	}
	err = vt_table_done(out, &t, "", o->width);
	if (err)
		return err;
	vt_print_left_out(out, changed - shown, moved - moved_shown, moved, "the bytes changed");
	fprintf(out, "%zu rows changed, %zu unchanged%s\n", changed, d->n - changed,
		d->live ? "" : "; no live heap in both records (record --live)");
	return 0;
}

int vt_diff_report_json(FILE *out, const struct vt_diff *d, const struct vt_diff_names *names,
			const struct vt_report_opts *o)
{
	size_t shown = 0, top = o->top;

	fputs("{\n  \"base\": ", out);
	vt_json_string(out, names->base);
	fputs(",\n  \"new\": ", out);
	vt_json_string(out, names->now);
	fprintf(out, ",\n  \"live\": %s,\n  \"rows\": [", d->live ? "true" : "false");
	for (size_t i = 0; i < d->n; i++) {
		const struct vt_diff_row *r = &d->v[i];

		if (!vt_diff_changed(r) || (top && shown == top))
			continue;
		fputs(shown++ ? ",\n    {\"class\": " : "\n    {\"class\": ", out);
		vt_json_string(out, r->klass);
		fputs(", \"method\": ", out);
		vt_json_string(out, r->method);
		fputs(", \"site\": ", out);
		vt_json_string(out, r->site);
		for (int c = 0; c < VT_DIFF_COLS; c++)
			fprintf(out, ", \"%s\": {\"base\": %" PRIu64 ", \"new\": %" PRIu64 ", \"delta\": %" PRId64 "}",
				col_name[c], r->base[c], r->now[c], vt_diff_delta(r, (enum vt_diff_col)c));
		fputs("}", out);
	}
	fputs(shown ? "\n  ]\n}\n" : "]\n}\n", out);
	return 0;
}

int vt_diff_report_csv(FILE *out, const struct vt_diff *d, const struct vt_diff_names *names,
		       const struct vt_report_opts *o)
{
	size_t shown = 0, top = o->top;

	(void)names;
	fputs("class,method,site", out);
	for (int c = 0; c < VT_DIFF_COLS; c++)
		fprintf(out, ",base_%s,new_%s,delta_%s", col_name[c], col_name[c], col_name[c]);
	fputc('\n', out);
	for (size_t i = 0; i < d->n; i++) {
		const struct vt_diff_row *r = &d->v[i];

		if (!vt_diff_changed(r) || (top && shown == top))
			continue;
		shown++;
		vt_csv_field(out, r->klass);
		fputc(',', out);
		vt_csv_field(out, r->method);
		fputc(',', out);
		vt_csv_field(out, r->site);
		for (int c = 0; c < VT_DIFF_COLS; c++)
			fprintf(out, ",%" PRIu64 ",%" PRIu64 ",%" PRId64, r->base[c], r->now[c],
				vt_diff_delta(r, (enum vt_diff_col)c));
		fputc('\n', out);
	}
	return 0;
}

/* A frame of a folded stack: ';' and ' ' would split it, so they become '_'. */
static void frame(FILE *out, const char *s)
{
	for (; *s; s++)
		fputc(*s == ';' || *s == ' ' || *s == '\n' ? '_' : *s, out);
}

int vt_diff_report_folded(FILE *out, const struct vt_diff *d, const struct vt_diff_names *names,
			  const struct vt_report_opts *o)
{
	enum vt_diff_col c = o->sort == VT_SORT_BYTES ? VT_DIFF_BYTES : VT_DIFF_COUNT;
	size_t shown = 0, top = o->top;

	(void)names;

	for (size_t i = 0; i < d->n; i++) {
		const struct vt_diff_row *r = &d->v[i];

		if ((!r->base[c] && !r->now[c]) || (top && shown == top))
			continue;
		shown++;
		/* as report's folded lines: the code, then the class as the leaf */
		frame(out, *r->method ? r->method : "-");
		if (*r->site) {
			fputc(';', out);
			frame(out, r->site);
		}
		fputc(';', out);
		frame(out, *r->klass ? r->klass : "-");
		fprintf(out, " %" PRIu64 " %" PRIu64 "\n", r->base[c], r->now[c]);
	}
	return 0;
}
