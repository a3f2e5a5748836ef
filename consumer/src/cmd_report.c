/*
 * cmd_report.c: `vmtrace report`, a record file printed as a report.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "profile.h"

#define DEFAULT_RECORD "vmtrace.data"

static const char usage_line[] =
	"Usage: vmtrace report [FILE] [--format text|json|csv|folded]\n"
	"                      [--by class,method|class|method|site] [--sort count|bytes] [--top N]\n";

static const char help_text[] =
	"\n"
	"Print the report of a recording made by `vmtrace record` (default FILE: " DEFAULT_RECORD ").\n"
	"\n"
	"  --format F  text (default), json (docs/json-schema.md), csv, or folded\n"
	"              (`class;method weight` lines for flame graph tools)\n"
	"  --by G      group allocations by class,method (default), class, method,\n"
	"              or site (class, method and allocation site)\n"
	"  --sort S    order allocations by count (default) or bytes; folded uses it as the weight\n"
	"  --top N     show only the first N allocation (and call) rows; 0 shows all\n"
	"  -h, --help  this text\n"
	"\n"
	"Examples:\n"
	"  vmtrace report                          # the text report of ./vmtrace.data\n"
	"  vmtrace report run.data --by class --sort bytes --top 10\n"
	"  vmtrace report --format json | jq '.allocations[0]'\n"
	"  vmtrace report --format folded --sort bytes | flamegraph.pl > alloc.svg\n";

int vt_cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, VT_OPT_FORMAT },
		{ "by", required_argument, NULL, VT_OPT_BY },
		{ "sort", required_argument, NULL, VT_OPT_SORT },
		{ "top", required_argument, NULL, VT_OPT_TOP },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct vt_report_opts opts = { VT_FORMAT_TEXT, VT_BY_CLASS_METHOD, VT_SORT_COUNT, 0 };
	const char *path = DEFAULT_RECORD;
	struct vt_profile profile;
	int opt, err;

	optind = 0; /* glibc: start afresh even if main ran getopt already */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		int r = vt_cli_report_opt("report", opt, optarg, &opts);

		if (r == VT_CLI_NOT_MINE)
			return vt_cli_last_opt("report", opt, argv, usage_line, help_text);
		if (r)
			return r;
	}
	if (argc - optind > 1)
		return vt_usage_error("report", "one FILE at most, got '%s' and '%s'", argv[optind],
				      argv[optind + 1]);
	if (optind < argc)
		path = argv[optind];

	err = vt_profile_read(&profile, path);
	switch (err) {
	case 0:
		break;
	case -EBADMSG:
		fprintf(stderr, "vmtrace: %s: not a vmtrace record, or truncated or damaged\n", path);
		return 1;
	case -EPROTONOSUPPORT:
		fprintf(stderr, "vmtrace: %s: written by a newer vmtrace (unknown record format "
			"version)\n", path);
		return 1;
	case -ENOENT:
		fprintf(stderr, "vmtrace: %s: %s%s\n", path, strerror(-err),
			optind < argc ? "" : " (make one with vmtrace record)");
		return 1;
	default:
		fprintf(stderr, "vmtrace: %s: %s\n", path, strerror(-err));
		return 1;
	}
	err = vt_report_print(stdout, &profile, &opts);
	vt_profile_free(&profile);
	if (err) {
		fprintf(stderr, "vmtrace: report: cannot print the report: %s\n", strerror(-err));
		return 1;
	}
	return 0;
}
