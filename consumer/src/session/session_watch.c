/*
 * session_watch.c: one process, a process and those below it, or every
 * process, for top and serve (session_watch.h).
 */
#include <string.h>

#include "session/session_watch.h"

int vt_watch_open(struct vt_watch *w, const struct vt_opts *o, enum vt_watch_what what,
		  char *err, size_t errlen)
{
	memset(w, 0, sizeof(*w));
	w->what = what;
	w->all = what == VT_WATCH_ALL;
	switch (what) {
	case VT_WATCH_ALL:
		return vt_session_all_open(&w->every, o, err, errlen);
	case VT_WATCH_TREE:
		return vt_session_group_open_tree(&w->tree, o, &o->pid, 1, err, errlen);
	default:
		return vt_session_open(&w->one, o, err, errlen);
	}
}

const struct vt_session *vt_watch_session(const struct vt_watch *w)
{
	return w->what == VT_WATCH_TREE ? &w->tree.v[0] : &w->one;
}

enum vt_wait_result vt_watch_wait(struct vt_watch *w, long long timeout_ms)
{
	switch (w->what) {
	case VT_WATCH_ALL:
		return vt_session_all_wait(&w->every, timeout_ms);
	case VT_WATCH_TREE:
		return vt_session_group_wait(&w->tree, timeout_ms);
	default:
		return vt_session_wait(&w->one, timeout_ms);
	}
}

int vt_watch_collect(struct vt_watch *w, struct vt_profile *p)
{
	switch (w->what) {
	case VT_WATCH_ALL:
		return vt_session_all_collect(&w->every, p);
	case VT_WATCH_TREE:
		return vt_session_group_collect(&w->tree, p);
	default:
		return vt_session_collect(&w->one, p);
	}
}

double vt_watch_elapsed(const struct vt_watch *w)
{
	return w->all ? vt_session_ms_since(&w->every.started) / 1000.0
		      : vt_session_elapsed(vt_watch_session(w));
}

void vt_watch_close(struct vt_watch *w)
{
	switch (w->what) {
	case VT_WATCH_ALL:
		vt_session_all_close(&w->every);
		break;
	case VT_WATCH_TREE:
		vt_session_group_close(&w->tree);
		break;
	default:
		vt_session_close(&w->one);
	}
}
