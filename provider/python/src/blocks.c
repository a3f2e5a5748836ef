/*
 * blocks.c: each block's size, domain and live-heap word while frees are
 * wanted: a free is told only its pointer (see blocks.h). Used under the
 * GIL.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "batch_table.h" /* libvmtrace's count of events it could not count */
#include "blocks.h"
#include "intern.h"

struct block {
	uintptr_t ptr;                /* 0: empty */
	uint64_t size_obj;            /* size << 1 | 1 for the object domain */
	uint64_t word;                /* libvmtrace's word for the live heap (vmtrace_alloc_live) */
};

static struct block *blocks;
static size_t blocks_cap, blocks_n;

static size_t block_slot(uintptr_t ptr)
{
	return (size_t)(vt_mix64((uint64_t)ptr) & (blocks_cap - 1));
}

static int blocks_grow(void)
{
	size_t cap = blocks_cap ? blocks_cap * 2 : 1 << 16;
	struct block *t = calloc(cap, sizeof(*t)), *old = blocks;
	size_t old_cap = blocks_cap;

	if (!t)
		return -1;
	blocks = t;
	blocks_cap = cap;
	for (size_t i = 0; i < old_cap; i++) {
		size_t j;

		if (!old[i].ptr)
			continue;
		for (j = block_slot(old[i].ptr); blocks[j].ptr; j = (j + 1) & (cap - 1))
			;
		blocks[j] = old[i];
	}
	free(old);
	return 0;
}

void block_put(void *p, uint64_t size, int obj, uint64_t word)
{
	size_t j;

	if (2 * (blocks_n + 1) > blocks_cap && blocks_grow()) {
		/* no memory to remember it: its free will be unseen, so it is
		 * counted among the events the provider could not count */
		atomic_fetch_add_explicit(&vmtrace__batch_lost, 1, memory_order_relaxed);
		return;
	}
	for (j = block_slot((uintptr_t)p); blocks[j].ptr && blocks[j].ptr != (uintptr_t)p; j = (j + 1) & (blocks_cap - 1))
		;
	if (!blocks[j].ptr)
		blocks_n++;
	blocks[j] = (struct block){ (uintptr_t)p, size << 1 | (uint64_t)obj, word };
}

/* The block at p, taken out (linear probing: the entries after it move
 * back into the hole); 0 when p was allocated before frees were wanted. */
int block_take(void *p, uint64_t *size_obj, uint64_t *word)
{
	size_t j, k;

	if (!blocks_cap)
		return 0;
	for (j = block_slot((uintptr_t)p); blocks[j].ptr != (uintptr_t)p; j = (j + 1) & (blocks_cap - 1))
		if (!blocks[j].ptr)
			return 0;
	*size_obj = blocks[j].size_obj;
	*word = blocks[j].word;
	for (k = (j + 1) & (blocks_cap - 1); blocks[k].ptr; k = (k + 1) & (blocks_cap - 1)) {
		size_t home = block_slot(blocks[k].ptr);

		/* moves back unless its home lies cyclically in (j, k] */
		if ((j < k) ? (home <= j || home > k) : (home <= j && home > k)) {
			blocks[j] = blocks[k];
			j = k;
		}
	}
	blocks[j].ptr = 0;
	blocks_n--;
	return 1;
}

void blocks_clear(void)
{
	free(blocks);
	blocks = NULL;
	blocks_cap = blocks_n = 0;
}
