/*
 * cli.h: argument parsing shared by the subcommands (record, top, report),
 * and the global -v. Parsers are strict: the whole string must be the
 * value ("-p abc" and "-d 5x" are errors, never 0). 0 or -EINVAL.
 */
#ifndef VMTRACE_CLI_H
#define VMTRACE_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "profile.h"
#include "session.h"

int vt_parse_u64(const char *s, uint64_t *out);        /* decimal digits only */
int vt_parse_bytes(const char *s, uint64_t *out);      /* digits, then K, M or G (KiB...) */
int vt_parse_seconds(const char *s, double *out);      /* a positive number */

/* -v: libbpf's own log on stderr. Off: libbpf stays quiet and vmtrace
 * reports failures itself in one line. */
void vt_set_verbose(bool on);
bool vt_verbose(void);

/* getopt_long codes of the long options more than one subcommand takes */
enum vt_cli_opt {
	VT_OPT_FORMAT = 256, VT_OPT_BY, VT_OPT_SORT, VT_OPT_TOP,
	VT_OPT_MAP_ENTRIES, VT_OPT_RUNTIME, VT_OPT_NO_METHODS,
	VT_OPT__NEXT         /* a subcommand's own long options start here */
};

#define VT_CLI_NOT_MINE (-1)

/* "vmtrace: CMD: <message> (see vmtrace CMD --help)" on stderr; returns 2. */
int vt_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The option opt with value arg, for `vmtrace CMD`: 0 taken, 2 after a
 * usage error, VT_CLI_NOT_MINE when it is not one of these. */
/* --format, --by, --sort, --top: the report's shape (record, report) */
int vt_cli_report_opt(const char *cmd, int opt, const char *arg, struct vt_report_opts *ropts);
/* -p, --map-entries, --runtime, --no-methods, -v: what to trace (record, top) */
int vt_cli_trace_opt(const char *cmd, int opt, const char *arg, struct vt_session_opts *so,
		     bool *have_pid);
/* Whatever is left: -h prints usage_line and help_text (0); a missing value
 * or an unknown option is a usage error (2). argv as getopt_long saw it. */
int vt_cli_last_opt(const char *cmd, int opt, char **argv, const char *usage_line,
		    const char *help_text);

#endif /* VMTRACE_CLI_H */
