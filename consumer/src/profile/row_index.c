/*
 * row_index.c: an open-addressing index of a vector's rows by their key
 * (row_index.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/row_index.h"

/* A text into h eight bytes at a time (a row's three texts are a hundred
 * bytes: a multiply a byte was a tenth of a large recording's end), its
 * length last, so ("ab","") and ("a","b") differ. */
static uint64_t text_hash(uint64_t h, const char *s)
{
	size_t n = strlen(s), i = 0;
	uint64_t w;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w, s + i, 8);
		h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
		h ^= h >> 32;
	}
	w = 0;
	memcpy(&w, s + i, n - i);
	h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
	h = (h ^ n) * 0xC2B2AE3D27D4EB4FULL;
	return h ^ (h >> 29);
}

static uint64_t key_hash(const struct vt_row_key *k)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (int i = 0; i < 3; i++)
		h = text_hash(h, vt_nz(k->s[i]));
	h = (h ^ (uint64_t)k->num) * 0x100000001b3ULL;
	return h ^ (h >> 29);
}

static int key_eq(const struct vt_row_key *a, const struct vt_row_key *b)
{
	for (int i = 0; i < 3; i++)
		if (strcmp(vt_nz(a->s[i]), vt_nz(b->s[i])))
			return 0;
	return a->num == b->num;
}

static int hidx_rebuild(struct vt_row_index *h, const char *rows, size_t n, size_t elem, vt_row_key_fn key_of)
{
	size_t cap = 16;
	uint32_t *slot;

	while (cap < 2 * (n + 1))
		cap *= 2;
	slot = calloc(cap, sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct vt_row_key k = { 0 };
		size_t pos;

		key_of(rows + i * elem, &k);
		pos = key_hash(&k) & (cap - 1);
		while (slot[pos])
			pos = (pos + 1) & (cap - 1);
		slot[pos] = (uint32_t)(i + 1);
	}
	free(h->slot);
	h->slot = slot;
	h->cap = cap;
	return 0;
}

long vt_row_index_lookup(const struct vt_row_index *h, const char *rows, size_t n, size_t elem,
			 vt_row_key_fn key_of, const struct vt_row_key *key)
{
	size_t pos;

	if (!h->cap)
		return -1;
	pos = key_hash(key) & (h->cap - 1);
	while (h->slot[pos]) {
		size_t row = h->slot[pos] - 1;
		struct vt_row_key k = { 0 };

		if (row < n) {
			key_of(rows + row * elem, &k);
			if (key_eq(&k, key))
				return (long)row;
		}
		pos = (pos + 1) & (h->cap - 1);
	}
	return -1;
}

long vt_row_index_find(struct vt_row_index *h, const char *rows, size_t n, size_t elem,
		       vt_row_key_fn key_of, const struct vt_row_key *key, int *err)
{
	*err = 0;
	if (h->cap < 2 * (n + 1)) {
		*err = hidx_rebuild(h, rows, n, elem, key_of);
		if (*err)
			return -1;
	}
	return vt_row_index_lookup(h, rows, n, elem, key_of, key);
}

void vt_row_index_insert(struct vt_row_index *h, const struct vt_row_key *key, size_t row)
{
	size_t pos = key_hash(key) & (h->cap - 1);

	while (h->slot[pos])
		pos = (pos + 1) & (h->cap - 1);
	h->slot[pos] = (uint32_t)(row + 1);
}
