/*
 * cmd_report.c: `vmtrace report`, a record file printed as a report.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int usage_error(const char *fmt, const char *a, const char *b)
{
	fputs("vmtrace: report: ", stderr);
	fprintf(stderr, fmt, a, b);
	fputs(" (see vmtrace report --help)\n", stderr);
	return 2;
}

int vt_cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "by", required_argument, NULL, 'b' },
		{ "sort", required_argument, NULL, 's' },
		{ "top", required_argument, NULL, 't' },
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
		const char *arg = optarg;
		char *end;

		switch (opt) {
		case 'f':
			if (vt_parse_format(arg, &opts.format))
				return usage_error("--format: '%s' is not one of %s", arg,
						   "text, json, csv, folded");
			break;
		case 'b':
			if (vt_parse_group(arg, &opts.by))
				return usage_error("--by: '%s' is not one of %s", arg,
						   "class,method, class, method, site");
			break;
		case 's':
			if (vt_parse_sort(arg, &opts.sort))
				return usage_error("--sort: '%s' is not one of %s", arg, "count, bytes");
			break;
		case 't':
			errno = 0;
			opts.top = (size_t)strtoull(arg, &end, 10);
			if (*arg < '0' || *arg > '9' || *end || errno)
				return usage_error("--top: '%s' is not a number of rows%s", arg, "");
			break;
		case 'h':
			fputs(usage_line, stdout);
			fputs(help_text, stdout);
			return 0;
		case ':':
			return usage_error("option '%s' needs a value%s", argv[optind - 1], "");
		default:
			return usage_error("unknown option '%s'%s", argv[optind - 1], "");
		}
	}
	if (argc - optind > 1)
		return usage_error("one FILE at most, got '%s' and '%s'", argv[optind],
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
