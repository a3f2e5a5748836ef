/*
 * report_model.h: the report model: the allocation table after grouping
 * and sorting, sorted keyed lists, pause statistics and GC summaries. Every
 * renderer reads it; it calls nothing above it.
 */
#ifndef VMTRACE_REPORT_MODEL_H
#define VMTRACE_REPORT_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "profile/profile.h"
#include "report/report_opts.h"

/* One row of the allocation list after grouping. The strings point into the
 * profile; a key the grouping drops is NULL. */
struct vt_alloc_row {
	const char *klass, *method, *site;
	const char *stack;           /* --by stack: "root;...;leaf" (the table's), else NULL */
	int32_t pid;                 /* per process (vt_report_by_pid): its pid, else 0 */
	const char *comm;            /* and its comm, else NULL */
	uint32_t proc;               /* and its number in the profile's procs, else 0 */
	const char *cgroup;          /* per cgroup (--by cgroup,...): its path, else NULL */
	uint64_t count, bytes, samples;
};

struct vt_alloc_table {
	struct vt_alloc_row *rows;
	size_t n;                    /* rows shown (after --top) */
	size_t total_rows;           /* rows before --top */
	uint64_t total_count, total_bytes, total_samples; /* over every row */
	char **texts;                /* --by stack: the stack names rows point at */
	size_t ntexts;
};

/* Groups p's allocations by opts->by, sorts by opts->sort (descending; ties
 * by the other number, then by name) and keeps the first opts->top rows.
 * 0 or -ENOMEM; free with vt_alloc_table_free. */
int vt_alloc_table_build(const struct vt_profile *p, const struct vt_report_opts *opts,
			 struct vt_alloc_table *t);
void vt_alloc_table_free(struct vt_alloc_table *t);
/* The order of rows by their keys (cgroup, pid, class, stack, method, site),
 * for qsort and bsearch of vt_alloc_row. */
int vt_alloc_row_cmp(const void *a, const void *b);
/* Are p's rows shown per process: --by pid,... or more than one process. */
bool vt_report_by_pid(const struct vt_profile *p, const struct vt_report_opts *opts);
/* Are p's rows shown per cgroup: --by cgroup,... on a record of processes. */
bool vt_report_by_cgroup(const struct vt_profile *p, const struct vt_report_opts *opts);
/* The grouping's name as reports print it ("cgroup,pid,class,method"), in buf. */
const char *vt_report_group_name(const struct vt_profile *p, const struct vt_report_opts *opts,
				 char *buf, size_t len);

/* A keyed list sorted by count (descending), then name, name2. top 0 =
 * every row; *n gets the rows kept. NULL only on -ENOMEM (or n == 0). */
const struct vt_keyed_count **vt_keyed_sorted(const struct vt_keyed_count *v, size_t n,
					      size_t top, size_t *kept);

/* Nearest-rank percentile of sorted values: the smallest value with at
 * least pct% of the values at or below it. 0 when n == 0. */
uint64_t vt_percentile(const uint64_t *sorted, size_t n, unsigned pct);

struct vt_pause_stats {
	uint64_t pauses, total_ns, mean_ns, p50_ns, p99_ns, max_ns;
	uint64_t not_kept;   /* pauses counted but not in the list */
	bool estimated;      /* p50/p99 from the histogram (the list is not complete) */
};

/* Statistics of the pauses of one kind (kind -1: every kind): count, total,
 * mean and max exactly from the summary; percentiles exactly from the list
 * while it holds every pause, else estimated from the log2 histogram (the
 * upper edge of the bucket). 0 or -ENOMEM. */
int vt_pause_stats(const struct vt_profile *p, int kind, struct vt_pause_stats *s);

/* Whether reports list GC kind: minor and major always, CPython's three
 * generations always, any other kind only when it has collections. */
bool vt_gc_kind_shown(const struct vt_profile *p, int kind);

/* What the GC sections print about every pause, kept in the list or not. */
struct vt_gc_summary {
	uint64_t pauses, not_kept;
	uint64_t allocated_total, allocated_max; /* bytes allocated between collections */
	uint64_t objects_collected;
	uint64_t hist[VT_HIST_BUCKETS];          /* pauses by log2 of microseconds */
};
void vt_gc_summarize(const struct vt_profile *p, struct vt_gc_summary *out);

/* Which figure of a report a loss counter touches (by its name, as the
 * adapters give it), in words, and whether those figures are then lower
 * bounds; a loss of names, of attribution (a row's method or site), or of
 * entries only the timeline, the pause list or a push holds, leaves every
 * count true. */
struct vt_loss_touch {
	const char *figure;          /* "allocations"; "timeline only": no count of the report */
	bool lower_bound;            /* the counts of figure (a count the text report
				      * shows) are lower bounds */
};
struct vt_loss_touch vt_loss_touches(const char *what);

/* log2 bucket of v: 0 holds 0 and 1, bucket i holds [2^i, 2^(i+1)). */
int vt_log2_bucket(uint64_t v);
/* "root;...;leaf" of a stack (malloc'ed; NULL on -ENOMEM); ';' in a
 * name becomes ':'. A cut stack starts with "[cut]". */
char *vt_stack_text(const struct vt_stack *s);
/* Parse "class,method|class|method|site|stack" and "count|bytes": 0 or -EINVAL
 * (out untouched); and the names back ("?" when out of range). */
int vt_parse_group(const char *s, enum vt_group *out);
int vt_parse_sort(const char *s, enum vt_sort *out);
const char *vt_group_name(enum vt_group g);
const char *vt_sort_name(enum vt_sort s);

#endif /* VMTRACE_REPORT_MODEL_H */
