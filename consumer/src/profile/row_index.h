/*
 * row_index.h: row numbers of a vector of rows, found by the rows' key, in
 * a small open-addressing hash table rebuilt as the vector grows. The
 * profile's keyed vectors can hold tens of thousands of rows (a Python
 * program's functions, a Ruby program's allocation sites), so an add looks
 * its row up here rather than searching the vector.
 */
#ifndef VMTRACE_ROW_INDEX_H
#define VMTRACE_ROW_INDEX_H

#include <stddef.h>
#include <stdint.h>

/* A key: up to three strings (NULL reads as "") and a number, whichever
 * the vector uses. */
struct vt_row_key {
	const char *s[3];
	int64_t num;
};

/* The key of the row at row, filled into *k. */
typedef void (*vt_row_key_fn)(const void *row, struct vt_row_key *k);

struct vt_row_index {
	uint32_t *slot; /* row + 1, 0 = empty */
	size_t cap;     /* a power of two */
};

static inline const char *vt_nz(const char *s)
{
	return s ? s : "";
}

/* The home slot of a 64-bit key (a pointer, an id) in an open-addressing
 * table of cap slots, a power of two: the tables beside the profile that
 * are keyed by numbers, not by rows. */
static inline size_t vt_key_slot(uint64_t key, size_t cap)
{
	return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

/* The row of rows[0..n) (each elem bytes) holding key, or -1; *err is 0 or
 * -ENOMEM. The index is rebuilt first when it would be more than half full
 * after one more row. */
long vt_row_index_find(struct vt_row_index *h, const char *rows, size_t n, size_t elem,
		       vt_row_key_fn key_of, const struct vt_row_key *key, int *err);

/* The row holding key, or -1, with no room made: for an index kept
 * current by find and insert. */
long vt_row_index_lookup(const struct vt_row_index *h, const char *rows, size_t n, size_t elem,
			 vt_row_key_fn key_of, const struct vt_row_key *key);

/* Records that row (just appended) holds key; a find before it made room. */
void vt_row_index_insert(struct vt_row_index *h, const struct vt_row_key *key, size_t row);

#endif /* VMTRACE_ROW_INDEX_H */
