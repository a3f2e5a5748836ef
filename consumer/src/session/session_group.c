/*
 * session_group.c: several tracing runs at once (session_group.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "process/cgroup.h"
#include "session/session_group.h"

#define GROUP_SLICE_MS 100 /* how often each target is polled and checked */

int vt_session_group_open(struct vt_session_group *g, const struct vt_session_opts *o,
			  const pid_t *pids, size_t n, bool skip_others, char *err, size_t errlen)
{
	memset(g, 0, sizeof(*g));
	g->v = calloc(n, sizeof(*g->v));
	g->exited = calloc(n, sizeof(*g->exited));
	g->comm = calloc(n, sizeof(*g->comm));
	g->cgroup = calloc(n, sizeof(*g->cgroup));
	if (!g->v || !g->exited || !g->comm || !g->cgroup) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t k = 0; k < n; k++) {
		struct vt_session_opts one = *o;
		char why[4096];
		size_t i;
		int r;

		one.pid = pids[k];
		one.cmd = NULL;
		r = vt_session_open(&g->v[g->n], &one, why, sizeof(why));
		if (r == -ENOENT && skip_others) {
			fprintf(stderr, "vmtrace: left out %s\n", why);
			vt_session_close(&g->v[g->n]);
			continue;
		}
		i = g->n++;
		if (r) {
			/* the session's reasons name the pid already ("pid N has ...") */
			snprintf(err, errlen, "%s%s", strstr(why, "pid ") ? "" : "-p: ", why);
			return r;
		}
		char cg[4096];

		g->comm[i] = vt_target_comm(pids[k]);
		if (!vt_cgroup_of(pids[k], cg, sizeof(cg)))
			g->cgroup[i] = strdup(cg);
		if (!g->comm[i]) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	if (!g->n) {
		snprintf(err, errlen, "none of the %zu processes has probes of a known runtime", n);
		return -ENOENT;
	}
	return 0;
}

enum vt_wait_result vt_session_group_wait(struct vt_session_group *g, long long timeout_ms)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		size_t live = 0;

		for (size_t i = 0; i < g->n; i++)
			live += !g->exited[i];
		if (!live)
			return VT_WAIT_EXITED;
		/* each live target gets its share of one slice */
		for (size_t i = 0; i < g->n; i++) {
			if (g->exited[i])
				continue;
			switch (vt_session_wait(&g->v[i], GROUP_SLICE_MS / (long long)live)) {
			case VT_WAIT_EXITED:
				g->exited[i] = true;
				break;
			case VT_WAIT_SIGNAL:
				return VT_WAIT_SIGNAL;
			case VT_WAIT_ERROR:
				return VT_WAIT_ERROR;
			default:
				break;
			}
		}
		if (timeout_ms >= 0 && vt_session_ms_since(&t0) >= timeout_ms)
			return VT_WAIT_TIMEOUT;
	}
}

void vt_session_group_finish(struct vt_session_group *g)
{
	for (size_t i = 0; i < g->n; i++)
		vt_session_finish(&g->v[i], g->exited[i]);
}

/* "a, b": the runtimes of the sessions, each once. */
static int runtime_names(const struct vt_session_group *g, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < g->n; i++) {
		bool earlier = false;

		for (size_t j = 0; j < i && !earlier; j++)
			earlier = g->v[j].rt == g->v[i].rt;
		if (earlier)
			continue;
		int w = snprintf(buf + used, len - used, "%s%s", used ? "," : "", g->v[i].rt->name);
		if (w < 0 || (size_t)w >= len - used)
			return -ENAMETOOLONG;
		used += (size_t)w;
	}
	return 0;
}

int vt_session_group_collect(struct vt_session_group *g, struct vt_profile *p)
{
	char runtimes[512];
	size_t tlen = 1;
	char *target;
	int err;

	vt_profile_init(p);
	for (size_t i = 0; i < g->n; i++)
		tlen += strlen(g->v[i].cmdline ? g->v[i].cmdline : "") + 32;
	target = calloc(1, tlen);
	if (!target)
		return -ENOMEM;
	for (size_t i = 0; i < g->n; i++) {
		size_t used = strlen(target);

		snprintf(target + used, tlen - used, "%s%d: %s", i ? "; " : "", (int)g->v[i].target.pid,
			 g->v[i].cmdline ? g->v[i].cmdline : "");
	}
	err = runtime_names(g, runtimes, sizeof(runtimes));
	for (size_t i = 0; !err && i < g->n; i++) {
		struct vt_profile one;
		uint32_t proc;

		err = vt_session_collect(&g->v[i], &one);
		if (!err && i == 0) {
			err = vt_profile_set_meta(p, runtimes, one.probes, target, (int32_t)g->v[i].target.pid);
			p->sample_period = one.sample_period;
			p->duration_s = one.duration_s;
			p->start_unix_ns = one.start_unix_ns;
			p->gc_pauses_limit = one.gc_pauses_limit;
		}
		if (!err)
			err = vt_profile_add_process(p, (int32_t)g->v[i].target.pid, g->comm[i],
						     g->cgroup[i] ? g->cgroup[i] : "/", &proc);
		if (!err)
			err = vt_profile_merge(p, &one, proc);
		vt_profile_free(&one);
	}
	free(target);
	return err;
}

void vt_session_group_close(struct vt_session_group *g)
{
	for (size_t i = 0; i < g->n; i++) {
		vt_session_close(&g->v[i]);
		if (g->comm)
			free(g->comm[i]);
		if (g->cgroup)
			free(g->cgroup[i]);
	}
	free(g->cgroup);
	free(g->v);
	free(g->exited);
	free(g->comm);
	memset(g, 0, sizeof(*g));
}
