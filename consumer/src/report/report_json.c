/*
 * report_json.c: the report for programs (docs/json-schema.md). Field names
 * are stable and match demovm's truth file where they overlap (class,
 * method, count, bytes, name, reason, signo, received; gc.minor/gc.major).
 * One object per line inside lists, so reports diff well.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_live.h"
#include "report/report_fmt.h"
#include "process/cgroup.h"
#include "report/report_model.h"

#define U64(v) ((unsigned long long)(v))

static void json_u64(FILE *out, const char *key, uint64_t v, bool more)
{
	fprintf(out, "\"%s\": %llu%s", key, U64(v), more ? ", " : "");
}

static void json_str(FILE *out, const char *key, const char *s, bool more)
{
	fprintf(out, "\"%s\": ", key);
	vt_json_string(out, s);
	if (more)
		fputs(", ", out);
}

static void json_hist(FILE *out, const uint64_t *hist)
{
	bool first = true;

	fputc('[', out);
	for (int i = 0; i < VT_HIST_BUCKETS; i++) {
		uint64_t high = i >= 63 ? UINT64_MAX : (UINT64_C(1) << (i + 1)) - 1;

		if (!hist[i])
			continue;
		fprintf(out, "%s{\"low\": %llu, \"high\": %llu, \"count\": %llu}", first ? "" : ", ",
			U64(i ? UINT64_C(1) << i : 0), U64(high), U64(hist[i]));
		first = false;
	}
	fputc(']', out);
}

/* Each comma-separated probe name as a list item. */
static void json_probes(FILE *out, const char *probes)
{
	const char *s = probes ? probes : "";
	bool first = true;

	fputs("  \"probes\": [", out);
	while (*s) {
		size_t len = strcspn(s, ",");
		char *name = strndup(s, len);

		if (len) {
			fputs(first ? "" : ", ", out);
			vt_json_string(out, name ? name : "");
			first = false;
		}
		free(name);
		s += len;
		if (*s == ',')
			s++;
	}
	fputs("],\n", out);
}

static int json_allocations(FILE *out, const struct vt_profile *p, const struct vt_report_opts *o)
{
	struct vt_alloc_table t;
	int err = vt_alloc_table_build(p, o, &t);

	if (err)
		return err;
	fputs("  \"allocations\": [", out);
	for (size_t i = 0; i < t.n; i++) {
		const struct vt_alloc_row *r = &t.rows[i];

		fputs(i ? ",\n    {" : "\n    {", out);
		if (r->cgroup) {
			char id[128];

			vt_container_id(r->cgroup, id, sizeof(id));
			json_str(out, "cgroup", r->cgroup, true);
			json_str(out, "container", id, true);
		}
		if (r->comm) {
			fprintf(out, "\"pid\": %d, ", (int)r->pid);
			json_str(out, "comm", r->comm, true);
		}
		if (r->klass)
			json_str(out, "class", r->klass, true);
		if (r->method)
			json_str(out, "method", r->method, true);
		if (r->stack)
			json_str(out, "stack", r->stack, true);
		if (r->site)
			json_str(out, "site", r->site, true);
		json_u64(out, "count", r->count, true);
		json_u64(out, "bytes", r->bytes, true);
		json_u64(out, "samples", r->samples, false);
		fputc('}', out);
	}
	fputs(t.n ? "\n  ],\n" : "],\n", out);
	fprintf(out, "  \"allocations_total\": {\"rows\": %zu, \"count\": %llu, \"bytes\": %llu, "
		"\"samples\": %llu},\n", t.total_rows, U64(t.total_count), U64(t.total_bytes),
		U64(t.total_samples));
	vt_alloc_table_free(&t);
	return 0;
}

static void json_pause_stats(FILE *out, const struct vt_pause_stats *s)
{
	json_u64(out, "pauses", s->pauses, true);
	json_u64(out, "pause_total_ns", s->total_ns, true);
	json_u64(out, "pause_mean_ns", s->mean_ns, true);
	json_u64(out, "pause_p50_ns", s->p50_ns, true);
	json_u64(out, "pause_p99_ns", s->p99_ns, true);
	json_u64(out, "pause_max_ns", s->max_ns, true);
	/* pauses counted but not in pause_list; percentiles then from the histogram */
	json_u64(out, "pauses_not_kept", s->not_kept, true);
	fprintf(out, "\"percentiles_estimated\": %s", s->estimated ? "true" : "false");
}

static int json_gc(FILE *out, const struct vt_profile *p)
{
	uint64_t collections = 0;
	struct vt_pause_stats st;
	bool first = true;
	int err;

	fputs("  \"gc\": {\n    ", out);
	for (int k = 0; k < VT_GC_KINDS; k++) {
		collections += p->gc_collections[k];
		if (vt_gc_kind_shown(p, k))
			json_u64(out, vt_gc_kind_name(p, k), p->gc_collections[k], true);
	}
	json_u64(out, "collections", collections, true);
	err = vt_pause_stats(p, -1, &st);
	if (err)
		return err;
	json_pause_stats(out, &st);
	fputs(",\n    \"kinds\": [", out);
	for (int k = 0; k < VT_GC_KINDS; k++) {
		if (!vt_gc_kind_shown(p, k))
			continue;
		err = vt_pause_stats(p, k, &st);
		if (err)
			return err;
		fputs(first ? "\n      {" : ",\n      {", out);
		fprintf(out, "\"kind\": %d, ", k);
		json_str(out, "name", vt_gc_kind_name(p, k), true);
		json_u64(out, "collections", p->gc_collections[k], true);
		json_pause_stats(out, &st);
		fputc('}', out);
		first = false;
	}
	fputs(first ? "],\n" : "\n    ],\n", out);
	struct vt_gc_summary sum;
	vt_gc_summarize(p, &sum);
	fputs("    ", out);
	json_u64(out, "allocated_bytes_per_collection_mean",
		 sum.pauses ? sum.allocated_total / sum.pauses : 0, true);
	json_u64(out, "allocated_bytes_per_collection_max", sum.allocated_max, true);
	json_u64(out, "objects_collected", sum.objects_collected, false);
	fputs(",\n    \"pause_hist_us\": ", out);
	json_hist(out, sum.hist);
	fputs(",\n    \"pause_list\": [", out);
	for (size_t i = 0; i < p->gc_pauses.n; i++) {
		const struct vt_gc_pause *g = &p->gc_pauses.v[i];

		fputs(i ? ",\n      {" : "\n      {", out);
		fprintf(out, "\"kind\": %d, ", g->kind);
		json_u64(out, "duration_ns", g->duration_ns, true);
		json_u64(out, "heap_bytes", g->heap_bytes, true);
		json_u64(out, "allocated_bytes", g->allocated_bytes, true);
		json_u64(out, "objects_collected", g->objects_collected, false);
		fputc('}', out);
	}
	fputs(p->gc_pauses.n ? "\n    ]\n  },\n" : "]\n  },\n", out);
	return 0;
}

/* A keyed list: key1 (and key2) names, sorted by count. */
static int json_keyed(FILE *out, const char *section, const char *key1, const char *key2,
		      const struct vt_keyed_count *v, size_t n, size_t top)
{
	size_t kept;
	const struct vt_keyed_count **s = vt_keyed_sorted(v, n, top, &kept);

	if (n && !s)
		return -ENOMEM;
	fprintf(out, "  \"%s\": [", section);
	for (size_t i = 0; i < kept; i++) {
		fputs(i ? ",\n    {" : "\n    {", out);
		json_str(out, key1, s[i]->name, true);
		if (key2)
			json_str(out, key2, s[i]->name2, true);
		json_u64(out, "count", s[i]->count, false);
		fputc('}', out);
	}
	fputs(kept ? "\n  ],\n" : "],\n", out);
	free(s);
	return 0;
}

static int cmp_signal(const void *pa, const void *pb)
{
	const struct vt_signal *a = pa, *b = pb;

	return a->signo < b->signo ? -1 : a->signo > b->signo;
}

static int json_signals(FILE *out, const struct vt_profile *p)
{
	struct vt_signal *v = NULL;
	char name[32];

	if (p->signals.n) {
		v = malloc(p->signals.n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		memcpy(v, p->signals.v, p->signals.n * sizeof(*v));
		qsort(v, p->signals.n, sizeof(*v), cmp_signal);
	}
	fputs("  \"signals\": [", out);
	for (size_t i = 0; i < p->signals.n; i++) {
		const struct vt_signal *s = &v[i];

		fputs(i ? ",\n    {" : "\n    {", out);
		fprintf(out, "\"signo\": %d, ", s->signo);
		json_str(out, "name", vt_signal_name(s->signo, name, sizeof(name)), true);
		json_u64(out, "received", s->received, true);
		json_u64(out, "handled", s->handled, true);
		json_u64(out, "latency_total_ns", s->latency_total_ns, true);
		json_u64(out, "latency_mean_ns", s->handled ? s->latency_total_ns / s->handled : 0,
			 true);
		json_u64(out, "latency_max_ns", s->latency_max_ns, true);
		fputs("\"latency_hist_ns\": ", out);
		json_hist(out, s->latency_hist);
		fputc('}', out);
	}
	fputs(p->signals.n ? "\n  ],\n" : "],\n", out);
	free(v);
	return 0;
}

static int cmp_free(const void *pa, const void *pb)
{
	const struct vt_free *a = pa, *b = pb;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return strcmp(a->klass, b->klass);
}

static int json_frees(FILE *out, const struct vt_profile *p)
{
	struct vt_free *v = NULL;

	if (p->frees.n) {
		v = malloc(p->frees.n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		memcpy(v, p->frees.v, p->frees.n * sizeof(*v));
		qsort(v, p->frees.n, sizeof(*v), cmp_free);
	}
	fputs("  \"frees\": [", out);
	for (size_t i = 0; i < p->frees.n; i++) {
		fputs(i ? ",\n    {" : "\n    {", out);
		json_str(out, "class", v[i].klass, true);
		json_u64(out, "count", v[i].count, true);
		json_u64(out, "bytes", v[i].bytes, false);
		fputc('}', out);
	}
	fputs(p->frees.n ? "\n  ],\n" : "],\n", out);
	free(v);
	return 0;
}

int vt_report_json(FILE *out, const struct vt_profile *p, const struct vt_report_opts *o)
{
	uint64_t lost_total = 0;
	int err;

	fputs("{\n  \"format\": \"vmtrace-report\",\n  \"version\": 1,\n", out);
	fputs("  ", out), json_str(out, "runtime", p->runtime, false), fputs(",\n", out);
	char group[64];

	json_probes(out, p->probes);
	fputs("  ", out), json_str(out, "target", p->target, false), fputs(",\n", out);
	fprintf(out, "  \"pid\": %d,\n", (int)p->pid);
	if (isfinite(p->duration_s))
		fprintf(out, "  \"duration_s\": %.6f,\n", p->duration_s);
	else
		fputs("  \"duration_s\": null,\n", out);
	fprintf(out, "  \"sample_period\": %llu,\n", U64(p->sample_period));
	fprintf(out, "  \"estimated\": %s,\n", p->sample_period ? "true" : "false");
	fprintf(out, "  \"has_allocations\": %s,\n", p->has_allocations ? "true" : "false");
	fprintf(out, "  \"group_by\": \"%s\",\n  \"sort\": \"%s\",\n  \"top\": %zu,\n",
		vt_report_group_name(p, o, group, sizeof(group)), vt_sort_name(o->sort), o->top);
	err = json_allocations(out, p, o);
	if (!err)
		err = json_frees(out, p);
	if (!err)
		err = vt_report_live_json(out, p);
	if (!err)
		err = vt_report_series_json(out, p);
	if (!err)
		err = json_gc(out, p);
	if (!err)
		err = json_keyed(out, "method_cache_resets", "class", "method",
				 p->method_cache_resets.v, p->method_cache_resets.n, 0);
	if (!err)
		err = json_keyed(out, "constant_cache_resets", "name", NULL,
				 p->constant_cache_resets.v, p->constant_cache_resets.n, 0);
	if (!err)
		err = json_keyed(out, "global_serial_incs", "reason", NULL,
				 p->global_serial_incs.v, p->global_serial_incs.n, 0);
	if (err)
		return err;
	fprintf(out, "  \"global_serial\": %llu,\n", U64(p->last_serial));
	err = json_signals(out, p);
	if (!err)
		err = json_keyed(out, "calls", "name", "file", p->calls.v, p->calls.n, o->top);
	if (err)
		return err;
	/* loss counters keep the collector's order: it lists the important first */
	fputs("  \"lost\": [", out);
	for (size_t i = 0; i < p->lost.n; i++) {
		fputs(i ? ",\n    {" : "\n    {", out);
		json_str(out, "what", p->lost.v[i].what, true);
		json_u64(out, "count", p->lost.v[i].count, false);
		fputc('}', out);
		lost_total += p->lost.v[i].count;
	}
	fputs(p->lost.n ? "\n  ],\n" : "],\n", out);
	fprintf(out, "  \"lost_total\": %llu\n}\n", U64(lost_total));
	return 0;
}
