/*
 * report.h: the pieces behind vt_report_print (profile.h), shared by the
 * text, JSON, CSV and folded renderers and tested on their own.
 */
#ifndef VMTRACE_REPORT_H
#define VMTRACE_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "profile.h"

/* One row of the allocation list after grouping. The strings point into the
 * profile; a key the grouping drops is NULL. */
struct vt_alloc_row {
	const char *klass, *method, *site;
	uint64_t count, bytes, samples;
};

struct vt_alloc_table {
	struct vt_alloc_row *rows;
	size_t n;                    /* rows shown (after --top) */
	size_t total_rows;           /* rows before --top */
	uint64_t total_count, total_bytes, total_samples; /* over every row */
};

/* Groups p's allocations by opts->by, sorts by opts->sort (descending; ties
 * by the other number, then by name) and keeps the first opts->top rows.
 * 0 or -ENOMEM; free with vt_alloc_table_free. */
int vt_alloc_table_build(const struct vt_profile *p, const struct vt_report_opts *opts,
			 struct vt_alloc_table *t);
void vt_alloc_table_free(struct vt_alloc_table *t);

/* A keyed list sorted by count (descending), then name, name2. top 0 =
 * every row; *n gets the rows kept. NULL only on -ENOMEM (or n == 0). */
const struct vt_keyed_count **vt_keyed_sorted(const struct vt_keyed_count *v, size_t n,
					      size_t top, size_t *kept);

/* Nearest-rank percentile of sorted values: the smallest value with at
 * least pct% of the values at or below it. 0 when n == 0. */
uint64_t vt_percentile(const uint64_t *sorted, size_t n, unsigned pct);

struct vt_pause_stats {
	uint64_t pauses, total_ns, mean_ns, p50_ns, p99_ns, max_ns;
};

/* Statistics of the pauses of one kind (kind -1: every kind), exactly from
 * the pause list. 0 or -ENOMEM. */
int vt_pause_stats(const struct vt_profile *p, int kind, struct vt_pause_stats *s);

/* Whether reports list GC kind: minor and major always, CPython's three
 * generations always, any other kind only when it has collections. */
bool vt_gc_kind_shown(const struct vt_profile *p, int kind);

/* What the GC sections print about every pause in the list. */
struct vt_gc_summary {
	uint64_t allocated_total, allocated_max; /* bytes allocated between collections */
	uint64_t objects_collected;
	uint64_t hist[VT_HIST_BUCKETS];          /* pauses by log2 of microseconds */
};
void vt_gc_summarize(const struct vt_profile *p, struct vt_gc_summary *out);

/* log2 bucket of v: 0 holds 0 and 1, bucket i holds [2^i, 2^(i+1)). */
int vt_log2_bucket(uint64_t v);
/* An ASCII bar chart of non-empty buckets, in the style of libbpf-tools'
 * print_log2_hist; unit names the values ("usecs", "nsecs"). */
void vt_print_log2_hist(FILE *out, const uint64_t *hist, int buckets, const char *unit,
			const char *indent);

/* s as a JSON string literal with quotes. Invalid UTF-8 bytes become
 * U+FFFD, so the output is always valid JSON. */
void vt_json_string(FILE *out, const char *s);
/* s as one CSV field (RFC 4180: quoted when it holds , " CR LF or starts or
 * ends with a space; quotes doubled). */
void vt_csv_field(FILE *out, const char *s);

/* "SIGUSR2", "SIGRTMIN+3", or "SIG99" for numbers without a name. */
const char *vt_signal_name(int signo, char *buf, size_t len);

/* "850 ns", "12.3 us", "4.56 ms", "1.23 s". */
const char *vt_format_ns(uint64_t ns, char *buf, size_t len);

const char *vt_format_name(enum vt_format f);
const char *vt_group_name(enum vt_group g);
const char *vt_sort_name(enum vt_sort s);

/* The renderers vt_report_print picks from. */
int vt_report_text(FILE *out, const struct vt_profile *p, const struct vt_report_opts *opts);
int vt_report_json(FILE *out, const struct vt_profile *p, const struct vt_report_opts *opts);
int vt_report_csv(FILE *out, const struct vt_profile *p, const struct vt_report_opts *opts);
int vt_report_folded(FILE *out, const struct vt_profile *p, const struct vt_report_opts *opts);

#endif /* VMTRACE_REPORT_H */
