/*
 * provider_load.c: a call queued in a running Ruby or CPython
 * (provider_load.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "process/inject.h"
#include "process/proc_info.h"
#include "vmtrace/vmtrace.h"
#include "runtimes/provider_load.h"

#define PAGE 4096
#define THREADS_MAX 256     /* threads looked at */
#define TRIES_MAX 8         /* threads stopped at most, looking for one that may queue */
#define CALL_MS 2000        /* a call that has not returned by then is abandoned */

static const char *const libc[] = { "libc.so", "libc-", NULL };

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/* In one stopped thread: the page, the text in it, the queue. 1 when
 * queued, 0 when this thread may not queue, -errno. */
static int queue_in(struct vt_inject *in, pid_t pid, const uint64_t fn[4], const struct vt_runtime_queue *q,
		    const char *text, char *err, size_t errlen)
{
	uint64_t ret, page;
	int r;

	if (fn[3]) {
		if ((r = vt_inject_call(in, fn[3], NULL, 0, &ret, CALL_MS, err, errlen)))
			return r;
		if (!(int)ret)
			return 0;
	}
	uint64_t map[6] = { 0, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, (uint64_t)-1, 0 };

	if ((r = vt_inject_call(in, fn[0], map, 6, &page, CALL_MS, err, errlen)))
		return r;
	if (page >= (uint64_t)-4095) {
		snprintf(err, errlen, "pid %d could not map a page for the text: %s", (int)pid,
			 strerror((int)-(int64_t)page));
		return (int)(int64_t)page;
	}
	if ((r = vt_proc_mem_write(pid, page, text, strlen(text) + 1))) {
		snprintf(err, errlen, "cannot write the text into pid %d: %s", (int)pid, strerror(-r));
		return r;
	}
	uint64_t args[3] = { 0, fn[2], page };

	if ((r = vt_inject_call(in, fn[1], q->flags_first ? args : args + 1, q->flags_first ? 3 : 2, &ret,
				CALL_MS, err, errlen)))
		return r;
	if ((long)(int)ret != q->queued && (!q->queued_already || (long)(int)ret != q->queued_already)) {
		snprintf(err, errlen, "pid %d's runtime did not take the call (its queue is full)", (int)pid);
		return -EAGAIN;
	}
	return 1;
}

int vt_provider_queue(pid_t pid, const struct vt_runtime_queue *q, const char *text, long *stop_us,
		      char *err, size_t errlen)
{
	uint64_t fn[4] = { 0 }; /* mmap, the queue, the evaluator, the thread check */
	pid_t tids[THREADS_MAX];
	int n, r = 0;

	*stop_us = 0;
	if (strlen(text) >= PAGE) {
		snprintf(err, errlen, "the text for pid %d's runtime is longer than a page", (int)pid);
		return -E2BIG;
	}
	if (vt_proc_symbol_in(pid, q->modules, q->queue, &fn[1]) ||
	    vt_proc_symbol_in(pid, q->modules, q->run, &fn[2]) ||
	    (q->thread_check && vt_proc_symbol_in(pid, q->modules, q->thread_check, &fn[3]))) {
		snprintf(err, errlen, "pid %d has no %s", (int)pid, q->queue);
		return -ENOENT;
	}
	if ((r = vt_proc_symbol_in(pid, libc, "mmap", &fn[0]))) {
		snprintf(err, errlen, "cannot find mmap in the C library of pid %d", (int)pid);
		return r;
	}
	if ((n = vt_inject_threads(pid, tids, THREADS_MAX)) <= 0) {
		snprintf(err, errlen, "cannot list the threads of pid %d", (int)pid);
		return n ? n : -ESRCH;
	}
	for (int i = 1; q->main_first && i < n; i++)
		if (tids[i] == pid) {
			memmove(tids + 1, tids, (size_t)i * sizeof(*tids));
			tids[0] = pid;
		}
	for (int i = 0, tries = 0; i < n && tries < TRIES_MAX; i++, tries++) {
		struct vt_inject in;
		long long t0 = now_us();

		r = vt_inject_stop(&in, pid, tids[i], err, errlen);
		if (!r)
			r = queue_in(&in, pid, fn, q, text, err, errlen);
		vt_inject_release(&in);
		if (now_us() - t0 > *stop_us)
			*stop_us = (long)(now_us() - t0);
		if (r == 1)
			return 0;
		if (r < 0 && r != -ESRCH)
			return r; /* the process's, or a call gone wrong: no other thread is tried */
	}
	if (!r)
		snprintf(err, errlen, "none of the first %d threads of pid %d may add to its runtime's queue",
			 TRIES_MAX, (int)pid);
	return r ? r : -ESRCH;
}

int vt_provider_wait_ready(pid_t pid, const char *const *module, int timeout_ms, long *waited_ms)
{
	long long t0 = now_us(), until = t0 + timeout_ms * 1000LL;

	for (;;) {
		uint64_t addr, armings = 0;

		if (kill(pid, 0) && errno == ESRCH)
			return -ESRCH;
		/* the module mapped, its initialization through (its last step) */
		if (!vt_proc_symbol_in(pid, module, "vmtrace_host_armings", &addr) &&
		    !vt_proc_mem_read(pid, addr, &armings, sizeof(armings)) && (armings & VMTRACE_HOST_ARMS_LATER)) {
			*waited_ms = (long)((now_us() - t0) / 1000);
			return 0;
		}
		if (now_us() >= until)
			return -ETIME;
		nanosleep(&(struct timespec){ 0, 2 * 1000 * 1000 }, NULL);
	}
}
