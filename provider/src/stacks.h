/*
 * stacks.h: a thread's VM stacks for batched counting (stacks.c;
 * <vmtrace/frames.h> is the host's side, docs/stacks.md the design).
 *
 * The walk reads the host's frame chain from the thread's registered
 * pointer and names the stack by a hash of its frames. A thread keeps the
 * ids it has already sent (`known`) and the frames of the ones it has not
 * (`pend`, heads and frames as the STACK batch carries them). Only the
 * owner walks, interns and appends; a flush (owner or flush thread, under
 * the thread's lock) sends what was appended since the last one.
 */
#ifndef VMTRACE_STACKS_H
#define VMTRACE_STACKS_H

#include <stdatomic.h>
#include <stdint.h>

#include "vmtrace/batch.h"
#include "vmtrace/frames.h"

#define VT_STACKS_KNOWN 4096u        /* ids remembered per thread (slots; half are used) */
#define VT_STACKS_PEND 8192u         /* records waiting for a flush: heads and frames */

struct vt_batch_buf;

struct vt_stacks {
	uint64_t epoch;                              /* vmtrace_stacks_epoch `known` is for */
	uint32_t nknown;
	_Atomic uint32_t npend;                      /* records appended (owner; release) */
	uint32_t sent;                               /* records sent (under the lock) */
	uint64_t known[VT_STACKS_KNOWN];
	struct vmtrace_batch_frame walk[VMTRACE_STACK_MAX_DEPTH];
	struct vmtrace_batch_frame pend[VT_STACKS_PEND];
};

/* Is a frame chain described and this thread's pointer given? */
int vt_stacks_ready(void);

/* The id of the calling thread's stack now, its frames interned in s (new
 * ones wait in pend). 0 when the thread has no VM stack. Owner only, busy.
 * s may be NULL (a signal handler that interrupted its thread): then the
 * id only. When pend is full, *must_flush is set and the caller flushes
 * (vt_stacks_flush) and calls again. */
uint64_t vt_stacks_take(struct vt_stacks *s, int *must_flush);

/* Send the frames appended since the last flush in STACK batches through
 * buf (which must hold nothing), round as the batch header's; deliver 0:
 * only mark them sent. Under the thread's lock. */
void vt_stacks_flush(struct vt_stacks *s, struct vt_batch_buf *buf, uint32_t round, int deliver);

/* Start pend over once everything in it is sent: the owner, under the lock. */
void vt_stacks_rewind(struct vt_stacks *s);

struct vt_stacks *vt_stacks_new(void);      /* mmap'ed, zero; NULL when out of memory */
void vt_stacks_free(struct vt_stacks *s);

#endif /* VMTRACE_STACKS_H */
