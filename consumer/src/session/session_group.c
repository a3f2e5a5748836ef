/*
 * session_group.c: several tracing runs at once (session_group.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "process/cgroup.h"
#include "process/proc_tree.h"
#include "session/session_group.h"

#define GROUP_SLICE_MS 100 /* how often each target is polled and checked */

/* Attach one more process into slot g->n. -ENOENT with skip_others: it
 * has no probes of a known runtime, and a line says it is left out. Any
 * other failure leaves the slot free, its reason in err. */
static int add_one(struct vt_session_group *g, const struct vt_opts *o, pid_t pid,
		   bool skip_others, char *err, size_t errlen)
{
	struct vt_opts one = *o;
	char why[4096], cg[4096];
	size_t i;
	int r;

	one.pid = pid;
	one.cmd = NULL;
	r = vt_session_open(&g->v[g->n], &one, why, sizeof(why));
	if (r) {
		if (r == -ENOENT && skip_others)
			fprintf(stderr, "vmtrace: left out %s\n", why);
		/* the session's reasons name the pid already ("pid N has ...") */
		snprintf(err, errlen, "%s%s", strstr(why, "pid ") ? "" : "-p: ", why);
		vt_session_close(&g->v[g->n]);
		return r;
	}
	i = g->n++;
	g->comm[i] = vt_target_comm(pid);
	if (!vt_cgroup_of(pid, cg, sizeof(cg)))
		g->cgroup[i] = strdup(cg);
	if (!g->comm[i]) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

static int group_open(struct vt_session_group *g, const struct vt_opts *o, const pid_t *pids,
		      size_t n, size_t cap, bool skip_others, char *err, size_t errlen)
{
	if (n > cap) {
		snprintf(err, errlen, "%zu processes: more than the %d one recording takes", n, VT_GROUP_MAX);
		return -E2BIG;
	}
	g->v = calloc(cap, sizeof(*g->v));
	g->exited = calloc(cap, sizeof(*g->exited));
	g->comm = calloc(cap, sizeof(*g->comm));
	g->cgroup = calloc(cap, sizeof(*g->cgroup));
	g->cap = cap;
	g->opts = *o;
	if (!g->v || !g->exited || !g->comm || !g->cgroup) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t k = 0; k < n; k++) {
		int r = add_one(g, o, pids[k], skip_others, err, errlen);

		if (r && (r != -ENOENT || !skip_others))
			return r;
	}
	if (!g->n) {
		snprintf(err, errlen, "none of the %zu processes has probes of a known runtime", n);
		return -ENOENT;
	}
	return 0;
}

int vt_session_group_open(struct vt_session_group *g, const struct vt_opts *o,
			  const pid_t *pids, size_t n, bool skip_others, char *err, size_t errlen)
{
	memset(g, 0, sizeof(*g));
	return group_open(g, o, pids, n, n, skip_others, err, errlen);
}

int vt_session_group_open_tree(struct vt_session_group *g, const struct vt_opts *o,
			       const pid_t *roots, size_t nroots, char *err, size_t errlen)
{
	pid_t *kids = NULL, *all;
	size_t nkids = 0;
	int r;

	memset(g, 0, sizeof(*g));
	if (nroots > VT_GROUP_ROOTS)
		return -E2BIG;
	memcpy(g->roots, roots, nroots * sizeof(*roots));
	g->nroots = nroots;
	r = vt_proc_descendants(roots, nroots, &kids, &nkids);
	all = r ? NULL : malloc((nroots + nkids) * sizeof(*all));
	if (!all) {
		free(kids);
		snprintf(err, errlen, "cannot read the processes below them: %s", strerror(r ? -r : ENOMEM));
		return r ? r : -ENOMEM;
	}
	memcpy(all, roots, nroots * sizeof(*roots));
	memcpy(all + nroots, kids, nkids * sizeof(*kids));
	/* those without probes (a shell, a helper) are left out, each in a line */
	r = group_open(g, o, all, nroots + nkids, VT_GROUP_MAX, true, err, errlen);
	/* each looked at once: those left out are not tried again */
	g->tried = all;
	g->ntried = g->tried_cap = nroots + nkids;
	g->children = true;
	free(kids);
	return r;
}

/* --children: the processes forked below the roots since the last look,
 * each attached once (or left out once), with how late. */
static void adopt_children(struct vt_session_group *g)
{
	pid_t *kids;
	size_t nkids;

	if (!g->children || vt_proc_descendants(g->roots, g->nroots, &kids, &nkids))
		return;
	for (size_t k = 0; k < nkids; k++) {
		bool seen = false;
		char err[4608];
		int64_t age;
		int r;

		for (size_t i = 0; i < g->ntried && !seen; i++)
			seen = g->tried[i] == kids[k];
		if (seen)
			continue;
		if (g->ntried == g->tried_cap) {
			size_t cap = g->tried_cap ? 2 * g->tried_cap : 64;
			pid_t *v = realloc(g->tried, cap * sizeof(*v));

			if (!v)
				break;
			g->tried = v;
			g->tried_cap = cap;
		}
		g->tried[g->ntried++] = kids[k];
		if (g->n == g->cap) {
			fprintf(stderr, "vmtrace: pid %d: not recorded, %d processes are recorded already\n",
				(int)kids[k], VT_GROUP_MAX);
			continue;
		}
		age = vt_proc_age_ms(kids[k]);
		r = add_one(g, &g->opts, kids[k], true, err, sizeof(err));
		if (r && r != -ENOENT)
			fprintf(stderr, "vmtrace: pid %d, a new child, not recorded: %s\n", (int)kids[k], err);
		if (r)
			continue;
		/* what it made before the attach, from its fork on, is not counted */
		fprintf(stderr, "vmtrace: pid %d (%s): a new child, recorded from %" PRId64
			" ms after it started\n", (int)kids[k], g->comm[g->n - 1], age < 0 ? (int64_t)0 : age);
	}
	free(kids);
}

enum vt_wait_result vt_session_group_wait(struct vt_session_group *g, long long timeout_ms)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		size_t live = 0;

		adopt_children(g);
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
	free(g->tried);
	free(g->v);
	free(g->exited);
	free(g->comm);
	memset(g, 0, sizeof(*g));
}
