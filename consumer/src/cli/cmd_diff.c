/*
 * cmd_diff.c: `vmtrace diff BASE NEW`, what changed between two recordings
 * per class, method and site (profile/profile_compare.c), growth first, in text, json,
 * csv or folded (two weights per stack, as flamegraph.pl --diff reads):
 * the renderers are the report registry's (report/report_diff.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/report_out.h"
#include "profile/profile_compare.h"
#include "record/record_load.h"
#include "report/report_registry.h"

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
	if (!vt_diff_has_format(a.report.format))
		return vt_usage_error("diff", "--format %s: a diff is %s", vt_format_name(a.report.format),
				      vt_diff_format_list());
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
		struct vt_diff_names names = { argv[operands], argv[operands + 1] };
		struct vt_report_out out;

		/* the table on a terminal through the pager; the others as they are */
		if (a.report.format == VT_FORMAT_TEXT)
			vt_report_out_open(&out, stdout, &a, a.no_pager);
		err = vt_diff_print(a.report.format == VT_FORMAT_TEXT ? out.file : stdout, &d, &names,
				    &a.report);
		if (a.report.format == VT_FORMAT_TEXT && vt_report_out_close(&out) && !err)
			err = -EIO;
		if (err)
			fprintf(stderr, "vmtrace: diff: cannot print it: %s\n", strerror(-err));
	}
	vt_diff_free(&d);
	vt_profile_free(&now);
	vt_profile_free(&base);
	return err ? 1 : 0;
}
