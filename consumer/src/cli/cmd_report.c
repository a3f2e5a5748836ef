/*
 * cmd_report.c: `vmtrace report`, a record file printed as a report.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/report_out.h"
#include "profile/profile.h"
#include "record/record_load.h"
#include "report/report_registry.h"

#define DEFAULT_RECORD "vmtrace.data"

static const char usage_line[] =
	"Usage: vmtrace report [FILE] [--format text|json|csv|folded|pprof|perfetto|flamegraph|timeline]\n"
	"                      [--by [cgroup,][pid,]class,method|class|method|site|stack]\n"
	"                      [--sort count|bytes] [--top N] [--no-pager]\n";

static const char help_text[] =
	"\n"
	"Print the report of a recording made by `vmtrace record` (default FILE: " DEFAULT_RECORD ").\n"
	"\n"
	"  --format F  text (default), json (docs/json-schema.md), csv, or folded\n"
	"              (`class;method weight` lines for flame graph tools), or pprof\n"
	"              (gzipped profile.proto for go tool pprof, Pyroscope, Parca), or\n"
	"              perfetto (trace-event JSON of GC pauses, signals and cache resets\n"
	"              for ui.perfetto.dev and chrome://tracing), or timeline (one HTML\n"
	"              page, no network: live bytes, allocations and frees per class\n"
	"              each second, or each record --timeline-step), or prometheus\n"
	"              (Prometheus text, as node_exporter's textfile collector reads it)\n"
	"  --by G      group allocations by class,method (default), class, method,\n"
	"              or site (class, method and allocation site), or stack (the whole\n"
	"              VM stack, of a record made with --stack); each may follow\n"
	"              pid, (per process) and cgroup, (per cgroup and container id)\n"
	"  --sort S    order allocations by count (default) or bytes; folded uses it as the weight\n"
	"  --top N     show only the first N rows of each section; 0 shows all\n"
	"              (default: 20 on a terminal, where names are also shortened to\n"
	"              fit its width; all rows, names whole, into a pipe or a file)\n"
	"  --no-pager  on a terminal, print a report longer than the screen as it\n"
	"              is rather than through PAGER (default less)\n"
	"  -h, --help  this text\n"
	"\n"
	"Examples:\n"
	"  vmtrace report                          # the text report of ./vmtrace.data\n"
	"  vmtrace report run.data --by class --sort bytes --top 10\n"
	"  vmtrace report --format json | jq '.allocations[0]'\n"
	"  vmtrace report --format folded --sort bytes | flamegraph.pl > alloc.svg\n"
	"  vmtrace report --format pprof > alloc.pb.gz && go tool pprof -top alloc.pb.gz\n"
	"  vmtrace report --format perfetto > trace.json   # open in ui.perfetto.dev\n";

static const enum vt_opt report_opts[] = {
	VT_OPT_FORMAT, VT_OPT_BY, VT_OPT_SORT, VT_OPT_TOP, VT_OPT_NO_PAGER, VT_OPT_HELP, 0,
};

static const struct vt_cli_cmd report_cmd = { "report", usage_line, help_text, report_opts, false };

int vt_cmd_report(int argc, char **argv)
{
	struct vt_cli_args a = { .report = { .format = VT_FORMAT_TEXT, .by = VT_BY_CLASS_METHOD, .sort = VT_SORT_COUNT, .top = 0 } };
	const char *path = DEFAULT_RECORD;
	struct vt_profile profile;
	int operands, err;

	err = vt_cli_parse(&report_cmd, argc, argv, &a, &operands);
	if (err != VT_CLI_RUN)
		return err;
	if (argc - operands > 1)
		return vt_usage_error("report", "one FILE at most, got '%s' and '%s'", argv[operands],
				      argv[operands + 1]);
	if (operands < argc)
		path = argv[operands];

	if (vt_record_load(&profile, path, operands >= argc))
		return 1;
	if (a.report.by == VT_BY_STACK && !profile.stacks.n && profile.allocs.n) {
		fprintf(stderr, "vmtrace: %s: --by stack: this record has no stacks "
			"(make it with `vmtrace record --stack vm`)\n", path);
		vt_profile_free(&profile);
		return 1;
	}
	struct vt_report_out out;

	vt_report_out_open(&out, stdout, &a, a.no_pager);
	err = vt_report_print(out.file, &profile, &a.report);
	if (vt_report_out_close(&out) && !err)
		err = -EIO;
	vt_profile_free(&profile);
	if (err) {
		fprintf(stderr, "vmtrace: report: cannot print the report: %s\n", strerror(-err));
		return 1;
	}
	return 0;
}
