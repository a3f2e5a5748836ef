/*
 * profile_diff.c: what happened between two collections of one session
 * (profile_diff.h).
 *
 * The BPF maps count from the moment the probes went live and are never
 * reset, so every collection is cumulative; an interval is the difference
 * of two of them. That is what makes `record --every` exact: the end of
 * one interval is the start of the next, so no event falls between them
 * and none is counted twice, whatever the timing of the reads.
 *
 * The difference is built with the profile's own adders: the earlier
 * profile's keys go in first with zero counts (so row i of the result is
 * row i of the earlier profile), then the later profile's rows add their
 * counts, then row i loses the earlier row i's counts. Rows left at zero
 * are dropped by copying the rest into the result.
 */
#include <errno.h>
#include <string.h>

#include "profile/profile_diff.h"

static uint64_t minus(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0; /* cumulative counters never shrink; be safe anyway */
}

/* Upper bound of log2 bucket b (VT_HIST_BUCKETS layout). */
static uint64_t bucket_top(int b)
{
	return b >= 63 ? UINT64_MAX : (2ull << b) - 1;
}

/* The interval's rows, zero rows included, into work. */
static int subtract(struct vt_profile *w, const struct vt_profile *late, const struct vt_profile *early)
{
	int err = 0;

#define EACH(vec, p) for (size_t i = 0; !err && i < (p)->vec.n; i++)
	/* early's keys first, with nothing in them */
	EACH(allocs, early) {
		uint32_t sid = 0;

		err = vt_profile_stack_from(w, early, early->allocs.v[i].stack, &sid);
		if (!err)
			err = vt_profile_add_alloc_stack(w, early->allocs.v[i].klass,
							 early->allocs.v[i].method,
							 early->allocs.v[i].site, sid, 0, 0, 0);
	}
	EACH(method_cache_resets, early)
		err = vt_profile_add_method_cache_reset(w, early->method_cache_resets.v[i].name,
							early->method_cache_resets.v[i].name2, 0);
	EACH(constant_cache_resets, early)
		err = vt_profile_add_constant_cache_reset(w, early->constant_cache_resets.v[i].name, 0);
	EACH(global_serial_incs, early)
		err = vt_profile_add_global_serial_inc(w, early->global_serial_incs.v[i].name, 0);
	EACH(calls, early)
		err = vt_profile_add_call(w, early->calls.v[i].name, early->calls.v[i].name2, 0);
	EACH(lost, early)
		err = vt_profile_add_lost(w, early->lost.v[i].what, 0);
	EACH(frees, early)
		err = vt_profile_add_free(w, early->frees.v[i].klass, 0, 0);
	EACH(signals, early)
		err = vt_profile_add_signal(w, early->signals.v[i].signo, 0, 0, 0, 0, NULL);
	/* then late's counts */
	if (!err)
		err = vt_profile_add_rows(w, late, 0);
#undef EACH
	if (err)
		return err;

	/* row i of w is row i of early: take early's counts away */
	for (size_t i = 0; i < early->allocs.n; i++) {
		w->allocs.v[i].count = minus(w->allocs.v[i].count, early->allocs.v[i].count);
		w->allocs.v[i].bytes = minus(w->allocs.v[i].bytes, early->allocs.v[i].bytes);
		w->allocs.v[i].samples = minus(w->allocs.v[i].samples, early->allocs.v[i].samples);
	}
#define KEYED(vec) \
	for (size_t i = 0; i < early->vec.n; i++) \
		w->vec.v[i].count = minus(w->vec.v[i].count, early->vec.v[i].count)
	KEYED(method_cache_resets);
	KEYED(constant_cache_resets);
	KEYED(global_serial_incs);
	KEYED(calls);
	KEYED(lost);
#undef KEYED
	for (size_t i = 0; i < early->frees.n; i++) {
		w->frees.v[i].count = minus(w->frees.v[i].count, early->frees.v[i].count);
		w->frees.v[i].bytes = minus(w->frees.v[i].bytes, early->frees.v[i].bytes);
	}
	for (size_t i = 0; i < early->signals.n; i++) {
		struct vt_signal *s = &w->signals.v[i];
		const struct vt_signal *e = &early->signals.v[i];
		int top = -1;

		s->received = minus(s->received, e->received);
		s->handled = minus(s->handled, e->handled);
		s->latency_total_ns = minus(s->latency_total_ns, e->latency_total_ns);
		for (int b = 0; b < VT_HIST_BUCKETS; b++) {
			s->latency_hist[b] = minus(s->latency_hist[b], e->latency_hist[b]);
			if (s->latency_hist[b])
				top = b;
		}
		/* A new maximum happened in this interval; otherwise the
		 * interval's own is only known to its histogram bucket. */
		if (s->latency_max_ns <= e->latency_max_ns)
			s->latency_max_ns = top < 0 ? 0 :
				(bucket_top(top) < s->latency_max_ns ? bucket_top(top) : s->latency_max_ns);
	}
	return 0;
}

/* w's non-zero rows (and every loss counter, zeros included) into out. */
static int keep_nonzero(struct vt_profile *out, const struct vt_profile *w)
{
	int err = 0;

#define EACH(vec) for (size_t i = 0; !err && i < w->vec.n; i++)
	EACH(allocs) {
		const struct vt_alloc *a = &w->allocs.v[i];

		if (a->count || a->bytes || a->samples)
			err = vt_profile_add_alloc(out, a->klass, a->method, a->site, a->count,
						   a->bytes, a->samples);
	}
	EACH(method_cache_resets)
		if (w->method_cache_resets.v[i].count)
			err = vt_profile_add_method_cache_reset(out, w->method_cache_resets.v[i].name,
								w->method_cache_resets.v[i].name2,
								w->method_cache_resets.v[i].count);
	EACH(constant_cache_resets)
		if (w->constant_cache_resets.v[i].count)
			err = vt_profile_add_constant_cache_reset(out, w->constant_cache_resets.v[i].name,
								  w->constant_cache_resets.v[i].count);
	EACH(global_serial_incs)
		if (w->global_serial_incs.v[i].count)
			err = vt_profile_add_global_serial_inc(out, w->global_serial_incs.v[i].name,
							       w->global_serial_incs.v[i].count);
	EACH(calls)
		if (w->calls.v[i].count)
			err = vt_profile_add_call(out, w->calls.v[i].name, w->calls.v[i].name2,
						  w->calls.v[i].count);
	EACH(lost)
		err = vt_profile_add_lost(out, w->lost.v[i].what, w->lost.v[i].count);
	EACH(frees)
		if (w->frees.v[i].count || w->frees.v[i].bytes)
			err = vt_profile_add_free(out, w->frees.v[i].klass, w->frees.v[i].count,
						  w->frees.v[i].bytes);
	EACH(signals) {
		const struct vt_signal *s = &w->signals.v[i];

		if (s->received || s->handled)
			err = vt_profile_add_signal(out, s->signo, s->received, s->handled,
						    s->latency_total_ns, s->latency_max_ns,
						    s->latency_hist);
	}
#undef EACH
	return err;
}

/* The interval's GC: the difference of the summaries, and the later
 * collection's gc_fresh, the longest pauses since the earlier one, as its
 * list. Their times become relative to the interval's start. The longest
 * pause of the interval is in that list, so its maximum is exact. */
static int interval_pauses(struct vt_profile *out, const struct vt_profile *late,
			   const struct vt_profile *early, int64_t shift)
{
	struct vt_gc_stats d[VT_GC_KINDS];
	int err = 0;

	for (int k = 0; k < VT_GC_KINDS; k++) {
		const struct vt_gc_stats *a = &late->gc_stats[k], *b = &early->gc_stats[k];

		d[k] = (struct vt_gc_stats){
			.count = minus(a->count, b->count),
			.total_ns = minus(a->total_ns, b->total_ns),
			.max_ns = a->max_ns > b->max_ns ? a->max_ns : 0,
			.allocated_bytes = minus(a->allocated_bytes, b->allocated_bytes),
			.allocated_max = a->allocated_max > b->allocated_max ? a->allocated_max : 0,
			.objects_collected = minus(a->objects_collected, b->objects_collected),
		};
		for (int h = 0; h < VT_HIST_BUCKETS; h++)
			d[k].hist[h] = minus(a->hist[h], b->hist[h]);
	}
	out->gc_pauses_limit = late->gc_pauses_limit;
	for (size_t i = 0; !err && i < late->gc_fresh.n; i++) {
		struct vt_gc_pause g = late->gc_fresh.v[i];

		if (g.kind >= 0 && g.kind < VT_GC_KINDS) {
			if (g.duration_ns > d[g.kind].max_ns)
				d[g.kind].max_ns = g.duration_ns;
			if (g.allocated_bytes > d[g.kind].allocated_max)
				d[g.kind].allocated_max = g.allocated_bytes;
		}
		if (g.tid)
			g.at_ns -= shift;
		err = vt_profile_keep_gc_pause(out, &g);
	}
	for (int k = 0; !err && k < VT_GC_KINDS; k++)
		err = vt_profile_add_gc_stats(out, k, &d[k]);
	return err;
}

int vt_profile_diff(const struct vt_profile *late, const struct vt_profile *early,
		    struct vt_profile *out)
{
	int64_t shift = (int64_t)(early->duration_s * 1e9); /* the interval's start */
	struct vt_profile w;
	int err;

	vt_profile_init(out);
	vt_profile_init(&w);
	err = vt_profile_set_meta(out, late->runtime, late->probes, late->target, late->pid);
	if (!err)
		err = subtract(&w, late, early);
	if (!err)
		err = keep_nonzero(out, &w);
	vt_profile_free(&w);
	if (!err)
		err = interval_pauses(out, late, early, shift);
	for (size_t i = early->events.n; !err && i < late->events.n; i++) {
		struct vt_event e = late->events.v[i];

		e.at_ns -= shift;
		err = vt_profile_add_event(out, &e);
	}
	if (err) {
		vt_profile_free(out);
		return err;
	}
	out->has_allocations = late->has_allocations;
	out->sample_period = late->sample_period;
	out->last_serial = late->last_serial;
	for (int k = 0; k < VT_GC_KINDS; k++)
		out->gc_collections[k] = minus(late->gc_collections[k], early->gc_collections[k]);
	out->duration_s = late->duration_s - early->duration_s;
	if (out->duration_s < 0)
		out->duration_s = 0;
	out->start_unix_ns = early->start_unix_ns + (uint64_t)shift;
	return 0;
}
