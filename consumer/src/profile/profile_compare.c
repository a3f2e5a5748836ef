/*
 * profile_compare.c: two recordings side by side (profile_compare.h). Every row of
 * either recording is one entry, tagged with its side; sorting the entries
 * by key brings each key's entries together, and each run becomes a row.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile_compare.h"

struct entry {
	const char *klass, *method, *site;
	int side;                            /* 0 base, 1 now */
	uint64_t v[VT_DIFF_COLS];
};

static int key_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = strcmp(x->klass, y->klass);

	if (!c)
		c = strcmp(x->method, y->method);
	if (!c)
		c = strcmp(x->site, y->site);
	return c;
}

int64_t vt_diff_delta(const struct vt_diff_row *r, enum vt_diff_col c)
{
	uint64_t a = r->base[c], b = r->now[c];

	if (b >= a)
		return b - a > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)(b - a);
	return a - b > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)(a - b);
}

bool vt_diff_changed(const struct vt_diff_row *r)
{
	return memcmp(r->base, r->now, sizeof(r->base)) != 0;
}

static int growth_cmp(const void *a, const void *b)
{
	const struct vt_diff_row *x = a, *y = b;
	static const enum vt_diff_col order[] = { VT_DIFF_LIVE_BYTES, VT_DIFF_BYTES, VT_DIFF_COUNT,
						   VT_DIFF_LIVE_COUNT };
	int c;

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		int64_t dx = vt_diff_delta(x, order[i]), dy = vt_diff_delta(y, order[i]);

		if (dx != dy)
			return dx > dy ? -1 : 1;
	}
	if ((c = strcmp(x->klass, y->klass)) || (c = strcmp(x->method, y->method)))
		return c;
	return strcmp(x->site, y->site);
}

static size_t add_side(struct entry *e, const struct vt_profile *p, int side)
{
	size_t n = 0;

	for (size_t i = 0; i < p->allocs.n; i++, n++)
		e[n] = (struct entry){ p->allocs.v[i].klass, p->allocs.v[i].method, p->allocs.v[i].site,
				       side, { p->allocs.v[i].count, p->allocs.v[i].bytes, 0, 0 } };
	for (size_t i = 0; i < p->live.n; i++, n++)
		e[n] = (struct entry){ p->live.v[i].klass, p->live.v[i].method, p->live.v[i].site, side,
				       { 0, 0, p->live.v[i].count, p->live.v[i].bytes } };
	return n;
}

int vt_diff_build(const struct vt_profile *base, const struct vt_profile *now, struct vt_diff *d)
{
	size_t total = base->allocs.n + base->live.n + now->allocs.n + now->live.n;
	struct entry *e = malloc((total ? total : 1) * sizeof(*e));
	size_t n;

	memset(d, 0, sizeof(*d));
	d->live = base->live_info.on && now->live_info.on;
	d->v = calloc(total ? total : 1, sizeof(*d->v));
	if (!e || !d->v) {
		free(e);
		vt_diff_free(d);
		return -ENOMEM;
	}
	n = add_side(e, base, 0);
	n += add_side(e + n, now, 1);
	qsort(e, n, sizeof(*e), key_cmp);
	for (size_t i = 0; i < n; i++) {
		struct vt_diff_row *r;

		if (i == 0 || key_cmp(&e[i - 1], &e[i]) != 0) {
			r = &d->v[d->n++];
			r->klass = e[i].klass;
			r->method = e[i].method;
			r->site = e[i].site;
		}
		r = &d->v[d->n - 1];
		for (int c = 0; c < VT_DIFF_COLS; c++) {
			uint64_t *to = e[i].side ? &r->now[c] : &r->base[c];

			/* the readers keep every column's total within 64 bits */
			*to += e[i].v[c];
		}
	}
	free(e);
	qsort(d->v, d->n, sizeof(*d->v), growth_cmp);
	return 0;
}

void vt_diff_free(struct vt_diff *d)
{
	free(d->v);
	memset(d, 0, sizeof(*d));
}
