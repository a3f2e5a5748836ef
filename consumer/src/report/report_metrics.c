/*
 * report_metrics.c: a cumulative profile as Prometheus/OpenMetrics text
 * (report_metrics.h), for serve's scrapes and as the report format
 * `prometheus`.
 *
 * The two text formats differ in three places only: OpenMetrics names a
 * counter family without its "_total" suffix, ends with "# EOF", and has
 * its own Content-Type. Everything else is written once for both.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "process/cgroup.h"
#include "report/report_metrics.h"
#include "report/report_fmt.h"
#include "report/report_model.h"
#include "report/report_opts.h"
#include "profile/strtab.h"

/* the keyed families whose keys are capped; FAM_PROC: --all's processes */
enum family { FAM_ALLOC, FAM_MCR, FAM_CCR, FAM_GSI, FAM_PROC, FAM__COUNT };

struct vt_metrics {
	size_t top;
	char *comm;                  /* the one target's; NULL under --all */
	struct vt_strtab keys[FAM__COUNT]; /* admitted keys, "pid\x1fa\x1fb" */
};

/* GC pause histogram bounds, seconds: 10 us to 10 s in steps of about 3x */
/* Pause buckets: the log2 buckets of microseconds every pause is counted
 * in as it arrives (vt_gc_stats.hist, profile_gc.c), so each bucket only
 * grows and _count is their sum; bucket i counts the pauses shorter than
 * 2^(i+1) us, from 2 us to 2^24 us (16.8 s). */
#define N_PAUSE_LE 24

/* Signal latency buckets: the log2 histogram's bounds 2^k ns, k = 10, 12, ...
 * 34 (1 us to 17 s); bucket b holds [2^b, 2^(b+1)), so "le 2^k" is exact. */
#define LAT_K_FIRST 10
#define LAT_K_LAST 34

struct vt_metrics *vt_metrics_new(size_t top, const char *comm, bool all)
{
	struct vt_metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->top = top ? top : 1;
	if (all)
		return m;
	m->comm = strdup(comm ? comm : "");
	if (!m->comm) {
		free(m);
		return NULL;
	}
	return m;
}

void vt_metrics_free(struct vt_metrics *m)
{
	if (!m)
		return;
	for (int f = 0; f < FAM__COUNT; f++)
		vt_strtab_free(&m->keys[f]);
	free(m->comm);
	free(m);
}

const char *vt_metrics_content_type(bool openmetrics)
{
	return openmetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
			   : "text/plain; version=0.0.4; charset=utf-8";
}

/* Whether (pid, a, b) has a series of its own (pid 0: none): the first
 * `top` keys met get one, for good; -ENOMEM as -1. A key spelled like the
 * fold row is folded too. */
static int admitted(struct vt_metrics *m, enum family f, int32_t pid, const char *a, const char *b)
{
	char *key;
	int64_t i;

	if (!strcmp(a ? a : "", VT_METRICS_OTHER))
		return 0;
	if (asprintf(&key, "%d\x1f%s\x1f%s", (int)pid, a ? a : "", b ? b : "") < 0)
		return -1;
	i = vt_strtab_find(&m->keys[f], key);
	if (i < 0 && m->keys[f].n < m->top)
		i = vt_strtab_intern(&m->keys[f], key, NULL);
	free(key);
	return i >= 0;
}

static void label_value(FILE *out, const char *s)
{
	fputc('"', out);
	while (s && *s) {
		int n = vt_utf8_len((const unsigned char *)s);

		if (n == 0) {
			fputs("\xef\xbf\xbd", out);
			s++;
		} else if (*s == '\\' || *s == '"') {
			fputc('\\', out), fputc(*s++, out);
		} else if (*s == '\n') {
			fputs("\\n", out), s++;
		} else {
			fwrite(s, 1, (size_t)n, out);
			s += n;
		}
	}
	fputc('"', out);
}

static void family(FILE *out, bool om, const char *name, const char *type, const char *help)
{
	bool counter = !strcmp(type, "counter");

	/* OpenMetrics: the family has no _total; Prometheus 0.0.4: it has */
	fprintf(out, "# HELP %s%s %s\n", name, counter && !om ? "_total" : "", help);
	fprintf(out, "# TYPE %s%s %s\n", name, counter && !om ? "_total" : "", type);
}

/* The labels a series starts with: {runtime="..",pid="..",comm=".." of the
 * one target; under --all those of process pr with its cgroup (and the
 * container id it shows), or for what the profile sums over the processes
 * (pr NULL) the runtimes alone. */
static void target_labels(FILE *out, const struct vt_metrics *m, const struct vt_profile *p,
			  const struct vt_process *pr)
{
	char id[128];

	fputs("{runtime=", out);
	label_value(out, pr && pr->runtime ? pr->runtime : p->runtime);
	if (m->comm || pr) {
		fprintf(out, ",pid=\"%d\",comm=", pr ? (int)pr->pid : (int)p->pid);
		label_value(out, pr ? pr->comm : m->comm);
	}
	if (!pr)
		return;
	fputs(",cgroup=", out);
	label_value(out, pr->cgroup);
	vt_container_id(pr->cgroup, id, sizeof(id));
	if (*id) {
		fputs(",container_id=", out);
		label_value(out, id);
	}
}

/* Under --all, the labels of a per-process family's fold series. */
static void other_labels(FILE *out, const struct vt_metrics *m, const struct vt_profile *p)
{
	target_labels(out, m, p, NULL);
	if (!m->comm)
		fputs(",pid=\"" VT_METRICS_OTHER "\",comm=\"" VT_METRICS_OTHER "\"", out);
}

/* One keyed family: rows of (a, b, value), each of process pr under --all
 * (NULL: a sum over them), capped into "(other)". */
struct keyed_row {
	const char *a, *b;
	uint64_t v;
	const struct vt_process *pr;
};

struct keyed_family {
	enum family f;
	const char *series, *la, *lb;
	bool per_process;            /* its rows carry their process (--all) */
};

static int keyed(FILE *out, struct vt_metrics *m, const struct vt_profile *p,
		 const struct keyed_family *kf, const struct keyed_row *rows, size_t n)
{
	enum family f = kf->f;
	const char *series = kf->series, *la = kf->la, *lb = kf->lb;
	uint64_t other = 0;
	bool any_other = false;

	for (size_t i = 0; i < n; i++) {
		int ok = admitted(m, f, rows[i].pr ? rows[i].pr->pid : 0, rows[i].a, rows[i].b);

		if (ok < 0)
			return -ENOMEM;
		if (!ok) {
			other += rows[i].v;
			any_other = true;
			continue;
		}
		fputs(series, out);
		target_labels(out, m, p, rows[i].pr);
		fprintf(out, ",%s=", la);
		label_value(out, rows[i].a);
		if (lb) {
			fprintf(out, ",%s=", lb);
			label_value(out, rows[i].b);
		}
		fprintf(out, "} %" PRIu64 "\n", rows[i].v);
	}
	/* once a key was folded, the fold row stays, so it never vanishes */
	if (any_other || m->keys[f].n >= m->top) {
		fputs(series, out);
		if (kf->per_process)
			other_labels(out, m, p);
		else
			target_labels(out, m, p, NULL);
		fprintf(out, ",%s=\"" VT_METRICS_OTHER "\"", la);
		if (lb)
			fprintf(out, ",%s=\"" VT_METRICS_OTHER "\"", lb);
		fprintf(out, "} %" PRIu64 "\n", other);
	}
	return 0;
}

static int keyed_counts(FILE *out, struct vt_metrics *m, const struct vt_profile *p,
			const struct keyed_family *kf, const struct vt_keyed_count *v, size_t n)
{
	struct keyed_row *rows = calloc(n ? n : 1, sizeof(*rows));
	int err;

	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		rows[i] = (struct keyed_row){ v[i].name, v[i].name2, v[i].count, NULL };
	err = keyed(out, m, p, kf, rows, n);
	free(rows);
	return err;
}

/* The process of an allocation row under --all, else NULL. */
static const struct vt_process *row_process(const struct vt_metrics *m, const struct vt_profile *p,
					    const struct vt_alloc_row *r)
{
	return !m->comm && r->proc ? &p->procs.v[r->proc - 1] : NULL;
}

static int allocations(FILE *out, struct vt_metrics *m, const struct vt_profile *p, bool om)
{
	/* under --all a row per process, keyed by it */
	struct vt_report_opts o = { .by = VT_BY_CLASS_METHOD, .sort = VT_SORT_COUNT,
				    .per = m->comm ? 0 : VT_PER_PID };
	struct keyed_family kf = { FAM_ALLOC, "vmtrace_allocations_total", "class", "method",
				   !m->comm };
	struct vt_alloc_table t;
	struct keyed_row *rows;
	int err;

	err = vt_alloc_table_build(p, &o, &t);
	if (err)
		return err;
	rows = calloc(t.n ? t.n : 1, sizeof(*rows));
	if (!rows) {
		vt_alloc_table_free(&t);
		return -ENOMEM;
	}
	family(out, om, "vmtrace_allocations", "counter", "Objects allocated, per class and allocating method.");
	for (size_t i = 0; i < t.n; i++)
		rows[i] = (struct keyed_row){ t.rows[i].klass, t.rows[i].method, t.rows[i].count,
					      row_process(m, p, &t.rows[i]) };
	err = keyed(out, m, p, &kf, rows, t.n);
	if (!err) {
		family(out, om, "vmtrace_allocated_bytes", "counter",
		       "Bytes allocated, per class and allocating method.");
		for (size_t i = 0; i < t.n; i++)
			rows[i].v = t.rows[i].bytes;
		kf.series = "vmtrace_allocated_bytes_total";
		err = keyed(out, m, p, &kf, rows, t.n);
	}
	free(rows);
	vt_alloc_table_free(&t);
	return err;
}

static void gc(FILE *out, const struct vt_metrics *m, const struct vt_profile *p, bool om)
{
	family(out, om, "vmtrace_gc_collections", "counter", "Garbage collections, per kind.");
	for (int k = 0; k < VT_GC_KINDS; k++) {
		if (!vt_gc_kind_shown(p, k))
			continue;
		fputs("vmtrace_gc_collections_total", out);
		target_labels(out, m, p, NULL);
		fprintf(out, ",kind=\"%s\"} %" PRIu64 "\n", vt_gc_kind_name(p, k), p->gc_collections[k]);
	}
	family(out, om, "vmtrace_gc_pause_seconds", "histogram", "GC pause durations, per kind.");
	for (int k = 0; k < VT_GC_KINDS; k++) {
		const struct vt_gc_stats *g = &p->gc_stats[k];
		uint64_t below = 0;

		if (!vt_gc_kind_shown(p, k))
			continue;
		for (int b = 0; b <= N_PAUSE_LE; b++) {
			fputs("vmtrace_gc_pause_seconds_bucket", out);
			target_labels(out, m, p, NULL);
			if (b < N_PAUSE_LE) {
				below += g->hist[b];
				fprintf(out, ",kind=\"%s\",le=\"%g\"} %" PRIu64 "\n", vt_gc_kind_name(p, k),
					(double)(1ull << (b + 1)) * 1e-6, below);
			} else {
				fprintf(out, ",kind=\"%s\",le=\"+Inf\"} %" PRIu64 "\n", vt_gc_kind_name(p, k),
					g->count);
			}
		}
		fputs("vmtrace_gc_pause_seconds_count", out);
		target_labels(out, m, p, NULL);
		fprintf(out, ",kind=\"%s\"} %" PRIu64 "\n", vt_gc_kind_name(p, k), g->count);
		fputs("vmtrace_gc_pause_seconds_sum", out);
		target_labels(out, m, p, NULL);
		fprintf(out, ",kind=\"%s\"} %.9f\n", vt_gc_kind_name(p, k), g->total_ns / 1e9);
	}
}

static void signals(FILE *out, const struct vt_metrics *m, const struct vt_profile *p, bool om)
{
	static const char *const what[2] = { "received", "handled" };
	char name[32];

	for (int w = 0; w < 2; w++) {
		char fam[64], help[96];

		snprintf(fam, sizeof(fam), "vmtrace_signals_%s", what[w]);
		snprintf(help, sizeof(help), "Signals %s by the target, per signal.", what[w]);
		family(out, om, fam, "counter", help);
		for (size_t i = 0; i < p->signals.n; i++) {
			const struct vt_signal *s = &p->signals.v[i];

			fprintf(out, "%s_total", fam);
			target_labels(out, m, p, NULL);
			fprintf(out, ",signal=\"%s\"} %" PRIu64 "\n",
				vt_signal_name(s->signo, name, sizeof(name)), w ? s->handled : s->received);
		}
	}
	family(out, om, "vmtrace_signal_latency_seconds", "histogram",
	       "From a signal's arrival to its subscribers having run, per signal.");
	for (size_t i = 0; i < p->signals.n; i++) {
		const struct vt_signal *s = &p->signals.v[i];
		uint64_t below = 0, total = 0;
		int b = 0;

		vt_signal_name(s->signo, name, sizeof(name));
		for (int j = 0; j < VT_HIST_BUCKETS; j++)
			total += s->latency_hist[j];
		for (int k = LAT_K_FIRST; k <= LAT_K_LAST; k += 2) {
			for (; b < k; b++)
				below += s->latency_hist[b];
			fputs("vmtrace_signal_latency_seconds_bucket", out);
			target_labels(out, m, p, NULL);
			fprintf(out, ",signal=\"%s\",le=\"%.9g\"} %" PRIu64 "\n", name,
				(double)(1ull << k) / 1e9, below);
		}
		fputs("vmtrace_signal_latency_seconds_bucket", out);
		target_labels(out, m, p, NULL);
		fprintf(out, ",signal=\"%s\",le=\"+Inf\"} %" PRIu64 "\n", name, total);
		fputs("vmtrace_signal_latency_seconds_count", out);
		target_labels(out, m, p, NULL);
		fprintf(out, ",signal=\"%s\"} %" PRIu64 "\n", name, total);
		fputs("vmtrace_signal_latency_seconds_sum", out);
		target_labels(out, m, p, NULL);
		fprintf(out, ",signal=\"%s\"} %.9f\n", name, s->latency_total_ns / 1e9);
	}
}

/* "allocation map full (events)" -> "allocation_map_full": the words
 * before the parenthesis, lower case, joined by '_'. */
static void reason_of(const char *what, char *buf, size_t len)
{
	size_t n = 0;
	bool sep = false;

	for (const char *s = what; *s && *s != '(' && n + 2 < len; s++) {
		char c = *s;

		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z')) {
			if (sep && n)
				buf[n++] = '_';
			buf[n++] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
			sep = false;
		} else if (c != '\'') { /* "target's" stays one word */
			sep = true;
		}
	}
	buf[n] = '\0';
}

static void lost(FILE *out, const struct vt_metrics *m, const struct vt_profile *p, bool om)
{
	char reason[128];

	family(out, om, "vmtrace_lost", "counter",
	       "Events or names not counted where they belong, per reason (every loss counter).");
	for (size_t i = 0; i < p->lost.n; i++) {
		reason_of(p->lost.v[i].what, reason, sizeof(reason));
		fputs("vmtrace_lost_total", out);
		target_labels(out, m, p, NULL);
		fprintf(out, ",reason=\"%s\",what=", reason);
		label_value(out, p->lost.v[i].what);
		fprintf(out, "} %" PRIu64 "\n", p->lost.v[i].count);
	}
}

/* vmtrace_target_info: the one target with its probes, and its sampling
 * period; under --all each
 * process the first `top` met (an info metric: 1 each, as Prometheus names
 * them), and vmtrace_targets_other: how many have no series of their own. */
static int targets(FILE *out, struct vt_metrics *m, const struct vt_profile *p, bool om)
{
	uint64_t other = 0;

	if (m->comm) {
		family(out, om, "vmtrace_target_info", "gauge", "The traced process and its probes; always 1.");
		fputs("vmtrace_target_info", out);
		target_labels(out, m, p, NULL);
		fputs(",probes=", out);
		label_value(out, p->probes);
		fputs("} 1\n", out);
		family(out, om, "vmtrace_sample_period_bytes", "gauge",
		       "Mean bytes between sampled allocations, whose counts are then estimates; 0: every "
		       "allocation counted.");
		fputs("vmtrace_sample_period_bytes", out);
		target_labels(out, m, p, NULL);
		fprintf(out, "} %" PRIu64 "\n", p->sample_period);
		return 0;
	}
	family(out, om, "vmtrace_target_info", "gauge", "Each traced process with series of its own; 1 each.");
	for (size_t i = 0; i < p->procs.n; i++) {
		int ok = admitted(m, FAM_PROC, p->procs.v[i].pid, "", "");

		if (ok < 0)
			return -ENOMEM;
		if (!ok) {
			other++;
			continue;
		}
		fputs("vmtrace_target_info", out);
		target_labels(out, m, p, &p->procs.v[i]);
		fputs("} 1\n", out);
	}
	family(out, om, "vmtrace_targets_other", "gauge",
	       "Traced processes past --top, with no series of their own.");
	fprintf(out, "vmtrace_targets_other %" PRIu64 "\n", other);
	return 0;
}

int vt_metrics_render(struct vt_metrics *m, const struct vt_profile *p, bool om, char **buf,
		      size_t *len)
{
	FILE *out = open_memstream(buf, len);
	int err = 0;

	if (!out)
		return -ENOMEM;
	err = targets(out, m, p, om);
	family(out, om, "vmtrace_traced_seconds", "gauge", "Seconds since the probes went live.");
	fputs("vmtrace_traced_seconds", out);
	target_labels(out, m, p, NULL);
	fprintf(out, "} %.3f\n", p->duration_s);
	if (!err && p->has_allocations)
		err = allocations(out, m, p, om);
	if (!err) {
		static const struct keyed_family kf = { FAM_MCR, "vmtrace_method_cache_resets_total",
							"class", "method", false };

		family(out, om, "vmtrace_method_cache_resets", "counter",
		       "Method cache resets, per class and method (method \"\": the whole class).");
		err = keyed_counts(out, m, p, &kf, p->method_cache_resets.v, p->method_cache_resets.n);
	}
	if (!err) {
		static const struct keyed_family kf = { FAM_CCR, "vmtrace_constant_cache_resets_total",
							"name", NULL, false };

		family(out, om, "vmtrace_constant_cache_resets", "counter",
		       "Constant cache resets, per constant.");
		err = keyed_counts(out, m, p, &kf, p->constant_cache_resets.v,
				   p->constant_cache_resets.n);
	}
	if (!err) {
		static const struct keyed_family kf = { FAM_GSI, "vmtrace_global_serial_increments_total",
							"reason", NULL, false };

		family(out, om, "vmtrace_global_serial_increments", "counter",
		       "Global method serial increments, per reason.");
		err = keyed_counts(out, m, p, &kf, p->global_serial_incs.v, p->global_serial_incs.n);
	}
	if (!err) {
		gc(out, m, p, om);
		signals(out, m, p, om);
		lost(out, m, p, om);
		if (om)
			fputs("# EOF\n", out);
	}
	if (fclose(out) && !err)
		err = -ENOMEM;
	if (err) {
		free(*buf);
		*buf = NULL;
	}
	return err;
}

/* The report format `prometheus`: the Prometheus text 0.0.4 of a recording,
 * as a node_exporter textfile collector reads it; every key its own series
 * unless --top bounds them. */
int vt_report_prometheus(FILE *out, const struct vt_profile *p, const struct vt_report_opts *opts)
{
	char comm[16] = "";
	const char *prog = p->target ? p->target : "";
	size_t n = strcspn(prog, " ");
	const char *slash = memrchr(prog, '/', n);
	struct vt_metrics *m;
	char *text = NULL;
	size_t len = 0;
	int err;

	/* the name the kernel gives the program (comm): its file, 15 bytes */
	if (slash) {
		n -= (size_t)(slash + 1 - prog);
		prog = slash + 1;
	}
	snprintf(comm, sizeof(comm), "%.*s", (int)n, prog);
	m = vt_metrics_new(opts->top ? opts->top : (size_t)1 << 30, comm, p->procs.n > 0);
	if (!m)
		return -ENOMEM;
	err = vt_metrics_render(m, p, false, &text, &len);
	if (!err && fwrite(text, 1, len, out) != len)
		err = -EIO;
	free(text);
	vt_metrics_free(m);
	return err;
}
