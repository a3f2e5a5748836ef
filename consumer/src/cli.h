/*
 * cli.h: argument parsing shared by the subcommands that trace (record,
 * top), and the global -v. Parsers are strict: the whole string must be the
 * value ("-p abc" and "-d 5x" are errors, never 0). 0 or -EINVAL.
 */
#ifndef VMTRACE_CLI_H
#define VMTRACE_CLI_H

#include <stdbool.h>
#include <stdint.h>

int vt_parse_u64(const char *s, uint64_t *out);        /* decimal digits only */
int vt_parse_bytes(const char *s, uint64_t *out);      /* digits, then K, M or G (KiB...) */
int vt_parse_seconds(const char *s, double *out);      /* a positive number */

/* -v: libbpf's own log on stderr. Off: libbpf stays quiet and vmtrace
 * reports failures itself in one line. */
void vt_set_verbose(bool on);
bool vt_verbose(void);

#endif /* VMTRACE_CLI_H */
