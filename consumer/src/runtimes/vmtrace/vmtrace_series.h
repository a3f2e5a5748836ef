/*
 * vmtrace_series.h: the record's timeline for vmtrace's provider
 * (vmtrace_series.c): per-class allocations and frees each step (1 s
 * unless record --timeline-step).
 */
#ifndef VT_VMTRACE_SERIES_H
#define VT_VMTRACE_SERIES_H

#include <stddef.h>
#include <stdint.h>

#include "runtimes/adapter.h"
#include "profile/profile.h"
#include "runtimes/vmtrace/vmtrace_live.h"

struct vmtrace_bpf;

struct vt_series_snap {          /* cumulative counts of one class at one step's end */
	uint32_t step;
	uint64_t klass;              /* the target's pointer */
	uint64_t v[4];               /* allocs, alloc bytes, frees, free bytes */
};

struct vt_series_rec {
	struct vt_series_snap *v;
	size_t n, cap;
	uint64_t start_ns, next_ns;  /* CLOCK_MONOTONIC */
	uint64_t step_ns;            /* the timeline's step */
	uint32_t steps;              /* snapshots taken */
	int err;                     /* the first failure; the timeline is then left out */
};

/* A snapshot being taken: its rows found by class through an index. */
struct vt_series_taking {
	struct vt_series_rec *s;     /* NULL: no timeline, or it failed */
	size_t from;                 /* the snapshot's first row */
	uint32_t *index;             /* its rows by class: row - from + 1, 0 empty */
	size_t cap;                  /* a power of two */
};

/* Start the clock: the first step ends step_ns from now. */
void vt_series_start(struct vt_series_rec *s, uint64_t step_ns);
/* Take a snapshot when a step has ended since the last (called from poll). */
void vt_series_tick(struct vt_series_rec *s, struct vt_adapter *a, struct vmtrace_bpf *skel);
/* A snapshot of rows read elsewhere (a collection's): begin, each row of
 * the allocs map (frees 0) and of the frees map (frees 1), end. A failure
 * leaves the timeline out (vt_series_collect returns it). */
void vt_series_begin(struct vt_series_rec *s, struct vt_series_taking *t);
void vt_series_add(struct vt_series_taking *t, int frees, uint64_t klass, uint64_t count, uint64_t bytes);
void vt_series_end(struct vt_series_taking *t);
/* The rows of the timeline into out: one per class per step, the last
 * step the partial one the collection took; out's series_step_ns is the
 * step. 0 or -errno. */
int vt_series_collect(struct vt_series_rec *s, vt_live_name_fn name, void *name_ctx, struct vt_profile *out);
void vt_series_free(struct vt_series_rec *s);

#endif
