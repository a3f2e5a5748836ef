/*
 * session_watch.h: what the live commands (top, serve) follow: one process
 * (session.h), with --children it and the processes below it
 * (session_group.h), or with --all every process of a known runtime
 * (session_all.h), behind one set of calls so each command keeps one loop.
 */
#ifndef VMTRACE_SESSION_WATCH_H
#define VMTRACE_SESSION_WATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "profile/profile.h"
#include "session/session.h"
#include "session/session_all.h"
#include "session/session_group.h"

enum vt_watch_what { VT_WATCH_ONE, VT_WATCH_TREE, VT_WATCH_ALL };

struct vt_watch {
	enum vt_watch_what what;
	bool all;                    /* what == VT_WATCH_ALL */
	struct vt_session one;       /* VT_WATCH_ONE */
	struct vt_session_group tree; /* VT_WATCH_TREE: o->pid and those below it */
	struct vt_session_all every; /* VT_WATCH_ALL */
};

/* Open what says; 0, or -errno with a one-line reason. The caller closes w
 * either way. */
int vt_watch_open(struct vt_watch *w, const struct vt_opts *o, enum vt_watch_what what,
		  char *err, size_t errlen);
/* The process named by -p, and its session (the tree's first). */
const struct vt_session *vt_watch_session(const struct vt_watch *w);
/* vt_session_wait or vt_session_all_wait (never VT_WAIT_EXITED with all). */
enum vt_wait_result vt_watch_wait(struct vt_watch *w, long long timeout_ms);
/* A fresh profile of everything counted so far (p initialized here). */
int vt_watch_collect(struct vt_watch *w, struct vt_profile *p);
/* Seconds since the probes went live. */
double vt_watch_elapsed(const struct vt_watch *w);
void vt_watch_close(struct vt_watch *w);

#endif /* VMTRACE_SESSION_WATCH_H */
