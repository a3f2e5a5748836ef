/*
 * vmtrace_batch.h: the consumer's half of batched counts (docs/probes.md,
 * "Batched counts"): which events the target can batch, and the end of a
 * recording, when every thread's pending counts must reach the BPF maps.
 */
#ifndef VMTRACE_VMTRACE_BATCH_H
#define VMTRACE_VMTRACE_BATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtimes/proc_table.h"
#include "process/usdt_notes.h"
#include "runtimes/vmtrace/vmtrace_maps.h"

struct vt_batch_end {
	pid_t pid;
	const struct vt_usdt_list *probes;
	int state_fd;                     /* the batch_state map */
	bool kind[VT_BATCH_KINDS];        /* kinds this consumer attached */
};

/* Is anything batched at all? */
bool vt_batch_any(const struct vt_batch_end *e);

/* Make every thread's pending counts reach the maps: when the target still
 * runs, ask for a flush round (vmtrace_batch_request) and wait, calling
 * poll(ctx, ms) meanwhile, for a round that began after this call; when it
 * has exited, check that its last round (EXIT) arrived. 0 when everything
 * arrived; 1 when it did not (within timeout_ms, or the target died
 * without its last round): the caller counts it as lost. */
int vt_batch_finish(const struct vt_batch_end *e, bool exited, int (*poll)(void *, int), void *ctx,
		    int timeout_ms);

/* record --all: vt_batch_finish for each process of procs still running
 * (e->pid set to each in turn); one that exited, or exec'd, without the
 * last round of a kind it sent batches of counts as one missing. Returns
 * the rounds missing. */
uint64_t vt_batch_finish_all(struct vt_batch_end *e, struct vt_proc_table *procs,
			     int (*poll)(void *, int), void *ctx, int timeout_ms);

#endif /* VMTRACE_VMTRACE_BATCH_H */
