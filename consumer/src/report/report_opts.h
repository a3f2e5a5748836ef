/*
 * report_opts.h: what shapes a report (format, grouping, sort, rows) and
 * the list of report formats. It names things and calls nothing, so every
 * layer of the report may include it.
 *
 * A new format is one new file and one line: write report_NAME.c defining
 * vt_report_NAME() (the vt_render_fn below), then add X(NAME, name) to
 * VT_REPORT_FORMATS. The enum, the prototypes, --format's parser and its
 * error message all follow from that line (report_registry.c).
 */
#ifndef VMTRACE_REPORT_OPTS_H
#define VMTRACE_REPORT_OPTS_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* The renderer registry: X(ENUM_SUFFIX, name), in --format's order. */
#define VT_REPORT_FORMATS(X) \
	X(TEXT, text)         \
	X(JSON, json)         \
	X(CSV, csv)           \
	X(FOLDED, folded)     \
	X(PPROF, pprof)       \
	X(PERFETTO, perfetto) \
	X(FLAMEGRAPH, flamegraph) \
	X(TIMELINE, timeline) \
	X(PROMETHEUS, prometheus)

#define VT_FORMAT_ENUM_(up, name) VT_FORMAT_##up,
enum vt_format { VT_REPORT_FORMATS(VT_FORMAT_ENUM_) VT_FORMAT__COUNT };
#undef VT_FORMAT_ENUM_

enum vt_group { VT_BY_CLASS_METHOD, VT_BY_CLASS, VT_BY_METHOD, VT_BY_SITE, VT_BY_STACK };
enum vt_sort { VT_SORT_COUNT, VT_SORT_BYTES };
/* rows per process (always with more than one) and per cgroup too */
enum vt_per { VT_PER_PID = 1, VT_PER_CGROUP = 2 };

struct vt_report_opts {
	enum vt_format format;
	enum vt_group by;
	enum vt_sort sort;
	size_t top;                  /* rows of each section; 0 = every row */
	uint32_t per;                /* --by pid,/cgroup,...: enum vt_per bits */
	size_t width;                /* text on a terminal: its columns, names shortened
				      * in the middle to fit; 0 = names whole */
};

struct vt_profile;

/* A renderer prints the whole report of p in its format: 0 or -errno. It
 * reads the report model (report_model.h) and never calls back above it. */
typedef int vt_render_fn(FILE *out, const struct vt_profile *p, const struct vt_report_opts *opts);

#define VT_RENDER_DECL_(up, name) vt_render_fn vt_report_##name;
VT_REPORT_FORMATS(VT_RENDER_DECL_)
#undef VT_RENDER_DECL_

/* The diff renderers (`vmtrace diff`): X(ENUM_SUFFIX, name) of the formats
 * a diff is written in, each vt_diff_report_NAME() in report_diff.c. */
#define VT_DIFF_FORMATS(X) \
	X(TEXT, text)       \
	X(JSON, json)       \
	X(CSV, csv)         \
	X(FOLDED, folded)

struct vt_diff;

/* What a diff renderer is told beside the diff: the two records' names. */
struct vt_diff_names {
	const char *base, *now;
};

/* A diff renderer prints the rows of d that changed in its format: 0 or -errno. */
typedef int vt_diff_render_fn(FILE *out, const struct vt_diff *d, const struct vt_diff_names *names,
			      const struct vt_report_opts *opts);

#define VT_DIFF_RENDER_DECL_(up, name) vt_diff_render_fn vt_diff_report_##name;
VT_DIFF_FORMATS(VT_DIFF_RENDER_DECL_)
#undef VT_DIFF_RENDER_DECL_

#endif /* VMTRACE_REPORT_OPTS_H */
