/*
 * profile_live.c: the live-heap rows of a profile (struct vt_live,
 * docs/live.md) and its timeline (struct vt_series). A live row is found
 * by its key through the profile's row index (vt_profile_live_row,
 * profile.c); timeline rows are appended as they come.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "profile/row_index.h"

static int add_u64(uint64_t *to, uint64_t v)
{
	return __builtin_add_overflow(*to, v, to) ? -EOVERFLOW : 0;
}

int vt_profile_add_live(struct vt_profile *p, const struct vt_live *r)
{
	struct vt_live *row = vt_profile_live_row(p, r->klass, r->method, r->site);

	p->live_info.on = true;
	if (!row)
		return -ENOMEM;
	struct vt_live sum = *row;
	if (add_u64(&sum.count, r->count) || add_u64(&sum.bytes, r->bytes) ||
	    add_u64(&sum.objects, r->objects) || add_u64(&sum.temp_count, r->temp_count) ||
	    add_u64(&sum.temp_bytes, r->temp_bytes))
		return -EOVERFLOW;
	*row = sum;
	return 0;
}

uint64_t vt_series_start_ns(const struct vt_profile *p, uint64_t step)
{
	return step * p->series_step_ns;
}

int vt_profile_add_series(struct vt_profile *p, const struct vt_series *r)
{
	struct vt_series *row;

	if (p->series.n == p->series.cap) {
		size_t cap = p->series.cap ? 2 * p->series.cap : 64;
		struct vt_series *v = realloc(p->series.v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->series.v = v;
		p->series.cap = cap;
	}
	row = &p->series.v[p->series.n];
	*row = *r;
	row->klass = strdup(vt_nz(r->klass));
	if (!row->klass)
		return -ENOMEM;
	p->series.n++;
	return 0;
}
