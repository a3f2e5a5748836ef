/*
 * strtab.h: a table of distinct strings, each numbered in the order it
 * was first added: pprof's string table, and the keys `serve` has given a
 * series of their own.
 */
#ifndef VMTRACE_STRTAB_H
#define VMTRACE_STRTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vt_strtab {
	char **v;                    /* read-only: the strings (copies), in order */
	size_t n;                    /* read-only */
	size_t cap;                  /* private */
	size_t *slot;                /* private: open addressing, index + 1 */
	size_t nslot;                /* private */
};

/* The number of s (NULL is ""), added as a copy when new (*fresh true,
 * fresh may be NULL); -1 on -ENOMEM. */
int64_t vt_strtab_intern(struct vt_strtab *t, const char *s, bool *fresh);
/* The number of s, or -1 when it is not in the table. */
int64_t vt_strtab_find(const struct vt_strtab *t, const char *s);
void vt_strtab_free(struct vt_strtab *t); /* frees the strings; the struct is zeroed */

#endif /* VMTRACE_STRTAB_H */
