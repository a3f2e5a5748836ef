/*
 * cmd_diff.c: `vmtrace diff BASE NEW`, what changed between two recordings
 * per class, method and site (record_diff.c), growth first, in text, json,
 * csv or folded (two weights per stack, as flamegraph.pl --diff reads).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "record/record_diff.h"
#include "record/record_load.h"
#include "report/report_fmt.h"

static const char usage_line[] =
	"Usage: vmtrace diff BASE.data NEW.data [--format text|json|csv|folded] [--sort count|bytes]\n"
	"                    [--top N]\n";

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
	"  --top N     the first N changed rows (0: all)\n"
	"  -h, --help  this text\n"
	"\n"
	"Examples:\n"
	"  vmtrace diff before.data after.data\n"
	"  vmtrace diff before.data after.data --format folded --sort bytes | flamegraph.pl > diff.svg\n";

static const enum vt_opt diff_opts[] = { VT_OPT_FORMAT, VT_OPT_SORT, VT_OPT_TOP, VT_OPT_HELP, 0 };

static const struct vt_cli_cmd diff_cmd = { "diff", usage_line, help_text, diff_opts, false };

static const char *const col_name[VT_DIFF_COLS] = { "count", "bytes", "live_count", "live_bytes" };

static const char *or_dash(const char *s)
{
	return *s ? s : "-";
}

static void print_text(const struct vt_diff *d, size_t top)
{
	size_t shown = 0, unchanged = 0;

	printf("%-20s %-28s %-24s %12s %14s %12s %14s\n", "CLASS", "METHOD", "SITE", "COUNT+-",
	       "BYTES+-", "LIVE+-", "LIVE_BYTES+-");
	for (size_t i = 0; i < d->n; i++) {
		const struct vt_diff_row *r = &d->v[i];

		if (!vt_diff_changed(r)) {
			unchanged++;
			continue;
		}
		if (top && shown == top)
			continue;
		shown++;
		printf("%-20s %-28s %-24s %+12" PRId64 " %+14" PRId64, or_dash(r->klass), or_dash(r->method),
		       or_dash(r->site), vt_diff_delta(r, VT_DIFF_COUNT), vt_diff_delta(r, VT_DIFF_BYTES));
		if (d->live)
			printf(" %+12" PRId64 " %+14" PRId64 "\n", vt_diff_delta(r, VT_DIFF_LIVE_COUNT),
			       vt_diff_delta(r, VT_DIFF_LIVE_BYTES));
		else
			printf(" %12s %14s\n", "-", "-");
	}
	printf("%zu rows changed, %zu unchanged%s\n", d->n - unchanged, unchanged,
	       d->live ? "" : "; no live heap in both records (record --live)");
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
	struct vt_cli_args a = { .report = { VT_FORMAT_TEXT, VT_BY_SITE, VT_SORT_COUNT, 0, false } };
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
		default:
			print_text(&d, a.report.top);
			break;
		}
	}
	vt_diff_free(&d);
	vt_profile_free(&now);
	vt_profile_free(&base);
	return err ? 1 : 0;
}
