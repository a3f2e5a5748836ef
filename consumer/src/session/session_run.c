/*
 * session_run.c: a recording's run once it is open (session.h): waiting
 * for its end (a signal, a time, the target's exit) while the adapter takes
 * in what its BPF sends, the last counts, the profile.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <time.h>

#include "session/session.h"

#define WAIT_SLICE_MS 100 /* how often the target's exit is checked */

static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

void vt_session_catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };

	/* no SA_RESTART: a wait in progress returns at once */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

bool vt_session_stop_requested(void)
{
	return stop_requested;
}

long long vt_session_ms_since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t0->tv_sec) * 1000LL + (now.tv_nsec - t0->tv_nsec) / 1000000L;
}

enum vt_wait_result vt_session_wait(struct vt_session *s, long long timeout_ms)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		long long left = timeout_ms < 0 ? WAIT_SLICE_MS : timeout_ms - vt_session_ms_since(&t0);
		int slice = left < WAIT_SLICE_MS ? (int)(left > 0 ? left : 0) : WAIT_SLICE_MS;

		if (stop_requested)
			return VT_WAIT_SIGNAL;
		/* the runtime drains what its BPF sent (it submits without
		 * waking us) and the slice is spent waiting for the target's
		 * exit, so a recording ends as its target does, not up to a
		 * slice later */
		if (s->rt->poll) {
			int r = s->rt->poll(s->state, 0);

			if (r < 0 && r != -EINTR)
				return VT_WAIT_ERROR;
		}
		if (vt_target_exit_fd(&s->target) < 0)
			poll(NULL, 0, slice); /* no pidfd to wait on: the slice is a sleep */
		if (vt_target_wait_exit(&s->target, slice)) {
			if (s->rt->poll)
				s->rt->poll(s->state, 0); /* what it sent before it went */
			return VT_WAIT_EXITED;
		}
		if (stop_requested)
			return VT_WAIT_SIGNAL;
		if (timeout_ms >= 0 && vt_session_ms_since(&t0) >= timeout_ms)
			return VT_WAIT_TIMEOUT;
	}
}

void vt_session_finish(struct vt_session *s, bool exited)
{
	if (s->rt->finish)
		s->rt->finish(s->state, exited);
}

int vt_session_collect(struct vt_session *s, struct vt_profile *p)
{
	int r;

	vt_profile_init(p);
	r = s->rt->collect(s->state, p);
	if (!r)
		r = vt_profile_set_meta(p, s->rt->name, p->probes, s->cmdline ? s->cmdline : "",
					(int32_t)s->target.pid);
	/* the adapters' times are the kernel's monotonic clock: make them
	 * relative to the moment the probes went live */
	int64_t t0 = (int64_t)s->started.tv_sec * 1000000000 + s->started.tv_nsec;

	for (size_t i = 0; i < p->gc_pauses.n; i++)
		if (p->gc_pauses.v[i].tid)
			p->gc_pauses.v[i].at_ns -= t0;
	for (size_t i = 0; i < p->gc_fresh.n; i++)
		if (p->gc_fresh.v[i].tid)
			p->gc_fresh.v[i].at_ns -= t0;
	for (size_t i = 0; i < p->events.n; i++)
		p->events.v[i].at_ns -= t0;
	if (p->live_info.peak_bytes)
		p->live_info.peak_at_ns -= t0;
	p->duration_s = vt_session_elapsed(s);
	p->start_unix_ns = (uint64_t)s->started_wall.tv_sec * 1000000000ull + (uint64_t)s->started_wall.tv_nsec;
	return r;
}

double vt_session_elapsed(const struct vt_session *s)
{
	return vt_session_ms_since(&s->started) / 1000.0;
}
