/*
 * slots.c: the slot records of slots.h, found from an object's address
 * through two levels of tables, as a page table finds a page: no hash, two
 * dependent loads. A chunk covers 64 KiB of addresses, one record per
 * slot-size step of it (an offset's step by a multiply), so any two objects
 * in it, a slot apart at least, have records of their own; nothing of
 * Ruby's heap layout is assumed beyond the slot size. Records are 16 bytes
 * a 40-byte slot, made for the address ranges where objects are born while
 * the live heap is followed, mmap'ed (zero pages until written) and kept
 * for the process's life. Only under the GVL.
 */
#include <sys/mman.h>

#include "vmtrace/vmtrace.h"

#include "slots.h"

#define ADDR_BITS 47                    /* user space on x86-64; an address above has no record */
#define DIR_SHIFT 32                    /* a directory covers 4 GiB */
#define CHUNK_SHIFT 16                  /* a chunk 64 KiB */
#define DIR_CHUNKS (1u << (DIR_SHIFT - CHUNK_SHIFT))
#define ARENA_BYTES (4u << 20)          /* chunks are carved from mappings of this */

static struct vt_rb_slot **dirs[1u << (ADDR_BITS - DIR_SHIFT)];
static uint64_t step_recip;             /* 2^32 / slot bytes, rounded up */
static size_t chunk_bytes;
static char *arena;
static size_t arena_left;

void vt_rb_slots_init(size_t slot_bytes)
{
	/* exact for offsets below 2^16 while slot_bytes < 2^16 */
	step_recip = ((1ull << 32) + slot_bytes - 1) / slot_bytes;
	chunk_bytes = (((1u << CHUNK_SHIFT) - 1) / slot_bytes + 1) * sizeof(struct vt_rb_slot);
}

static void *map(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static struct vt_rb_slot *new_chunk(void)
{
	if (arena_left < chunk_bytes) {
		if (!(arena = map(ARENA_BYTES))) {
			arena_left = 0;
			return NULL;
		}
		arena_left = ARENA_BYTES;
	}
	arena_left -= chunk_bytes;
	return (struct vt_rb_slot *)(arena + arena_left);
}

struct vt_rb_slot *vt_rb_slot_of(VALUE obj, int make)
{
	uintptr_t a = (uintptr_t)obj;
	struct vt_rb_slot **dir, **chunk;

	if (VMTRACE_UNLIKELY(!chunk_bytes || a >> ADDR_BITS))
		return NULL;
	dir = dirs[a >> DIR_SHIFT];
	if (VMTRACE_UNLIKELY(!dir)) {
		if (!make || !(dir = map(DIR_CHUNKS * sizeof(*dir))))
			return NULL;
		dirs[a >> DIR_SHIFT] = dir;
	}
	chunk = &dir[(a >> CHUNK_SHIFT) & (DIR_CHUNKS - 1)];
	if (VMTRACE_UNLIKELY(!*chunk) && (!make || !(*chunk = new_chunk())))
		return NULL;
	return &(*chunk)[((a & ((1u << CHUNK_SHIFT) - 1)) * step_recip) >> 32];
}
