/*
 * name_cache.h: target pointer -> name, an open-addressing table the
 * adapters fill as they resolve the pointers their BPF maps are keyed by.
 */
#ifndef VT_NAME_CACHE_H
#define VT_NAME_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct name_entry {
	uint64_t ptr;          /* 0 = empty slot */
	char *name;            /* NULL while unreadable */
	bool cut;              /* name is only the start of a longer one */
};

struct name_cache {
	struct name_entry *v;
	size_t cap, n;         /* cap a power of two */
};

/* The entry for ptr, created empty (name NULL) when new; NULL on ENOMEM. */
struct name_entry *vt_name_cache_get(struct name_cache *c, uint64_t ptr);
/* Frees every name and the table; c is empty afterwards. */
void vt_name_cache_free(struct name_cache *c);

#endif
