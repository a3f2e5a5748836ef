/*
 * report_fmt.h: the small printing pieces renderers share: the log2 bar
 * chart, JSON and CSV escaping, signal names and durations. Leaf: it knows
 * no profile and no renderer.
 */
#ifndef VMTRACE_REPORT_FMT_H
#define VMTRACE_REPORT_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* An ASCII bar chart of non-empty buckets, in the style of libbpf-tools'
 * print_log2_hist; unit names the values ("usecs", "nsecs"). */
void vt_print_log2_hist(FILE *out, const uint64_t *hist, int buckets, const char *unit,
			const char *indent);

/* s as a JSON string literal with quotes. Invalid UTF-8 bytes become
 * U+FFFD, so the output is always valid JSON. */
void vt_json_string(FILE *out, const char *s);
/* The same, and with script: '<', '>' and '&' escaped too, so the literal
 * is safe inside an HTML <script> element. */
void vt_json_string_in(FILE *out, const char *s, bool script);
/* name as a terminal should show it, in a new string (NULL on ENOMEM):
 * control bytes and invalid UTF-8 as \xNN and a backslash as \\, so no
 * name draws rows of its own, moves the cursor or reads as another. */
char *vt_text_name(const char *name);

/* s as one CSV field (RFC 4180: quoted when it holds , " CR LF or starts or
 * ends with a space; quotes doubled). A field starting with = + - @ TAB or
 * CR, which a spreadsheet would run as a formula, is quoted with a ' put
 * before it, as OWASP's CSV injection advice says. */
void vt_csv_field(FILE *out, const char *s);

/* Length of the well-formed UTF-8 sequence at s (1..4), 0 when invalid
 * (overlong, surrogate, above U+10FFFF, cut short). */
int vt_utf8_len(const unsigned char *s);

/* "SIGUSR2", "SIGRTMIN+3", or "SIG99" for numbers without a name. */
const char *vt_signal_name(int signo, char *buf, size_t len);

/* "850 ns", "12.3 us", "4.56 ms", "1.23 s". */
const char *vt_format_ns(uint64_t ns, char *buf, size_t len);

/* in[len] as a gzip member (header and trailer, as pprof and HTTP's
 * Content-Encoding want) in a malloc'd *out. 0, -ENOMEM or -EIO. */
int vt_gzip(const uint8_t *in, size_t len, uint8_t **out, size_t *outlen);

#endif /* VMTRACE_REPORT_FMT_H */
