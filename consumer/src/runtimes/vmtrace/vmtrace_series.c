/*
 * vmtrace_series.c: the timeline of a recording (report --format timeline).
 *
 * Once a step (a second unless record --timeline-step), poll() sums the
 * counting maps per class (allocations and frees, cumulative) and keeps
 * one snapshot per class; at the end the differences between consecutive
 * snapshots are the rows. The batched counts reach the maps within a flush
 * round (200 ms), so a step's row may hold a fraction of a flush round's
 * events of its neighbour; the totals over the rows are exact. Reading the
 * maps costs a few milliseconds a step in vmtrace, nothing in the target.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/libbpf.h>

#include "runtimes/vmtrace/vmtrace_maps.h"
#include "runtimes/vmtrace/vmtrace_series.h"
#include "vmtrace.skel.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void vt_series_start(struct vt_series_rec *s, uint64_t step_ns)
{
	memset(s, 0, sizeof(*s));
	s->step_ns = step_ns;
	s->start_ns = now_ns();
	s->next_ns = s->start_ns + step_ns;
}

struct snap_ctx {
	struct vt_series_rec *s;
	size_t from;                 /* this snapshot's first row */
	int col;                     /* 0: allocations, 2: frees */
};

static struct vt_series_snap *row_of(struct snap_ctx *c, uint64_t klass)
{
	struct vt_series_rec *s = c->s;

	for (size_t i = c->from; i < s->n; i++)
		if (s->v[i].klass == klass)
			return &s->v[i];
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		struct vt_series_snap *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n] = (struct vt_series_snap){ s->steps, klass, { 0 } };
	return &s->v[s->n++];
}

static int alloc_row(const void *key, const void *val, void *ctx)
{
	const struct vt_alloc_key *k = key;
	const struct vt_alloc_val *v = val;
	struct vt_series_snap *r = row_of(ctx, k->klass);

	if (!r)
		return -ENOMEM;
	r->v[0] += v->count;
	r->v[1] += v->bytes;
	return 0;
}

static int free_row(const void *key, const void *val, void *ctx)
{
	const struct vt_pair_key *k = key;
	const struct vt_count_val *v = val;
	struct vt_series_snap *r = row_of(ctx, k->a);

	if (!r)
		return -ENOMEM;
	r->v[2] += v->count;
	r->v[3] += v->bytes;
	return 0;
}

static void snapshot(struct vt_series_rec *s, struct vt_adapter *a, struct vmtrace_bpf *skel)
{
	struct snap_ctx c = { s, s->n, 0 };
	int err;

	s->steps++;
	err = vt_adapter_read_hash(a, skel->maps.allocs, alloc_row, &c);
	if (!err)
		err = vt_adapter_read_hash(a, skel->maps.frees, free_row, &c);
	if (err && !s->err)
		s->err = err;
}

void vt_series_tick(struct vt_series_rec *s, struct vt_adapter *a, struct vmtrace_bpf *skel)
{
	uint64_t now = now_ns();

	if (!s->start_ns || s->err || now < s->next_ns)
		return;
	snapshot(s, a, skel);
	/* a late tick still takes one snapshot: its step is the one it ends */
	s->next_ns = s->start_ns + (uint64_t)(s->steps + 1) * s->step_ns;
}

static int snap_cmp(const void *pa, const void *pb)
{
	const struct vt_series_snap *a = pa, *b = pb;

	if (a->klass != b->klass)
		return a->klass < b->klass ? -1 : 1;
	return a->step < b->step ? -1 : a->step > b->step;
}

int vt_series_collect(struct vt_series_rec *s, struct vt_adapter *a, struct vmtrace_bpf *skel,
		      vt_live_name_fn name, void *name_ctx, struct vt_profile *out)
{
	if (!s->start_ns)
		return 0;
	snapshot(s, a, skel); /* the last, partial step */
	if (s->err)
		return s->err;
	out->series_step_ns = s->step_ns;
	qsort(s->v, s->n, sizeof(*s->v), snap_cmp);
	for (size_t i = 0; i < s->n; i++) {
		const struct vt_series_snap *cur = &s->v[i];
		const struct vt_series_snap *prev = i && s->v[i - 1].klass == cur->klass ? &s->v[i - 1] : NULL;
		uint64_t d[4];
		char fb[40];

		for (int k = 0; k < 4; k++)
			d[k] = cur->v[k] - (prev ? prev->v[k] : 0);
		if (!prev && !cur->v[0] && !cur->v[2])
			continue;
		struct vt_series row = {
			.klass = (char *)name(name_ctx, cur->klass, fb, sizeof(fb)),
			.step = cur->step - 1,
			.allocs = d[0], .alloc_bytes = d[1], .frees = d[2], .free_bytes = d[3],
			.live_bytes = (int64_t)(cur->v[1] - cur->v[3]),
		};
		int err = vt_profile_add_series(out, &row);

		if (err)
			return err;
	}
	return 0;
}

void vt_series_free(struct vt_series_rec *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}
