/*
 * vmtrace_series.c: the timeline of a recording (report --format timeline).
 *
 * Once a step (a second unless record --timeline-step), poll() sums the
 * counting maps per class (allocations and frees, cumulative) and keeps
 * one snapshot per class (found by an index: a large recording has
 * tens of thousands of rows a step); a collection's own reads of the maps
 * are the last snapshot, not read again; at the end the differences
 * between consecutive snapshots are the rows. The batched counts reach the maps within a flush
 * round (200 ms), so a step's row may hold a fraction of a flush round's
 * events of its neighbour; the totals over the rows are exact. Reading the
 * maps costs a few milliseconds a step in vmtrace, nothing in the target.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/libbpf.h>

#include "profile/row_index.h"
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

/* This snapshot's row of klass, made when new. */
static struct vt_series_snap *row_of(struct vt_series_taking *t, uint64_t klass)
{
	struct vt_series_rec *s = t->s;
	size_t j;

	if (2 * (s->n - t->from + 1) > t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 1024;
		uint32_t *ix = calloc(cap, sizeof(*ix));

		if (!ix)
			return NULL;
		for (size_t r = t->from; r < s->n; r++) {
			for (j = vt_key_slot(s->v[r].klass, cap); ix[j]; j = (j + 1) & (cap - 1))
				;
			ix[j] = (uint32_t)(r - t->from + 1);
		}
		free(t->index);
		t->index = ix;
		t->cap = cap;
	}
	for (j = vt_key_slot(klass, t->cap); t->index[j]; j = (j + 1) & (t->cap - 1))
		if (s->v[t->from + t->index[j] - 1].klass == klass)
			return &s->v[t->from + t->index[j] - 1];
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		struct vt_series_snap *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n] = (struct vt_series_snap){ s->steps, klass, { 0 } };
	t->index[j] = (uint32_t)(s->n - t->from + 1);
	return &s->v[s->n++];
}

void vt_series_begin(struct vt_series_rec *s, struct vt_series_taking *t)
{
	*t = (struct vt_series_taking){ s->start_ns && !s->err ? s : NULL, s->n, NULL, 0 };
	if (t->s)
		s->steps++;
}

void vt_series_add(struct vt_series_taking *t, int frees, uint64_t klass, uint64_t count, uint64_t bytes)
{
	struct vt_series_snap *r;

	if (!t->s || t->s->err)
		return;
	if (!(r = row_of(t, klass))) {
		t->s->err = -ENOMEM;
		return;
	}
	r->v[frees ? 2 : 0] += count;
	r->v[frees ? 3 : 1] += bytes;
}

void vt_series_end(struct vt_series_taking *t)
{
	free(t->index);
	t->index = NULL;
	t->cap = 0;
}

static int alloc_row(const void *key, const void *val, void *ctx)
{
	const struct vt_alloc_key *k = key;
	const struct vt_alloc_val *v = val;

	vt_series_add(ctx, 0, k->klass, v->count, v->bytes);
	return 0;
}

static int free_row(const void *key, const void *val, void *ctx)
{
	const struct vt_pair_key *k = key;
	const struct vt_count_val *v = val;

	vt_series_add(ctx, 1, k->a, v->count, v->bytes);
	return 0;
}

void vt_series_tick(struct vt_series_rec *s, struct vt_adapter *a, struct vmtrace_bpf *skel)
{
	uint64_t now = now_ns();
	struct vt_series_taking t;
	int err;

	if (!s->start_ns || s->err || now < s->next_ns)
		return;
	vt_series_begin(s, &t);
	err = vt_adapter_read_hash(a, skel->maps.allocs, alloc_row, &t);
	if (!err)
		err = vt_adapter_read_hash(a, skel->maps.frees, free_row, &t);
	if (err && !s->err)
		s->err = err;
	vt_series_end(&t);
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

int vt_series_collect(struct vt_series_rec *s, vt_live_name_fn name, void *name_ctx, struct vt_profile *out)
{
	if (!s->start_ns)
		return 0;
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
