/*
 * live_batch.h: the per-thread address buffers of live__batch (live_batch.c),
 * as the rest of libvmtrace sees them. Nothing here is public.
 */
#ifndef VMTRACE_LIVE_BATCH_H
#define VMTRACE_LIVE_BATCH_H

#include <stdint.h>

/* Append one allocation (op VMTRACE_LIVE_ALLOC) or free to the calling
 * thread's buffer; a full buffer is delivered first. */
void vmtrace__live_add(uint32_t op, uint64_t addr, uint64_t klass, uint64_t method, uint64_t site,
		       uint64_t size, uint64_t weight);
/* Deliver the calling thread's buffer now (at gc__begin: its allocations
 * reach the tracer before the collection frees them). */
void vmtrace__live_flush_self(void);
/* Deliver every thread's buffer (the flush rounds of batch.c, so a
 * consumer's request for everything covers the addresses too), with what
 * its thread has held longer than a round; everything it holds when the
 * process exits or the round answers a new request. */
void vmtrace__live_round(int exiting, uint64_t request);

#endif
