/*
 * vmtrace_batch.c: ending a recording of batched counts (vmtrace_batch.h).
 *
 * Why two rounds. The provider flushes every thread in rounds, one after
 * another on one thread. A round already under way when we ask may have
 * flushed some threads before the counts we want; the round after it began
 * after we asked and takes everything. So we wait until either a round ends
 * that answers our own request value (it read the value at its start), or
 * two rounds have ended since we asked (another consumer may have written
 * its own value over ours).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "runtimes/vmtrace/sampling.h"
#include "runtimes/vmtrace/vmtrace_batch.h"

#define REQUEST_SYMBOL "vmtrace_batch_request"
/* The provider's flush thread state (provider/core/src/batch.h): NONE until the
 * first thread counts a batched event, which starts it before counting. */
#define FLUSHER_SYMBOL "vmtrace__batch_flusher"
#define FLUSHER_NONE 0
#define POLL_MS 10

/* The consumer's layout is the provider's (provider/core/include/vmtrace/batch.h). */
#include "vmtrace/batch.h"
_Static_assert(sizeof(struct vt_batch_hdr) == sizeof(struct vmtrace_batch), "batch header");
_Static_assert(sizeof(struct vt_batch_rec) == sizeof(struct vmtrace_batch_record), "batch record");
_Static_assert(VT_BATCH_MAGIC == VMTRACE_BATCH_MAGIC && VT_BATCH_MAX_BYTES == VMTRACE_BATCH_MAX_BYTES &&
	       VT_BATCH_ALLOC == VMTRACE_BATCH_ALLOC && VT_BATCH_FREE == VMTRACE_BATCH_FREE &&
	       VT_BATCH_ROUND_END == VMTRACE_BATCH_ROUND_END && VT_BATCH_EXIT == VMTRACE_BATCH_EXIT,
	       "batch constants");
_Static_assert(sizeof(struct vt_live_rec) == sizeof(struct vmtrace_live_record) &&
	       VT_BATCH_LIVE == VMTRACE_BATCH_LIVE && VT_LIVE_ALLOC == VMTRACE_LIVE_ALLOC &&
	       VT_LIVE_FREE == VMTRACE_LIVE_FREE && VT_LIVE_PAIR_ALLOC == VMTRACE_LIVE_PAIR_ALLOC &&
	       VT_LIVE_PAIR_FREE == VMTRACE_LIVE_PAIR_FREE && VT_LIVE_TRACK == VMTRACE_LIVE_TRACK &&
	       VT_LIVE_HELD_FREE == VMTRACE_LIVE_HELD_FREE && VT_LIVE_NET == VMTRACE_LIVE_NET &&
	       VT_LIVE_KEY == VMTRACE_LIVE_KEY && VT_LIVE_AGES == VMTRACE_LIVE_AGES,
	       "live records");

bool vt_batch_any(const struct vt_batch_end *e)
{
	for (int k = 0; k < VT_BATCH_KINDS; k++)
		if (e->kind[k])
			return true;
	return false;
}

static int read_state(const struct vt_batch_end *e, struct vt_batch_state s[VT_BATCH_KINDS])
{
	for (__u32 k = 0; k < VT_BATCH_KINDS; k++)
		if (bpf_map_lookup_elem(e->state_fd, &k, &s[k]))
			return -errno;
	return 0;
}

static long ms_since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t0->tv_sec) * 1000L + (now.tv_nsec - t0->tv_nsec) / 1000000L;
}

int vt_batch_finish(const struct vt_batch_end *e, bool exited, int (*poll)(void *, int), void *ctx,
		    int timeout_ms)
{
	struct vt_batch_state before[VT_BATCH_KINDS], now[VT_BATCH_KINDS];
	struct timespec t0;
	uint64_t token;

	if (!vt_batch_any(e))
		return 0;
	if (read_state(e, before))
		return 1;
	if (exited) {
		for (int k = 0; k < VT_BATCH_KINDS; k++)
			if (e->kind[k] && before[k].exits == 0)
				return 1;
		return 0;
	}
	/* no flush thread: no thread ever counted a batched event, so none is
	 * pending, and no round would answer (an idle process would cost the
	 * whole timeout and a false loss) */
	int flusher = -1;

	if (!vt_provider_read(e->pid, e->probes, FLUSHER_SYMBOL, &flusher, sizeof(flusher)) &&
	    flusher == FLUSHER_NONE)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* a value no earlier request used: our pid and the time */
	token = ((uint64_t)getpid() << 40) ^ ((uint64_t)t0.tv_sec << 20) ^ (uint64_t)t0.tv_nsec;
	if (token == 0)
		token = 1;
	if (vt_provider_write_u64(e->pid, e->probes, REQUEST_SYMBOL, token))
		token = 0; /* an old provider, or it is going: the periodic rounds still come */
	while (ms_since(&t0) < timeout_ms) {
		bool done = true;

		if (poll)
			poll(ctx, POLL_MS);
		else
			usleep(POLL_MS * 1000);
		if (read_state(e, now))
			return 1;
		for (int k = 0; k < VT_BATCH_KINDS; k++) {
			if (!e->kind[k] || now[k].exits > before[k].exits)
				continue;
			if (!(token && now[k].last_request == token && now[k].rounds > before[k].rounds) &&
			    now[k].rounds < before[k].rounds + 2)
				done = false;
		}
		if (done)
			return 0;
		if (kill(e->pid, 0) && errno == ESRCH) {
			exited = true;
			break;
		}
	}
	if (exited && read_state(e, now) == 0) {
		for (int k = 0; k < VT_BATCH_KINDS; k++)
			if (e->kind[k] && now[k].exits == 0)
				return 1;
		return 0;
	}
	return 1;
}

/* pid's provider has a flush thread (it counted a batched event). */
static bool flusher_running(pid_t pid, const struct vt_usdt_list *probes)
{
	int flusher = FLUSHER_NONE;

	return !vt_provider_read(pid, probes, FLUSHER_SYMBOL, &flusher, sizeof(flusher)) &&
	       flusher != FLUSHER_NONE;
}

uint64_t vt_batch_finish_all(struct vt_batch_end *e, struct vt_proc_table *procs,
			     int (*poll)(void *, int), void *ctx, int timeout_ms)
{
	uint64_t missing = 0;

	if (!vt_batch_any(e) || vt_proc_table_refresh(procs))
		return vt_batch_any(e); /* the table unreadable: say one is missing */
	for (uint32_t s = 1; s < procs->n; s++) {
		const struct vt_proc_info *pi = vt_proc_table_get(procs, s);
		struct vt_proc bp;
		bool sent = false, unended = false;

		if (!pi || vt_proc_table_entry(procs, s, &bp))
			continue;
		for (int k = 0; k < VT_BATCH_KINDS && k < 2; k++) {
			sent |= e->kind[k] && bp.batches[k];
			unended |= e->kind[k] && bp.batches[k] && !bp.exits[k];
		}
		/* a process whose first round has not come yet may still hold
		 * counts: asked like the others when its flush thread runs */
		if (!sent && !flusher_running(pi->pid, e->probes))
			continue;
		if (vt_proc_table_current(procs, s)) {
			e->pid = pi->pid;
			missing += vt_batch_finish(e, false, poll, ctx, timeout_ms) != 0;
		} else {
			missing += unended;
		}
	}
	return missing;
}
