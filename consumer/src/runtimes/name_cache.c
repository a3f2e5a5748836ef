/*
 * name_cache.c: target pointer -> name (name_cache.h). Linear probing in a
 * power-of-two table kept at most half full; it doubles when it would not be.
 */
#include <stdlib.h>
#include <string.h>

#include "runtimes/name_cache.h"

static uint64_t ptr_hash(uint64_t p)
{
	p ^= p >> 33;
	p *= 0xff51afd7ed558ccdULL;
	p ^= p >> 33;
	return p;
}

static struct name_entry *cache_slot(struct name_cache *c, uint64_t ptr)
{
	size_t i = ptr_hash(ptr) & (c->cap - 1);

	while (c->v[i].ptr && c->v[i].ptr != ptr)
		i = (i + 1) & (c->cap - 1);
	return &c->v[i];
}

struct name_entry *vt_name_cache_get(struct name_cache *c, uint64_t ptr)
{
	struct name_entry *e;

	if (2 * (c->n + 1) > c->cap) {
		struct name_cache bigger = { .cap = c->cap ? c->cap * 2 : 256 };

		bigger.v = calloc(bigger.cap, sizeof(*bigger.v));
		if (!bigger.v)
			return NULL;
		for (size_t i = 0; i < c->cap; i++)
			if (c->v[i].ptr) {
				*cache_slot(&bigger, c->v[i].ptr) = c->v[i];
				bigger.n++;
			}
		free(c->v);
		*c = bigger;
	}
	e = cache_slot(c, ptr);
	if (!e->ptr) {
		e->ptr = ptr;
		e->name = NULL;
		e->cut = false;
		c->n++;
	}
	return e;
}

void vt_name_cache_free(struct name_cache *c)
{
	for (size_t i = 0; i < c->cap; i++)
		free(c->v[i].name);
	free(c->v);
	memset(c, 0, sizeof(*c));
}
