/*
 * report_registry.h: picking a renderer by name and printing with it, a
 * report's or a diff's. The formats themselves are listed once, in
 * report_opts.h.
 */
#ifndef VMTRACE_REPORT_REGISTRY_H
#define VMTRACE_REPORT_REGISTRY_H

#include <stdbool.h>
#include <stdio.h>

#include "report/report_opts.h"

/* Parse a format name ("text", "json", ...): 0 or -EINVAL (out untouched). */
int vt_parse_format(const char *s, enum vt_format *out);
const char *vt_format_name(enum vt_format f); /* "?" when out of range */
/* Every format name, in order, joined by ", ": for messages and help. */
const char *vt_format_list(void);

/* Print the whole report in the chosen format. 0 or -errno. */
int vt_report_print(FILE *out, const struct vt_profile *p, const struct vt_report_opts *opts);

/* Print the diff d in the chosen format: 0, -ENOTSUP when the format has
 * no diff renderer, or -errno. */
int vt_diff_print(FILE *out, const struct vt_diff *d, const struct vt_diff_names *names,
		  const struct vt_report_opts *opts);
/* Whether a diff is written in format f. */
bool vt_diff_has_format(enum vt_format f);
/* The formats a diff is written in, joined by ", ". */
const char *vt_diff_format_list(void);

#endif /* VMTRACE_REPORT_REGISTRY_H */
