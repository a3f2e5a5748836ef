/*
 * cli.h: argument parsing shared by the subcommands (record, top, report):
 * one option table, its parser, and the global -v. Parsers are strict: the
 * whole string must be the value ("-p abc" and "-d 5x" are errors, never
 * 0). 0 or -EINVAL.
 */
#ifndef VMTRACE_CLI_H
#define VMTRACE_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "report/report_opts.h"
#include "session/session.h"
#include "session/session_watch.h"

int vt_parse_u64(const char *s, uint64_t *out);        /* decimal digits only */
int vt_parse_bytes(const char *s, uint64_t *out);      /* digits, then K, M or G (KiB...) */
int vt_parse_seconds(const char *s, double *out);      /* a positive number */
int vt_parse_interval(const char *s, double *out);     /* seconds, or with s, m or h: 10s, 1.5s, 2m */
/* "alloc,free,gc,cache,signal" (any of them, comma-separated) into an enum
 * vt_event_set; -EINVAL naming nothing, or a name not in the list */
int vt_parse_events(const char *s, uint32_t *out);

/* The ceilings of -i (a live view at least once a day) and --sample (one
 * sample per TiB is as good as none): beyond them, a usage error. */
#define VT_INTERVAL_MAX_S 86400
/* The least step of record's timeline: the provider flushes its batched
 * counts each 200 ms, so a shorter step would split them unevenly. */
#define VT_TIMELINE_STEP_MIN_S 0.2
#define VT_SAMPLE_MAX (UINT64_C(1) << 40)

/* -v: libbpf's own log on stderr. Off: libbpf stays quiet and vmtrace
 * reports failures itself in one line. */
void vt_set_verbose(bool on);
bool vt_verbose(void);

/* Every option any subcommand takes, once (cli.c holds its names and its
 * parser). A subcommand lists the codes it takes; serve, diff and the rest
 * pick from the same table, so one option means one thing everywhere. */
enum vt_opt {
	VT_OPT_PID = 'p', VT_OPT_DURATION = 'd', VT_OPT_OUTPUT = 'o',
	VT_OPT_INTERVAL = 'i', VT_OPT_COUNT = 'n', VT_OPT_VERBOSE = 'v', VT_OPT_HELP = 'h',
	VT_OPT_FORMAT = 256, VT_OPT_BY, VT_OPT_SORT, VT_OPT_TOP, VT_OPT_SAMPLE,
	VT_OPT_MAP_ENTRIES, VT_OPT_RUNTIME, VT_OPT_NO_METHODS, VT_OPT_FORCE,
	VT_OPT_EVERY, VT_OPT_OUT_DIR, VT_OPT_PUSH, VT_OPT_PUSH_NAME, VT_OPT_PUSH_QUEUE,
	VT_OPT_PUSH_TRIES, VT_OPT_LISTEN, VT_OPT_LINGER, VT_OPT_NO_FRAME_WALK, VT_OPT_STACK,
	VT_OPT_LIVE, VT_OPT_LIVE_MAX, VT_OPT_TEMP, VT_OPT_TIMELINE_STEP,
	VT_OPT_EVENTS,
	VT_OPT_GC_PAUSES,
	VT_OPT_CGROUP,
	VT_OPT_ALL,
	VT_OPT_NO_PAGER,
	VT_OPT_REPORT_FILE,
	VT_OPT_CHILDREN,
};

/* The help lines of the options top and serve share, in their order. */
#define VT_HELP_WATCH_OPTIONS \
	"      --map-entries N    keys each counting map holds at most (default: 262144\n" \
	"                         allocation sites, 16384 of the rest); a ceiling:\n" \
	"                         maps cost what they hold\n" \
	"      --runtime NAME     use this runtime's probes instead of detecting them\n" \
	"      --no-methods       runtimes with method probes: class and site only\n" \
	"      --no-frame-walk    Ruby: sites and methods from Ruby's USDT probes, not\n" \
	"                         its frames (a site trap per object, a TracePoint)\n" \
	"  -v, --verbose          libbpf's log on stderr\n" \
	"  -h, --help             this text\n"

/* ... and the help line of --children they share */
#define VT_HELP_CHILDREN \
	"      --children         with -p: also the processes below PID, those running\n" \
	"                         and those it forks, each its own rows (pid)\n"

#define VT_PIDS_MAX 64 /* processes one -p list names at most */

/* What the options fill in. The caller sets the defaults before parsing. */
struct vt_cli_args {
	struct vt_report_opts report;   /* --format, --by, --sort, --top */
	struct vt_opts session; /* -p, --sample, --map-entries, --runtime, --no-methods, --events */
	bool have_pid;                  /* -p was given */
	const char *cgroup;             /* --cgroup PATH: every process in it */
	bool all;                       /* --all: every process of a known runtime */
	bool children;                  /* --children: -p's processes and those below them */
	pid_t pids[VT_PIDS_MAX];        /* -p PID,PID...: every pid (session.pid = pids[0]) */
	size_t npids;
	bool force;                     /* --force */
	const char *output;             /* -o */
	double duration;                /* -d */
	double interval;                /* -i */
	uint64_t count;                 /* -n */
	bool have_format;               /* --format was given */
	bool have_top;                  /* --top was given */
	bool no_pager;                  /* --no-pager */
	const char *report_file;        /* --report-file FILE ("-": stdout) */
	double every;                   /* --every */
	const char *out_dir;            /* --out-dir */
	const char *push_url;           /* --push */
	const char *push_name;          /* --push-name */
	uint64_t push_queue, push_tries; /* --push-queue, --push-tries */
	const char *listen;             /* --listen */
	double linger;                  /* --linger */
};

struct vt_cli_cmd {
	const char *name;               /* "record": in messages */
	const char *usage_line, *help_text;
	const enum vt_opt *opts;        /* the options it takes, ending with 0 */
	bool stop_at_operand;           /* leave the first operand and all after it (-- CMD ARGS) */
};

/* What vt_cli_parse returns when the command goes on to run. */
#define VT_CLI_RUN (-1)

/* "vmtrace: CMD: <message> (see vmtrace CMD --help)" on stderr; returns 2. */
int vt_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Parses argv's options into a. VT_CLI_RUN with *operands = the index of
 * the first operand; 0 after -h printed the help; 2 after a usage error
 * (an unknown option, a missing or bad value) was printed. */
int vt_cli_parse(const struct vt_cli_cmd *cmd, int argc, char **argv, struct vt_cli_args *a,
		 int *operands);

/* What top and serve follow: --all, -p PID --children, or -p PID. */
enum vt_watch_what vt_cli_watch_what(const struct vt_cli_args *a);

/* With --all (record, top, serve): what it cannot take besides, in one
 * line, or NULL. */
const char *vt_cli_all_conflict(const struct vt_cli_args *a);

#endif /* VMTRACE_CLI_H */
