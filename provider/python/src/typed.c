/*
 * typed.c: (site, type) -> the type's kept name and key cache, an open
 * addressing table of pointers to entries made in slabs (see typed.h).
 * Used under the GIL.
 */
#include <stdint.h>
#include <stdlib.h>

#include "intern.h"
#include "typed.h"

#define TYPED_SLAB 256

static struct typed **slots;
static size_t cap, n;
static struct typed *slab;
static size_t slab_left;

static size_t slot_of(const void *site, const void *type, size_t c)
{
	return (size_t)(vt_mix64((uint64_t)(uintptr_t)site * 31 + (uint64_t)(uintptr_t)type) & (c - 1));
}

static int grow(void)
{
	size_t c = cap ? cap * 2 : 1024;
	struct typed **t = calloc(c, sizeof(*t));

	if (!t)
		return -1;
	for (size_t i = 0; i < cap; i++) {
		size_t j;

		if (!slots[i])
			continue;
		for (j = slot_of(slots[i]->site, slots[i]->type, c); t[j]; j = (j + 1) & (c - 1))
			;
		t[j] = slots[i];
	}
	free(slots);
	slots = t;
	cap = c;
	return 0;
}

struct typed *typed_of(const void *site, const void *type, const char *(*name_of)(const void *type))
{
	size_t j;
	struct typed *e;

	if (cap) {
		for (j = slot_of(site, type, cap); slots[j]; j = (j + 1) & (cap - 1))
			if (slots[j]->site == site && slots[j]->type == type)
				return slots[j];
	}
	if (2 * (n + 1) > cap && grow())
		return NULL;
	if (!slab_left) {
		if (!(slab = calloc(TYPED_SLAB, sizeof(*slab))))
			return NULL;
		slab_left = TYPED_SLAB;
	}
	e = slab;
	if (!(e->name = name_of(type)))
		return NULL;
	e->site = site;
	e->type = type;
	slab++;
	slab_left--;
	for (j = slot_of(site, type, cap); slots[j]; j = (j + 1) & (cap - 1))
		;
	slots[j] = e;
	n++;
	return e;
}
