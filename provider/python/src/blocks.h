/*
 * blocks.h: the blocks allocated while frees are wanted, by address: the
 * size each was counted with, its domain, and libvmtrace's word for the
 * live heap (vmtrace_alloc_live), in libc's memory, not Python's.
 */
#ifndef VMTRACE_PY_BLOCKS_H
#define VMTRACE_PY_BLOCKS_H

#include <stdint.h>

#include "primitives.h"

/* Keeps p's size (obj: the object domain) and word; a block with no memory
 * to remember it is counted among the events the provider could not count. */
void block_put(void *p, uint64_t size, int obj, uint64_t word) VMTRACE_HIDDEN;

/* The block at p taken out: its size << 1 | obj and word; 0 when p was
 * allocated before frees were wanted. */
int block_take(void *p, uint64_t *size_obj, uint64_t *word) VMTRACE_HIDDEN;

/* All forgotten: frees are no longer wanted. */
void blocks_clear(void) VMTRACE_HIDDEN;

#endif
