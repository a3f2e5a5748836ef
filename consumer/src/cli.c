/*
 * cli.c: strict argument parsers, the options subcommands share, and the
 * libbpf log switch (cli.h).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <bpf/libbpf.h>

#include "cli.h"

static bool verbose;

int vt_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int vt_parse_bytes(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case '\0': break;
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: return -EINVAL;
	}
	if (shift && (*end == 'i' || *end == 'I') && (end[1] == 'b' || end[1] == 'B'))
		end += 2;
	else if (shift && (*end == 'b' || *end == 'B'))
		end++;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

int vt_parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v <= 0 || v > 1e9)
		return -EINVAL;
	*out = v;
	return 0;
}

int vt_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "vmtrace: %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see vmtrace %s --help)\n", cmd);
	return 2;
}

int vt_cli_report_opt(const char *cmd, int opt, const char *arg, struct vt_report_opts *ropts)
{
	uint64_t v;

	switch (opt) {
	case VT_OPT_FORMAT:
		if (vt_parse_format(arg, &ropts->format))
			return vt_usage_error(cmd, "--format: '%s' is not one of text, json, csv, folded", arg);
		return 0;
	case VT_OPT_BY:
		if (vt_parse_group(arg, &ropts->by))
			return vt_usage_error(cmd, "--by: '%s' is not one of class,method, class, method, site",
					      arg);
		return 0;
	case VT_OPT_SORT:
		if (vt_parse_sort(arg, &ropts->sort))
			return vt_usage_error(cmd, "--sort: '%s' is not one of count, bytes", arg);
		return 0;
	case VT_OPT_TOP:
		if (vt_parse_u64(arg, &v))
			return vt_usage_error(cmd, "--top: '%s' is not a number of rows", arg);
		ropts->top = (size_t)v;
		return 0;
	default:
		return VT_CLI_NOT_MINE;
	}
}

int vt_cli_trace_opt(const char *cmd, int opt, const char *arg, struct vt_session_opts *so,
		     bool *have_pid)
{
	uint64_t v;

	switch (opt) {
	case 'p':
		if (vt_parse_pid(arg, &so->pid))
			return vt_usage_error(cmd, "-p: '%s' is not a process id", arg);
		*have_pid = true;
		return 0;
	case VT_OPT_MAP_ENTRIES:
		if (vt_parse_u64(arg, &v) || v == 0 || v > (1u << 24))
			return vt_usage_error(cmd, "--map-entries: '%s' is not a number from 1 to 16777216",
					      arg);
		so->map_entries = (uint32_t)v;
		return 0;
	case VT_OPT_RUNTIME:
		so->runtime = arg;
		return 0;
	case VT_OPT_NO_METHODS:
		so->no_methods = true;
		return 0;
	case 'v':
		vt_set_verbose(true);
		return 0;
	default:
		return VT_CLI_NOT_MINE;
	}
}

int vt_cli_last_opt(const char *cmd, int opt, char **argv, const char *usage_line,
		    const char *help_text)
{
	switch (opt) {
	case 'h':
		fputs(usage_line, stdout);
		fputs(help_text, stdout);
		return 0;
	case ':':
		return vt_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
	default:
		return vt_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
	}
}

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	if (!verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void vt_set_verbose(bool on)
{
	verbose = on;
	libbpf_set_print(print_libbpf);
}

bool vt_verbose(void)
{
	return verbose;
}
