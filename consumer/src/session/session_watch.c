/*
 * session_watch.c: one process or every process, for top and serve
 * (session_watch.h).
 */
#include <string.h>

#include "session/session_watch.h"

int vt_watch_open(struct vt_watch *w, const struct vt_session_opts *o, bool all, char *err,
		  size_t errlen)
{
	memset(w, 0, sizeof(*w));
	w->all = all;
	return all ? vt_session_all_open(&w->every, o, err, errlen)
		   : vt_session_open(&w->one, o, err, errlen);
}

enum vt_wait_result vt_watch_wait(struct vt_watch *w, long long timeout_ms)
{
	return w->all ? vt_session_all_wait(&w->every, timeout_ms)
		      : vt_session_wait(&w->one, timeout_ms);
}

int vt_watch_collect(struct vt_watch *w, struct vt_profile *p)
{
	return w->all ? vt_session_all_collect(&w->every, p) : vt_session_collect(&w->one, p);
}

double vt_watch_elapsed(const struct vt_watch *w)
{
	return w->all ? vt_session_ms_since(&w->every.started) / 1000.0
		      : vt_session_elapsed(&w->one);
}

void vt_watch_close(struct vt_watch *w)
{
	if (w->all)
		vt_session_all_close(&w->every);
	else
		vt_session_close(&w->one);
}
