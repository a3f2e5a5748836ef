/*
 * batch_internal.h: batched counting (batch.c) as the rest of libvmtrace
 * sees it. Nothing here is public.
 */
#ifndef VMTRACE_BATCH_INTERNAL_H
#define VMTRACE_BATCH_INTERNAL_H

#include <stdint.h>

/* Count one event of kind (enum vmtrace_batch_kind) in the calling thread's
 * table; bytes = size * weight are added; want_stack: under the thread's VM
 * stack too (stacks.c). Async-signal-safe once the thread has counted its
 * first event (that one creates its table). */
void vmtrace__batch_count(int kind, uint64_t klass, uint64_t method, uint64_t site, uint64_t size,
			  uint64_t weight, int want_stack);
/* Deliver the calling thread's counts now (at gc__begin, so bytes between
 * collections stay right for the collecting thread). */
void vmtrace__batch_flush_self(void);

#endif /* VMTRACE_BATCH_INTERNAL_H */
