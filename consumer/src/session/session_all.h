/*
 * session_all.h: `record --all`, every process that maps a file with
 * vmtrace's probes or a known runtime's (docs/runtimes.md). One adapter per
 * such file, attached to the file for every process (pid -1): the kernel
 * puts the probes and their semaphores into each process that maps it, now
 * or later (exec, dlopen, fork), and each row carries its process
 * (procs_maps.h, proc_table.h).
 */
#ifndef VMTRACE_SESSION_ALL_H
#define VMTRACE_SESSION_ALL_H

#include <stddef.h>
#include <time.h>

#include "profile/profile.h"
#include "runtimes/runtime.h"
#include "session/session.h"

struct vt_all_file {
	char *path;
	const struct vt_runtime *rt;
	struct vt_usdt_list probes;  /* the file's own */
	void *state;
};

struct vt_session_all {
	struct vt_all_file *v;
	size_t n;
	struct timespec started, started_wall;
};

/* Find the files and attach. 0, or -errno with a one-line reason; the
 * caller closes s. Each file attached is said on stderr. */
int vt_session_all_open(struct vt_session_all *s, const struct vt_opts *o, char *err,
			size_t errlen);
/* As vt_session_wait, but never VT_WAIT_EXITED: processes come and go. */
enum vt_wait_result vt_session_all_wait(struct vt_session_all *s, long long timeout_ms);
void vt_session_all_finish(struct vt_session_all *s);
/* One profile of every process seen (p initialized here). */
int vt_session_all_collect(struct vt_session_all *s, struct vt_profile *p);
void vt_session_all_close(struct vt_session_all *s); /* accepts a zeroed struct */

#endif /* VMTRACE_SESSION_ALL_H */
