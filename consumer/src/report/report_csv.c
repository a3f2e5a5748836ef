/*
 * report_csv.c: the report for spreadsheets. One table per section, each
 * opened by a header row whose first column is "section", each row starting
 * with its section's name, sections separated by an empty line: a
 * spreadsheet shows it as it is, and `grep ^allocations,` cuts one out.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_fmt.h"
#include "process/cgroup.h"
#include "report/report_model.h"

#define U64(v) ((unsigned long long)(v))

static void csv_str(FILE *out, const char *s)
{
	fputc(',', out);
	vt_csv_field(out, s);
}

static void csv_u64(FILE *out, uint64_t v)
{
	fprintf(out, ",%llu", U64(v));
}

static int csv_allocations(FILE *out, const struct vt_profile *p, const struct vt_report_opts *o)
{
	struct vt_alloc_table t;
	int err = vt_alloc_table_build(p, o, &t);

	if (err)
		return err;
	fputs("\nsection", out);
	if (vt_report_by_cgroup(p, o))
		fputs(",cgroup,container", out);
	if (vt_report_by_pid(p, o))
		fputs(",pid,comm", out);
	if (o->by != VT_BY_METHOD && o->by != VT_BY_STACK)
		fputs(",class", out);
	if (o->by != VT_BY_CLASS)
		fputs(o->by == VT_BY_STACK ? ",stack" : ",method", out);
	if (o->by == VT_BY_SITE)
		fputs(",site", out);
	fputs(",count,bytes,samples\n", out);
	for (size_t i = 0; i < t.n; i++) {
		fputs("allocations", out);
		if (t.rows[i].cgroup) {
			char id[128];

			vt_container_id(t.rows[i].cgroup, id, sizeof(id));
			csv_str(out, t.rows[i].cgroup);
			csv_str(out, id);
		}
		if (t.rows[i].comm) {
			fprintf(out, ",%d", (int)t.rows[i].pid);
			csv_str(out, t.rows[i].comm);
		}
		if (t.rows[i].klass)
			csv_str(out, t.rows[i].klass);
		if (t.rows[i].method)
			csv_str(out, t.rows[i].method);
		if (t.rows[i].stack)
			csv_str(out, t.rows[i].stack);
		if (t.rows[i].site)
			csv_str(out, t.rows[i].site);
		csv_u64(out, t.rows[i].count);
		csv_u64(out, t.rows[i].bytes);
		csv_u64(out, t.rows[i].samples);
		fputc('\n', out);
	}
	vt_alloc_table_free(&t);
	return 0;
}

static int csv_keyed(FILE *out, const char *section, const char *cols,
		     const struct vt_keyed_count *v, size_t n, bool two, size_t top)
{
	size_t kept;
	const struct vt_keyed_count **s = vt_keyed_sorted(v, n, top, &kept);

	if (n && !s)
		return -ENOMEM;
	fprintf(out, "\nsection,%s,count\n", cols);
	for (size_t i = 0; i < kept; i++) {
		fputs(section, out);
		csv_str(out, s[i]->name);
		if (two)
			csv_str(out, s[i]->name2);
		csv_u64(out, s[i]->count);
		fputc('\n', out);
	}
	free(s);
	return 0;
}

static int csv_gc(FILE *out, const struct vt_profile *p)
{
	struct vt_pause_stats st;

	fputs("\nsection,kind,collections,pauses,pause_total_ns,pause_mean_ns,pause_p50_ns,"
	      "pause_p99_ns,pause_max_ns\n", out);
	for (int k = 0; k < VT_GC_KINDS; k++) {
		int err;

		if (!vt_gc_kind_shown(p, k))
			continue;
		err = vt_pause_stats(p, k, &st);
		if (err)
			return err;
		fprintf(out, "gc,%s,%llu,%llu,%llu,%llu,%llu,%llu,%llu\n", vt_gc_kind_name(p, k),
			U64(p->gc_collections[k]), U64(st.pauses), U64(st.total_ns),
			U64(st.mean_ns), U64(st.p50_ns), U64(st.p99_ns), U64(st.max_ns));
	}
	fputs("\nsection,kind,duration_ns,heap_bytes,allocated_bytes,objects_collected\n", out);
	for (size_t i = 0; i < p->gc_pauses.n; i++) {
		const struct vt_gc_pause *g = &p->gc_pauses.v[i];

		fprintf(out, "gc_pauses,%s,%llu,%llu,%llu,%llu\n", vt_gc_kind_name(p, g->kind),
			U64(g->duration_ns), U64(g->heap_bytes), U64(g->allocated_bytes),
			U64(g->objects_collected));
	}
	return 0;
}

int vt_report_csv(FILE *out, const struct vt_profile *p, const struct vt_report_opts *o)
{
	char name[32];
	int err;

	fputs("section,runtime,probes,target,pid,duration_s,sample_period,has_allocations\nmeta",
	      out);
	csv_str(out, p->runtime);
	csv_str(out, p->probes);
	csv_str(out, p->target);
	fprintf(out, ",%d,%.6f,%llu,%d\n", (int)p->pid, p->duration_s, U64(p->sample_period),
		p->has_allocations ? 1 : 0);
	err = csv_allocations(out, p, o);
	if (!err && p->frees.n) {
		fputs("\nsection,class,count,bytes\n", out);
		for (size_t i = 0; i < p->frees.n; i++) {
			fputs("frees", out);
			csv_str(out, p->frees.v[i].klass);
			csv_u64(out, p->frees.v[i].count);
			csv_u64(out, p->frees.v[i].bytes);
			fputc('\n', out);
		}
	}
	if (!err)
		err = csv_gc(out, p);
	if (!err)
		err = csv_keyed(out, "method_cache_resets", "class,method",
				p->method_cache_resets.v, p->method_cache_resets.n, true, 0);
	if (!err)
		err = csv_keyed(out, "constant_cache_resets", "name", p->constant_cache_resets.v,
				p->constant_cache_resets.n, false, 0);
	if (!err)
		err = csv_keyed(out, "global_serial_incs", "reason", p->global_serial_incs.v,
				p->global_serial_incs.n, false, 0);
	if (err)
		return err;
	fputs("\nsection,signo,name,received,handled,latency_total_ns,latency_max_ns\n", out);
	for (size_t i = 0; i < p->signals.n; i++) {
		const struct vt_signal *s = &p->signals.v[i];

		fprintf(out, "signals,%d,%s,%llu,%llu,%llu,%llu\n", s->signo,
			vt_signal_name(s->signo, name, sizeof(name)), U64(s->received),
			U64(s->handled), U64(s->latency_total_ns), U64(s->latency_max_ns));
	}
	if (p->calls.n) {
		err = csv_keyed(out, "calls", "name,file", p->calls.v, p->calls.n, true, o->top);
		if (err)
			return err;
	}
	fputs("\nsection,what,count\n", out);
	for (size_t i = 0; i < p->lost.n; i++) {
		fputs("lost", out);
		csv_str(out, p->lost.v[i].what);
		csv_u64(out, p->lost.v[i].count);
		fputc('\n', out);
	}
	return 0;
}
