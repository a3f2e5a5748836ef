/*
 * cmd_diff.c: `vmtrace diff BASE NEW`, what changed between two recordings
 * per class, method and site (record_diff.c), growth first, in text, json,
 * csv or folded (two weights per stack, as flamegraph.pl --diff reads).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/report_out.h"
#include "record/record_diff.h"
#include "record/record_load.h"
#include "report/report_fmt.h"
#include "report/report_table.h"

static const char usage_line[] =
	"Usage: vmtrace diff BASE.data NEW.data [--format text|json|csv|folded] [--sort count|bytes]\n"
	"                    [--top N] [--no-pager]\n";

static const char help_text[] =
	"\n"
	"Compare two recordings (vmtrace record): per class, method and site, the change\n"
	"in allocations (count, bytes) and, when both were made with --live, in the live\n"
	"heap at the end (objects, bytes). Rows that grew most come first: live bytes,\n"
	"then bytes, then count. Unchanged rows are left out.\n"
	"\n"
	"  --format F  text (default); json (docs/json-schema.md, \"diff\"); csv; or\n"
	"              folded: `method;site;class BASE NEW` lines, the input of\n"
	"              flamegraph.pl's differential mode\n"
	"  --sort S    folded's weight: allocation count (default) or bytes\n"
	"  --top N     the first N changed rows (0: all; default 20 on a terminal,\n"
	"              where names are shortened to fit, all into a pipe or file)\n"
	"  --no-pager  on a terminal, no pager for a diff past the screen\n"
	"  -h, --help  this text\n"
	"\n"
	"Examples:\n"
	"  vmtrace diff before.data after.data\n"
	"  vmtrace diff before.data after.data --format folded --sort bytes | flamegraph.pl > diff.svg\n";

static const enum vt_opt diff_opts[] = { VT_OPT_FORMAT, VT_OPT_SORT, VT_OPT_TOP, VT_OPT_NO_PAGER,
					 VT_OPT_HELP, 0 };

static const struct vt_cli_cmd diff_cmd = { "diff", usage_line, help_text, diff_opts, false };

static const char *const col_name[VT_DIFF_COLS] = { "count", "bytes", "live_count", "live_bytes" };

/* The changed rows as a table: on a terminal fitted to it, the live
 * columns going first, and the rows left out by --top counted. */
static int print_text(FILE *out, const struct vt_diff *d, const struct vt_report_opts *o)
{
	size_t shown = 0, changed = 0;
	uint64_t moved = 0, moved_shown = 0; /* bytes changed, either way */
	struct vt_table t;
	int err;

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

static void print_json(const struct vt_diff *d, const char *base, const char *now, size_t top)
{
	size_t shown = 0;

	fputs("{\n  \"base\": ", stdout);
	vt_json_string(stdout, base);
	fputs(",\n  \"new\": ", stdout);
	vt_json_string(stdout, now);
	printf(",\n  \"live\": %s,\n  \"rows\": [", d->live ? "true" : "false");
	for (size_t i = 0; i < d->n; i++) {
		const struct vt_diff_row *r = &d->v[i];

		if (!vt_diff_changed(r) || (top && shown == top))
			continue;
		fputs(shown++ ? ",\n    {\"class\": " : "\n    {\"class\": ", stdout);
		vt_json_string(stdout, r->klass);
		fputs(", \"method\": ", stdout);
		vt_json_string(stdout, r->method);
		fputs(", \"site\": ", stdout);
		vt_json_string(stdout, r->site);
		for (int c = 0; c < VT_DIFF_COLS; c++)
			printf(", \"%s\": {\"base\": %" PRIu64 ", \"new\": %" PRIu64 ", \"delta\": %" PRId64 "}",
			       col_name[c], r->base[c], r->now[c], vt_diff_delta(r, (enum vt_diff_col)c));
		fputs("}", stdout);
	}
	fputs(shown ? "\n  ]\n}\n" : "]\n}\n", stdout);
}

static void print_csv(const struct vt_diff *d, size_t top)
{
	size_t shown = 0;

	fputs("class,method,site", stdout);
	for (int c = 0; c < VT_DIFF_COLS; c++)
		printf(",base_%s,new_%s,delta_%s", col_name[c], col_name[c], col_name[c]);
	fputc('\n', stdout);
	for (size_t i = 0; i < d->n; i++) {
		const struct vt_diff_row *r = &d->v[i];

		if (!vt_diff_changed(r) || (top && shown == top))
			continue;
		shown++;
		vt_csv_field(stdout, r->klass);
		fputc(',', stdout);
		vt_csv_field(stdout, r->method);
		fputc(',', stdout);
		vt_csv_field(stdout, r->site);
		for (int c = 0; c < VT_DIFF_COLS; c++)
			printf(",%" PRIu64 ",%" PRIu64 ",%" PRId64, r->base[c], r->now[c],
			       vt_diff_delta(r, (enum vt_diff_col)c));
		fputc('\n', stdout);
	}
}

/* A frame of a folded stack: ';' and ' ' would split it, so they become '_'. */
static void frame(const char *s)
{
	for (; *s; s++)
		fputc(*s == ';' || *s == ' ' || *s == '\n' ? '_' : *s, stdout);
}

static void print_folded(const struct vt_diff *d, enum vt_sort sort, size_t top)
{
	enum vt_diff_col c = sort == VT_SORT_BYTES ? VT_DIFF_BYTES : VT_DIFF_COUNT;
	size_t shown = 0;

	for (size_t i = 0; i < d->n; i++) {
		const struct vt_diff_row *r = &d->v[i];

		if ((!r->base[c] && !r->now[c]) || (top && shown == top))
			continue;
		shown++;
		/* as report's folded lines: the code, then the class as the leaf */
		frame(*r->method ? r->method : "-");
		if (*r->site) {
			fputc(';', stdout);
			frame(r->site);
		}
		fputc(';', stdout);
		frame(*r->klass ? r->klass : "-");
		printf(" %" PRIu64 " %" PRIu64 "\n", r->base[c], r->now[c]);
	}
}

int vt_cmd_diff(int argc, char **argv)
{
	struct vt_cli_args a = { .report = { .format = VT_FORMAT_TEXT, .by = VT_BY_SITE, .sort = VT_SORT_COUNT, .top = 0 } };
	struct vt_profile base, now;
	struct vt_diff d;
	int operands, err;

	err = vt_cli_parse(&diff_cmd, argc, argv, &a, &operands);
	if (err != VT_CLI_RUN)
		return err;
	if (argc - operands != 2)
		return vt_usage_error("diff", "two record files, BASE and NEW, got %d", argc - operands);
	if (a.report.format == VT_FORMAT_PPROF)
		return vt_usage_error("diff", "--format pprof: a diff is text, json, csv or folded");
	if (vt_record_load(&base, argv[operands], false))
		return 1;
	if (vt_record_load(&now, argv[operands + 1], false)) {
		vt_profile_free(&base);
		return 1;
	}
	err = vt_diff_build(&base, &now, &d);
	if (err) {
		fprintf(stderr, "vmtrace: diff: %s\n", strerror(-err));
	} else {
		switch (a.report.format) {
		case VT_FORMAT_JSON:
			print_json(&d, argv[operands], argv[operands + 1], a.report.top);
			break;
		case VT_FORMAT_CSV:
			print_csv(&d, a.report.top);
			break;
		case VT_FORMAT_FOLDED:
			print_folded(&d, a.report.sort, a.report.top);
			break;
		default: {
			struct vt_report_out out;

			vt_report_out_open(&out, stdout, &a, a.no_pager);
			err = print_text(out.file, &d, &a.report);
			if (vt_report_out_close(&out) && !err)
				err = -EIO;
			if (err)
				fprintf(stderr, "vmtrace: diff: cannot print it: %s\n", strerror(-err));
			break;
		}
		}
	}
	vt_diff_free(&d);
	vt_profile_free(&now);
	vt_profile_free(&base);
	return err ? 1 : 0;
}
