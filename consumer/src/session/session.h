/*
 * session.h: one tracing run, shared by `record` and `top`: find or start
 * the target, pick its runtime adapter, attach, wait, collect, detach.
 */
#ifndef VMTRACE_SESSION_H
#define VMTRACE_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "profile/profile.h"
#include "runtimes/runtime.h"
#include "session/target.h"

/* What a process left traced (serve, --every, --push) is sampled at when
 * --sample does not say and its provider samples (bytes): the JVM's own
 * default interval, Go's and async-profiler's. */
#define VT_ALWAYS_ON_PERIOD (512u * 1024)

struct vt_session {
	struct vt_target target;
	struct vt_usdt_list probes;
	const struct vt_runtime *rt;
	void *state;
	char *cmdline;             /* the traced process's command line */
	char *followed_from;       /* the command it was followed from (follow.h), or NULL */
	const char *spawn_note;    /* what the adapter changed in a spawned command, or a hint
				      for the target (a cheaper path it could offer), or NULL */
	char note_buf[640];        /* a note the session made itself (spawn_note may point here) */
	char load_note[512];       /* what loading a provider into a running process did, or "" */
	const struct vt_runtime *load_by; /* the runtime whose provider that was */
	uint64_t sample_period;    /* the period in force: --sample's, or a runtime's default */
	struct timespec started;   /* when the probes went live */
	struct timespec started_wall; /* the same moment on the wall clock */
};

enum vt_wait_result {
	VT_WAIT_TIMEOUT,           /* the interval passed */
	VT_WAIT_SIGNAL,            /* SIGINT or SIGTERM */
	VT_WAIT_EXITED,            /* the target exited */
	VT_WAIT_ERROR,
};

/* Install SIGINT/SIGTERM handlers that make vt_session_wait return. */
void vt_session_catch_signals(void);
bool vt_session_stop_requested(void);

/* Start or find the target, attach. 0, or -errno with a one-line reason. */
int vt_session_open(struct vt_session *s, const struct vt_opts *o, char *err,
		    size_t errlen);
/* Wait up to timeout_ms (negative: until a signal or the target's exit),
 * taking in the adapter's events meanwhile. */
enum vt_wait_result vt_session_wait(struct vt_session *s, long long timeout_ms);
/* The end of a recording: whatever the target still holds (batched counts)
 * is brought in, or counted as lost. exited: the target is gone. */
void vt_session_finish(struct vt_session *s, bool exited);
/* A fresh profile of everything counted so far (p is initialized here). */
int vt_session_collect(struct vt_session *s, struct vt_profile *p);
double vt_session_elapsed(const struct vt_session *s);
/* Milliseconds of CLOCK_MONOTONIC since t0. */
long long vt_session_ms_since(const struct timespec *t0);
/* Detach, end a spawned target still running, free. Accepts a zeroed struct. */
void vt_session_close(struct vt_session *s);

/* The provider living inside a runtime that s's probes come from, named
 * for a person ("vmtrace's Ruby extension"), its directory in dir; NULL
 * when they come from none. */
const char *vt_session_provider_module(const struct vt_session *s, char *dir, size_t len);

#endif /* VMTRACE_SESSION_H */
