/*
 * profile_gc.c: the GC pauses of a profile (profile.h): an exact summary
 * per kind fed by every pause, and a list bounded to the longest ones,
 * so a long recording holds a fixed amount of memory however many
 * collections it sees.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"

static int log2_us(uint64_t ns)
{
	uint64_t v = ns / 1000;
	int b = 0;

	while (v > 1) {
		v >>= 1;
		b++;
	}
	return b;
}

void vt_gc_stats_add(struct vt_gc_stats *s, const struct vt_gc_pause *g)
{
	s->count++;
	s->total_ns += g->duration_ns;
	if (g->duration_ns > s->max_ns)
		s->max_ns = g->duration_ns;
	s->allocated_bytes += g->allocated_bytes;
	if (g->allocated_bytes > s->allocated_max)
		s->allocated_max = g->allocated_bytes;
	s->objects_collected += g->objects_collected;
	s->hist[log2_us(g->duration_ns)]++;
}

static uint64_t shortest(const struct vt_gc_pauses *l)
{
	uint64_t m = UINT64_MAX;

	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].duration_ns < m)
			m = l->v[i].duration_ns;
	return m;
}

int vt_gc_pauses_keep(struct vt_gc_pauses *l, size_t limit, const struct vt_gc_pause *g)
{
	if (limit && l->n >= limit) {
		size_t min = 0;

		/* most pauses are no longer than the shortest kept: O(1) for them.
		 * floor_ns is never above the true shortest (sorting and time
		 * shifts keep the durations), so the scan below decides. */
		if (g->duration_ns <= l->floor_ns)
			return 0;
		/* the shortest kept, the latest of equal ones: ties keep the earlier */
		for (size_t i = 1; i < l->n; i++)
			if (l->v[i].duration_ns <= l->v[min].duration_ns)
				min = i;
		if (g->duration_ns <= l->v[min].duration_ns)
			return 0;
		/* a memmove of at most the bound, never a growth: the order stays */
		memmove(l->v + min, l->v + min + 1, (l->n - min - 1) * sizeof(*l->v));
		l->v[l->n - 1] = *g;
		l->floor_ns = shortest(l);
		return 0;
	}
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 16;
		struct vt_gc_pause *v;

		if (limit && ncap > limit)
			ncap = limit;
		v = realloc(l->v, ncap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = ncap;
	}
	l->v[l->n++] = *g;
	if (limit && l->n == limit)
		l->floor_ns = shortest(l);
	return 0;
}

void vt_gc_pauses_by_start(struct vt_gc_pauses *l)
{
	/* an insertion sort, stable: the list comes in order of end, nearly
	 * that of start, so it moves little */
	for (size_t i = 1; i < l->n; i++) {
		struct vt_gc_pause g = l->v[i];
		size_t j = i;

		while (j > 0 && g.tid && l->v[j - 1].tid && l->v[j - 1].at_ns > g.at_ns) {
			l->v[j] = l->v[j - 1];
			j--;
		}
		l->v[j] = g;
	}
}

int vt_profile_keep_gc_pause(struct vt_profile *p, const struct vt_gc_pause *pause)
{
	return vt_gc_pauses_keep(&p->gc_pauses, p->gc_pauses_limit, pause);
}

static bool add_would_wrap(const struct vt_profile *p, size_t field, uint64_t v)
{
	uint64_t sum = v;

	for (int k = 0; k < VT_GC_KINDS; k++) {
		uint64_t have;

		memcpy(&have, (const char *)&p->gc_stats[k] + field, sizeof(have));
		if (__builtin_add_overflow(sum, have, &sum))
			return true;
	}
	return false;
}

int vt_profile_add_gc_pause(struct vt_profile *p, const struct vt_gc_pause *pause)
{
	size_t count = offsetof(struct vt_gc_stats, count);
	size_t total = offsetof(struct vt_gc_stats, total_ns);
	size_t bytes = offsetof(struct vt_gc_stats, allocated_bytes);
	size_t objects = offsetof(struct vt_gc_stats, objects_collected);
	bool counted = pause->kind >= 0 && pause->kind < VT_GC_KINDS;
	int err;

	/* every total a report prints, over all kinds, fits in 64 bits */
	if (counted && (add_would_wrap(p, count, 1) || add_would_wrap(p, total, pause->duration_ns) ||
			add_would_wrap(p, bytes, pause->allocated_bytes) ||
			add_would_wrap(p, objects, pause->objects_collected)))
		return -EOVERFLOW;
	err = vt_profile_keep_gc_pause(p, pause);
	if (!err && counted)
		vt_gc_stats_add(&p->gc_stats[pause->kind], pause);
	return err;
}

int vt_profile_add_gc_stats(struct vt_profile *p, int kind, const struct vt_gc_stats *s)
{
	struct vt_gc_stats *d;

	if (kind < 0 || kind >= VT_GC_KINDS)
		return -EINVAL;
	/* every total a report prints, over all kinds, fits in 64 bits */
	if (add_would_wrap(p, offsetof(struct vt_gc_stats, count), s->count) ||
	    add_would_wrap(p, offsetof(struct vt_gc_stats, total_ns), s->total_ns) ||
	    add_would_wrap(p, offsetof(struct vt_gc_stats, allocated_bytes), s->allocated_bytes) ||
	    add_would_wrap(p, offsetof(struct vt_gc_stats, objects_collected), s->objects_collected))
		return -EOVERFLOW;
	d = &p->gc_stats[kind];
	d->count += s->count;
	d->total_ns += s->total_ns;
	d->allocated_bytes += s->allocated_bytes;
	d->objects_collected += s->objects_collected;
	if (s->max_ns > d->max_ns)
		d->max_ns = s->max_ns;
	if (s->allocated_max > d->allocated_max)
		d->allocated_max = s->allocated_max;
	for (int b = 0; b < VT_HIST_BUCKETS; b++)
		d->hist[b] += s->hist[b]; /* each at most count, which did not wrap */
	return 0;
}

uint64_t vt_gc_not_kept(const struct vt_profile *p, int kind)
{
	uint64_t kept = 0;

	if (kind < 0 || kind >= VT_GC_KINDS)
		return 0;
	for (size_t i = 0; i < p->gc_pauses.n; i++)
		kept += p->gc_pauses.v[i].kind == kind;
	return p->gc_stats[kind].count > kept ? p->gc_stats[kind].count - kept : 0;
}

bool vt_gc_list_fits(const struct vt_profile *p)
{
	uint64_t kept[VT_GC_KINDS] = { 0 };

	for (size_t i = 0; i < p->gc_pauses.n; i++) {
		int k = p->gc_pauses.v[i].kind;

		if (k >= 0 && k < VT_GC_KINDS && ++kept[k] > p->gc_stats[k].count)
			return false;
	}
	return true;
}
