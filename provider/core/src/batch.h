/*
 * batch.h: batched counting (batch.c) as the rest of libvmtrace
 * sees it. Nothing here is public.
 *
 * The hot path is inline here so that an event costs one call (the host's
 * out-of-line half, probes.c) and no more: a known key at its first probe
 * is counted with three stores to one cache line. Everything else goes to
 * vmtrace__batch_count_slow.
 */
#ifndef VMTRACE_BATCH_COUNT_H
#define VMTRACE_BATCH_COUNT_H

#include <stdatomic.h>
#include <stdint.h>

#include "batch_table.h"
#include "batch_thread.h"

/* vmtrace__batch_flusher's values. The consumer reads it (NONE = 0: no
 * thread has counted a batched event, nothing can be pending), so NONE
 * stays 0 and is left only before a thread's first event (or in a fork
 * child, whose first event starts its own thread before counting). */
enum { VT_FLUSHER_NONE, VT_FLUSHER_RUNNING, VT_FLUSHER_FAILED };

/* The calling thread's record, NULL before its first event. One pointer of
 * initial-exec TLS: small enough for a dlopen'ed libvmtrace. */
extern __thread struct vt_thread *vmtrace__batch_self __attribute__((tls_model("initial-exec")));
/* VT_FLUSHER_*: NONE also after a fork, until the child's next event. */
extern _Atomic int vmtrace__batch_flusher;

void vmtrace__batch_count_slow(int k, uint64_t klass, uint64_t method, uint64_t site, uint64_t bytes,
			       uint64_t weight);
/* Count one allocation under the calling thread's VM stack too (while a
 * consumer holds stacks__armed): the walk in stacks.c, never inline. */
void vmtrace__batch_count_stack(uint64_t klass, uint64_t method, uint64_t site, uint64_t size,
				uint64_t weight);
/* The id of a cached site's key (batch_keys.c), with the calling thread's
 * counts by key ready for the host's inline adds; 0 when the event must be
 * counted the table's way. */
uint32_t vmtrace__batch_key(const char *klass, const char *method, const char *site);
/* Fold what signal handlers queued while t was busy. */
void vmtrace__batch_fold_self(struct vt_thread *t);

/* Count one event of kind (enum vmtrace_batch_kind) in the calling thread's
 * table, under stack id 0; bytes = size * weight are added. Six arguments,
 * all in registers, so the slow half is a tail call and the caller stays
 * frameless. Async-signal-safe once the thread has a table for the kind (its first event of a kind creates it
 * with mmap, which is async-signal-safe too; docs/probes.md). */
static inline __attribute__((always_inline)) void vmtrace__batch_count(int kind, uint64_t klass, uint64_t method, uint64_t site,
					uint64_t size, uint64_t weight)
{
	struct vt_thread *t = vmtrace__batch_self;
	struct vt_slot *sl, *base;
	int k = kind - 1;

	/* slots[k] is NULL also in a fork child until its flush thread runs */
	if (__builtin_expect(t && !t->busy && (base = t->slots[k]), 1)) {
		/* busy first, so a handler arriving mid-add queues its event */
		t->busy = 1;
		atomic_signal_fence(memory_order_seq_cst);
		sl = vt_slots_hit(base, t->mask[k], klass, method, site, 0);
		if (__builtin_expect(sl != NULL, 1))
			vt_slot_add(sl, size * weight, weight);
		atomic_signal_fence(memory_order_seq_cst);
		t->busy = 0;
		if (__builtin_expect(sl != NULL, 1)) {
			if (__builtin_expect(t->dhead != atomic_load_explicit(&t->dtail, memory_order_relaxed), 0))
				vmtrace__batch_fold_self(t);
			return;
		}
	}
	vmtrace__batch_count_slow(k, klass, method, site, size * weight, weight);
}

/* Deliver the calling thread's counts now. */
void vmtrace__batch_flush_self(void);

/* Wake the flush thread for a round of every thread now (at gc__begin, so
 * the bytes between collections stay about right without the collecting
 * thread delivering its counts itself). Async-signal-safe. 0, or -1 when
 * no flush thread runs (flush your own). */
int vmtrace__batch_round_soon(void);

#endif /* VMTRACE_BATCH_COUNT_H */
