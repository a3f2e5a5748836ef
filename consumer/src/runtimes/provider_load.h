/*
 * provider_load.h: loading a provider into a running Ruby or CPython that
 * never loaded it, through a queue the runtime documents as safe to add to
 * from any thread or signal handler (Ruby's postponed jobs, CPython's
 * pending calls).
 *
 * One thread is stopped under ptrace (process/inject.h) for three calls:
 * mmap of one page, the text copied into it (it must outlive the stop:
 * the extension's path for Ruby's loader, a line of Python for CPython's),
 * then the queue, asked to run run(text) at the runtime's next safe point
 * (its lock held, between two instructions of the program). The thread is
 * released at once: the stop lasts the three calls. The runtime then loads
 * the provider itself. The page stays mapped (4 KiB, once per process: a
 * provider loaded is never loaded again).
 */
#ifndef VT_PROVIDER_LOAD_H
#define VT_PROVIDER_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct vt_runtime_queue {
	const char *const *modules; /* the file names (prefixes) of the modules defining these */
	const char *thread_check;   /* NULL, or f() nonzero in a thread that may add to the queue */
	const char *queue;          /* queue([0,] run, text): run(text) at the next safe point */
	const char *run;            /* takes the text: loads a path, or runs a line of code */
	bool flags_first;           /* the queue takes a flags word first (Ruby's) */
	bool main_first;            /* asked from the main thread first, where it is run */
	long queued;                /* what the queue returns when it took the call */
	long queued_already;        /* ... when the same call waits in it already (0: none) */
};

/* Queue run(text) (NUL-ended, under 4 KiB) in pid through q. 0 with the longest stop of a thread in *stop_us, or
 * -errno with one line in err; -ENOENT when pid has none of q's functions
 * (not this runtime). */
int vt_provider_queue(pid_t pid, const struct vt_runtime_queue *q, const char *text, long *stop_us,
		      char *err, size_t errlen);

/* Wait up to timeout_ms until pid maps the provider (a module whose file
 * name starts with one of module's prefixes) and its initialization is
 * through: it says it arms from a thread of its own (VMTRACE_HOST_ARMS_LATER
 * in vmtrace_host_armings, vmtrace/vmtrace.h), so the attach that follows
 * waits for its counting to be on. 0 with the time waited in *waited_ms,
 * -ETIME, or -ESRCH (pid gone). */
int vt_provider_wait_ready(pid_t pid, const char *const *module, int timeout_ms, long *waited_ms);

#endif
