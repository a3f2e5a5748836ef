/*
 * cli.c: strict argument parsers, the one option table every subcommand
 * parses with, and the libbpf log switch (cli.h).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "cli/cli.h"
#include "report/report_model.h"
#include "report/report_registry.h"
#include "runtimes/runtime.h"

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

int vt_parse_interval(const char *s, double *out)
{
	char *end;
	double v, unit = 1;

	if (!s || !*s || (*s != '.' && (*s < '0' || *s > '9')))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s)
		return -EINVAL;
	if (*end == 's' || *end == 'm' || *end == 'h') {
		unit = *end == 's' ? 1 : *end == 'm' ? 60 : 3600;
		end++;
	}
	v *= unit;
	if (*end || !isfinite(v) || v <= 0 || v > 1e9)
		return -EINVAL;
	*out = v;
	return 0;
}

static const struct {
	const char *name;
	uint32_t set;
} event_names[] = {
	{ "alloc", VT_EVENTS_ALLOC }, { "free", VT_EVENTS_FREE }, { "gc", VT_EVENTS_GC },
	{ "cache", VT_EVENTS_CACHE }, { "signal", VT_EVENTS_SIGNAL },
};

int vt_parse_events(const char *s, uint32_t *out)
{
	uint32_t set = 0;

	if (!s || !*s)
		return -EINVAL;
	while (*s) {
		size_t n = strcspn(s, ","), i;

		for (i = 0; i < sizeof(event_names) / sizeof(event_names[0]); i++)
			if (strlen(event_names[i].name) == n && !strncmp(s, event_names[i].name, n))
				break;
		if (i == sizeof(event_names) / sizeof(event_names[0]))
			return -EINVAL;
		set |= event_names[i].set;
		s += n;
		if (*s == ',' && !*++s)
			return -EINVAL; /* a trailing comma names nothing */
	}
	*out = set;
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

/* The option table: every option's names and whether it takes a value. */
static const struct {
	enum vt_opt code;
	const char *name;
	int has_arg;
} options[] = {
	{ VT_OPT_PID, "pid", required_argument },
	{ VT_OPT_DURATION, "duration", required_argument },
	{ VT_OPT_OUTPUT, "output", required_argument },
	{ VT_OPT_INTERVAL, "interval", required_argument },
	{ VT_OPT_COUNT, "count", required_argument },
	{ VT_OPT_FORCE, "force", no_argument },
	{ VT_OPT_FORMAT, "format", required_argument },
	{ VT_OPT_BY, "by", required_argument },
	{ VT_OPT_SORT, "sort", required_argument },
	{ VT_OPT_TOP, "top", required_argument },
	{ VT_OPT_SAMPLE, "sample", required_argument },
	{ VT_OPT_MAP_ENTRIES, "map-entries", required_argument },
	{ VT_OPT_GC_PAUSES, "gc-pauses", required_argument },
	{ VT_OPT_RUNTIME, "runtime", required_argument },
	{ VT_OPT_NO_METHODS, "no-methods", no_argument },
	{ VT_OPT_NO_FRAME_WALK, "no-frame-walk", no_argument },
	{ VT_OPT_EVERY, "every", required_argument },
	{ VT_OPT_OUT_DIR, "out-dir", required_argument },
	{ VT_OPT_PUSH, "push", required_argument },
	{ VT_OPT_PUSH_NAME, "push-name", required_argument },
	{ VT_OPT_PUSH_QUEUE, "push-queue", required_argument },
	{ VT_OPT_PUSH_TRIES, "push-tries", required_argument },
	{ VT_OPT_LISTEN, "listen", required_argument },
	{ VT_OPT_LINGER, "linger", required_argument },
	{ VT_OPT_CGROUP, "cgroup", required_argument },
	{ VT_OPT_ALL, "all", no_argument },
	{ VT_OPT_CHILDREN, "children", no_argument },
	{ VT_OPT_STACK, "stack", required_argument },
	{ VT_OPT_LIVE, "live", no_argument },
	{ VT_OPT_LIVE_MAX, "live-max", required_argument },
	{ VT_OPT_TEMP, "temp", required_argument },
	{ VT_OPT_TIMELINE_STEP, "timeline-step", required_argument },
	{ VT_OPT_EVENTS, "events", required_argument },
	{ VT_OPT_NO_PAGER, "no-pager", no_argument },
	{ VT_OPT_REPORT_FILE, "report-file", required_argument },
	{ VT_OPT_VERBOSE, "verbose", no_argument },
	{ VT_OPT_HELP, "help", no_argument },
};

#define N_OPTIONS (sizeof(options) / sizeof(options[0]))

/* -p PID[,PID...]: every item a process id, none twice, none empty. */
static int take_pids(const char *cmd, const char *arg, struct vt_cli_args *a)
{
	char item[32];

	a->npids = 0;
	for (const char *s = arg;;) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		pid_t pid;

		if (!len)
			return vt_usage_error(cmd, "-p: '%s' has an empty item", arg);
		if (len >= sizeof(item))
			return vt_usage_error(cmd, "-p: '%.*s' is not a process id", (int)len, s);
		memcpy(item, s, len);
		item[len] = '\0';
		if (vt_parse_pid(item, &pid))
			return vt_usage_error(cmd, "-p: '%s' is not a process id", item);
		for (size_t i = 0; i < a->npids; i++)
			if (a->pids[i] == pid)
				return vt_usage_error(cmd, "-p: pid %d is given twice", (int)pid);
		if (a->npids == VT_PIDS_MAX)
			return vt_usage_error(cmd, "-p: more than %d processes", VT_PIDS_MAX);
		a->pids[a->npids++] = pid;
		if (!comma)
			break;
		s = comma + 1;
	}
	a->session.pid = a->pids[0];
	a->have_pid = true;
	return 0;
}

/* One option's value into a: 0, or 2 after a usage error. */
static int take(const char *cmd, int opt, const char *arg, struct vt_cli_args *a)
{
	uint64_t v;

	switch (opt) {
	case VT_OPT_PID:
		return take_pids(cmd, arg, a);
	case VT_OPT_DURATION:
	case VT_OPT_INTERVAL:
		if (vt_parse_seconds(arg, opt == VT_OPT_DURATION ? &a->duration : &a->interval))
			return vt_usage_error(cmd, "-%c: '%s' is not a positive number of seconds", opt, arg);
		if (opt == VT_OPT_INTERVAL && a->interval > VT_INTERVAL_MAX_S)
			return vt_usage_error(cmd, "-i: '%s' is more than %d seconds", arg,
					      VT_INTERVAL_MAX_S);
		return 0;
	case VT_OPT_OUTPUT:
		if (!*arg)
			return vt_usage_error(cmd, "-o: empty file name");
		a->output = arg;
		return 0;
	case VT_OPT_COUNT:
		if (vt_parse_u64(arg, &a->count) || a->count == 0)
			return vt_usage_error(cmd, "-n: '%s' is not a positive count", arg);
		return 0;
	case VT_OPT_FORCE:
		a->force = true;
		return 0;
	case VT_OPT_FORMAT:
		if (vt_parse_format(arg, &a->report.format))
			return vt_usage_error(cmd, "--format: '%s' is not one of %s", arg, vt_format_list());
		a->have_format = true;
		return 0;
	case VT_OPT_EVERY:
		if (vt_parse_interval(arg, &a->every))
			return vt_usage_error(cmd, "--every: '%s' is not an interval (10s, 1.5s, 2m)", arg);
		return 0;
	case VT_OPT_OUT_DIR:
		if (!*arg)
			return vt_usage_error(cmd, "--out-dir: empty directory name");
		a->out_dir = arg;
		return 0;
	case VT_OPT_PUSH:
		a->push_url = arg;
		return 0;
	case VT_OPT_PUSH_NAME:
		a->push_name = arg;
		return 0;
	case VT_OPT_PUSH_QUEUE:
	case VT_OPT_PUSH_TRIES:
		if (vt_parse_u64(arg, &v) || v < 1 || v > 1000)
			return vt_usage_error(cmd, "--push-%s: '%s' is not a number from 1 to 1000",
					      opt == VT_OPT_PUSH_QUEUE ? "queue" : "tries", arg);
		*(opt == VT_OPT_PUSH_QUEUE ? &a->push_queue : &a->push_tries) = v;
		return 0;
	case VT_OPT_LISTEN:
		a->listen = arg;
		return 0;
	case VT_OPT_ALL:
		a->all = true;
		return 0;
	case VT_OPT_CHILDREN:
		a->children = true;
		return 0;
	case VT_OPT_CGROUP:
		if (!*arg)
			return vt_usage_error(cmd, "--cgroup: empty path");
		a->cgroup = arg;
		return 0;
	case VT_OPT_LINGER:
		if (vt_parse_seconds(arg, &a->linger))
			return vt_usage_error(cmd, "--linger: '%s' is not a positive number of seconds", arg);
		return 0;
	case VT_OPT_BY:
		/* "cgroup," and "pid," before any grouping: rows per cgroup, process */
		a->report.per = 0;
		for (const char *g = arg;;) {
			if (!strncmp(g, "pid,", 4) && !(a->report.per & VT_PER_PID)) {
				a->report.per |= VT_PER_PID, g += 4;
			} else if (!strncmp(g, "cgroup,", 7) && !(a->report.per & VT_PER_CGROUP)) {
				a->report.per |= VT_PER_CGROUP, g += 7;
			} else {
				if (vt_parse_group(g, &a->report.by))
					return vt_usage_error(cmd, "--by: '%s' is not one of class,method, class, "
							      "method, site, stack (each may follow cgroup, and pid,)",
							      arg);
				break;
			}
		}
		return 0;
	case VT_OPT_SORT:
		if (vt_parse_sort(arg, &a->report.sort))
			return vt_usage_error(cmd, "--sort: '%s' is not one of count, bytes", arg);
		return 0;
	case VT_OPT_TOP:
		if (vt_parse_u64(arg, &v))
			return vt_usage_error(cmd, "--top: '%s' is not a number of rows", arg);
		a->report.top = (size_t)v;
		a->have_top = true;
		return 0;
	case VT_OPT_NO_PAGER:
		a->no_pager = true;
		return 0;
	case VT_OPT_REPORT_FILE:
		if (!*arg)
			return vt_usage_error(cmd, "--report-file: an empty name");
		a->report_file = arg;
		return 0;
	case VT_OPT_SAMPLE:
		if (vt_parse_bytes(arg, &a->session.sample_period))
			return vt_usage_error(cmd, "--sample: '%s' is not a number of bytes", arg);
		a->session.sample_set = true;
		if (a->session.sample_period > VT_SAMPLE_MAX)
			return vt_usage_error(cmd, "--sample: '%s' is more than 1024G bytes", arg);
		return 0;
	case VT_OPT_MAP_ENTRIES:
		if (vt_parse_u64(arg, &v) || v == 0 || v > (1u << 24))
			return vt_usage_error(cmd, "--map-entries: '%s' is not a number from 1 to 16777216",
					      arg);
		a->session.map_entries = (uint32_t)v;
		return 0;
	case VT_OPT_GC_PAUSES:
		if (vt_parse_u64(arg, &v) || v == 0 || v > VT_GC_PAUSES_MAX)
			return vt_usage_error(cmd, "--gc-pauses: '%s' is not a number from 1 to %u", arg,
					      VT_GC_PAUSES_MAX);
		a->session.gc_pauses = (uint32_t)v;
		return 0;
	case VT_OPT_RUNTIME:
		a->session.runtime = arg;
		return 0;
	case VT_OPT_NO_METHODS:
		a->session.no_methods = true;
		return 0;
	case VT_OPT_NO_FRAME_WALK:
		a->session.no_frame_walk = true;
		return 0;
	case VT_OPT_STACK: {
		static const char *const modes[] = { "none", "vm", "native", "both" };

		for (uint32_t m = 0; m < 4; m++)
			if (!strcmp(arg, modes[m])) {
				a->session.stacks = m;
				return 0;
			}
		return vt_usage_error(cmd, "--stack: '%s' is not one of vm, native, both, none", arg);
	}
	case VT_OPT_LIVE:
		a->session.live = true;
		return 0;
	case VT_OPT_LIVE_MAX:
		if (vt_parse_u64(arg, &v) || v == 0 || v > (1u << 26))
			return vt_usage_error(cmd, "--live-max: '%s' is not a number from 1 to 67108864",
					      arg);
		a->session.live_max = (uint32_t)v;
		return 0;
	case VT_OPT_TEMP: {
		double s;

		if (vt_parse_seconds(arg, &s) || s > 3600)
			return vt_usage_error(cmd, "--temp: '%s' is not a number of seconds up to 3600",
					      arg);
		a->session.temp_ns = (uint64_t)(s * 1e9);
		return 0;
	}
	case VT_OPT_TIMELINE_STEP: {
		double s;

		if (vt_parse_interval(arg, &s) || s < VT_TIMELINE_STEP_MIN_S || s > VT_INTERVAL_MAX_S)
			return vt_usage_error(cmd, "--timeline-step: '%s' is not an interval from %gs to %ds (0.5s, 1s, 1m)",
					      arg, VT_TIMELINE_STEP_MIN_S, VT_INTERVAL_MAX_S);
		a->session.series_ns = (uint64_t)(s * 1e9 + 0.5);
		return 0;
	}
	case VT_OPT_EVENTS:
		if (vt_parse_events(arg, &a->session.events))
			return vt_usage_error(cmd, "--events: '%s' is not a list of alloc, free, gc, cache, signal",
					      arg);
		return 0;
	case VT_OPT_VERBOSE:
		vt_set_verbose(true);
		return 0;
	default:
		return 2; /* not reached: getopt returns only the codes it was given */
	}
}

int vt_cli_parse(const struct vt_cli_cmd *cmd, int argc, char **argv, struct vt_cli_args *a,
		 int *operands)
{
	struct option longopts[N_OPTIONS + 1];
	char shortopts[2 * N_OPTIONS + 3];
	size_t nl = 0, ns = 0;
	int opt;

	/* "+": stop at the first operand; ":": a missing value comes back as ':' */
	if (cmd->stop_at_operand)
		shortopts[ns++] = '+';
	shortopts[ns++] = ':';
	for (const enum vt_opt *o = cmd->opts; *o; o++) {
		for (size_t i = 0; i < N_OPTIONS; i++) {
			if (options[i].code != *o)
				continue;
			longopts[nl++] = (struct option){ options[i].name, options[i].has_arg, NULL,
							  (int)options[i].code };
			if (options[i].code < 256) {
				shortopts[ns++] = (char)options[i].code;
				if (options[i].has_arg)
					shortopts[ns++] = ':';
			}
		}
	}
	longopts[nl] = (struct option){ 0 };
	shortopts[ns] = '\0';

	optind = 0; /* glibc: start afresh even if getopt ran before */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		int r;

		switch (opt) {
		case VT_OPT_HELP:
			fputs(cmd->usage_line, stdout);
			fputs(cmd->help_text, stdout);
			return 0;
		case ':':
			return vt_usage_error(cmd->name, "option '%s' needs a value", argv[optind - 1]);
		case '?':
			return vt_usage_error(cmd->name, "unknown option '%s'", argv[optind - 1]);
		default:
			r = take(cmd->name, opt, optarg, a);
			if (r)
				return r;
		}
	}
	*operands = optind;
	if (a->children && !a->have_pid)
		return vt_usage_error(cmd->name, "--children follows the processes of -p PID");
	/* a recording made here: --by stack has nothing to group without stacks */
	for (const enum vt_opt *o = cmd->opts; *o; o++)
		if (*o == VT_OPT_STACK && a->report.by == VT_BY_STACK && !a->session.stacks)
			return vt_usage_error(cmd->name, "--by stack needs stacks: add --stack vm "
					      "(or native, both)");
	return VT_CLI_RUN;
}

enum vt_watch_what vt_cli_watch_what(const struct vt_cli_args *a)
{
	return a->all ? VT_WATCH_ALL : a->children ? VT_WATCH_TREE : VT_WATCH_ONE;
}

const char *vt_cli_all_conflict(const struct vt_cli_args *a)
{
	if (a->have_pid || a->session.cmd || a->cgroup)
		return "--all names the processes: not with -p, --cgroup or a command";
	if (a->every > 0)
		return "--every takes one process (-p PID), not --all";
	if (a->session.live || a->session.live_max)
		return "--live takes one process (-p PID), not --all";
	if (a->session.stacks)
		return "--stack takes one process (-p PID or a command), not --all yet";
	if (a->session.sample_period)
		return "--sample takes one process (-p PID or a command), not --all yet";
	if (a->linger > 0)
		return "--linger waits out one target's exit; --all has none (it ends at -d or Ctrl-C)";
	return NULL;
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
