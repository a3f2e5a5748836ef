/*
 * session_group.h: several tracing runs at once (`record -p PID,PID...`):
 * one session per process, each with its own adapter and BPF program, so
 * the per-event path of each is the single-process one; their profiles are
 * merged into one whose allocation rows carry the process (profile.h).
 */
#ifndef VMTRACE_SESSION_GROUP_H
#define VMTRACE_SESSION_GROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "profile/profile.h"
#include "session/session.h"

#define VT_GROUP_MAX 256  /* processes one recording takes at most */
#define VT_GROUP_ROOTS 64 /* ... and --children roots */

struct vt_session_group {
	struct vt_session *v;
	bool *exited;          /* per session: its target is gone */
	char **comm;           /* per session: /proc/PID/comm at attach */
	char **cgroup;         /* per session: its cgroup at attach, NULL: unknown */
	size_t n, cap;
	struct vt_opts opts;   /* what each session was opened with */
	bool children;                 /* --children: processes below roots join as they start */
	pid_t roots[VT_GROUP_ROOTS];
	size_t nroots;
	pid_t *tried;                  /* the processes attached or left out, each looked at once */
	size_t ntried, tried_cap;
};

/* Attach to every pid with the options o (o->pid and o->cmd ignored). 0, or
 * -errno with a one-line reason naming the pid; the caller closes g.
 * skip_others: a process without probes of a known runtime is left out,
 * said on stderr (--cgroup: a container's shell beside its server). */
int vt_session_group_open(struct vt_session_group *g, const struct vt_opts *o,
			  const pid_t *pids, size_t n, bool skip_others, char *err, size_t errlen);
/* -p PID --children: the roots and every process below them, now and as
 * they start (each looked at once per slice of vt_session_group_wait;
 * what a child makes before it is attached is not counted, and a line
 * says how late it was). Processes without probes are left out in a line
 * each. 0, or -errno with err. */
int vt_session_group_open_tree(struct vt_session_group *g, const struct vt_opts *o,
			       const pid_t *roots, size_t nroots, char *err, size_t errlen);
/* As vt_session_wait; VT_WAIT_EXITED once every target is gone. */
enum vt_wait_result vt_session_group_wait(struct vt_session_group *g, long long timeout_ms);
void vt_session_group_finish(struct vt_session_group *g);
/* One profile of them all (p initialized here), each process's rows apart. */
int vt_session_group_collect(struct vt_session_group *g, struct vt_profile *p);
/* Accepts a zeroed struct. */
void vt_session_group_close(struct vt_session_group *g);

#endif /* VMTRACE_SESSION_GROUP_H */
