/*
 * intern.c: kept copies of texts (intern.h).
 */
#include <stdlib.h>
#include <string.h>

#include "intern.h"

static uint64_t text_hash(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull;  /* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

static int grow(struct vt_interned *t)
{
	size_t cap = t->cap ? t->cap * 2 : 1024;
	const char **slot = calloc(cap, sizeof(*slot));

	if (!slot)
		return -1;
	for (size_t i = 0; i < t->cap; i++) {
		const char *s = t->slot[i];
		size_t j;

		if (!s)
			continue;
		for (j = text_hash(s, strlen(s)) & (cap - 1); slot[j]; j = (j + 1) & (cap - 1))
			;
		slot[j] = s;
	}
	free(t->slot);
	t->slot = slot;
	t->cap = cap;
	return 0;
}

const char *vt_intern(struct vt_interned *t, const char *s, size_t len)
{
	size_t j;
	char *copy;

	if (2 * (t->n + 1) > t->cap && grow(t))
		return NULL;
	for (j = text_hash(s, len) & (t->cap - 1); t->slot[j]; j = (j + 1) & (t->cap - 1))
		if (strncmp(t->slot[j], s, len) == 0 && t->slot[j][len] == '\0')
			return t->slot[j];
	copy = malloc(len + 1);
	if (!copy)
		return NULL;
	memcpy(copy, s, len);
	copy[len] = '\0';
	t->slot[j] = copy;
	t->n++;
	return copy;
}

const char *vt_intern_str(struct vt_interned *t, const char *s)
{
	return vt_intern(t, s, strlen(s));
}
