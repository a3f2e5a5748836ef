/*
 * strtab.c: distinct strings numbered in order (strtab.h), hashed with
 * FNV-1a into an open-addressing index kept under half full.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "strtab.h"

static size_t hash(const char *s, size_t nslot)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return (size_t)(h ^ (h >> 29)) & (nslot - 1);
}

static int grow_index(struct vt_strtab *t)
{
	size_t nslot = t->nslot ? t->nslot * 2 : 256;
	size_t *slot = calloc(nslot, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		size_t h = hash(t->v[i], nslot);

		while (slot[h])
			h = (h + 1) & (nslot - 1);
		slot[h] = i + 1;
	}
	free(t->slot);
	t->slot = slot;
	t->nslot = nslot;
	return 0;
}

int64_t vt_strtab_find(const struct vt_strtab *t, const char *s)
{
	if (!s)
		s = "";
	if (!t->nslot)
		return -1;
	for (size_t h = hash(s, t->nslot); t->slot[h]; h = (h + 1) & (t->nslot - 1))
		if (!strcmp(t->v[t->slot[h] - 1], s))
			return (int64_t)(t->slot[h] - 1);
	return -1;
}

int64_t vt_strtab_intern(struct vt_strtab *t, const char *s, bool *fresh)
{
	int64_t found;
	size_t h;
	char *copy;

	if (fresh)
		*fresh = false;
	if (!s)
		s = "";
	found = vt_strtab_find(t, s);
	if (found >= 0)
		return found;
	if ((t->n + 1) * 2 > t->nslot && grow_index(t))
		return -1;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		char **v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -1;
		t->v = v;
		t->cap = cap;
	}
	copy = strdup(s);
	if (!copy)
		return -1;
	h = hash(s, t->nslot);
	while (t->slot[h])
		h = (h + 1) & (t->nslot - 1);
	t->v[t->n] = copy;
	t->slot[h] = ++t->n;
	if (fresh)
		*fresh = true;
	return (int64_t)(t->n - 1);
}

void vt_strtab_free(struct vt_strtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i]);
	free(t->v);
	free(t->slot);
	memset(t, 0, sizeof(*t));
}
