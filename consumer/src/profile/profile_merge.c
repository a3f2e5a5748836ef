/*
 * profile_merge.c: one profile of several processes recorded at once
 * (-p PID,PID...): each process is a row of procs, and its allocations
 * carry its number, so --by pid and the record keep them apart. The other
 * tables are the processes' sums.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"

int vt_profile_add_process(struct vt_profile *p, int32_t pid, const char *comm,
			   const char *cgroup, uint32_t *id)
{
	struct vt_process *v;

	if (pid <= 0)
		return -EINVAL;
	for (size_t i = 0; i < p->procs.n; i++)
		if (p->procs.v[i].pid == pid) {
			*id = (uint32_t)(i + 1);
			return 0;
		}
	if (p->procs.n == p->procs.cap) {
		size_t ncap = p->procs.cap ? p->procs.cap * 2 : 8;

		v = realloc(p->procs.v, ncap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		p->procs.v = v;
		p->procs.cap = ncap;
	}
	v = &p->procs.v[p->procs.n];
	v->pid = pid;
	v->comm = strdup(comm ? comm : "");
	v->cgroup = strdup(cgroup && *cgroup ? cgroup : "/");
	v->runtime = NULL;
	if (!v->comm || !v->cgroup) {
		free(v->comm);
		free(v->cgroup);
		return -ENOMEM;
	}
	*id = (uint32_t)++p->procs.n;
	return 0;
}

/* Whether the list "a,b" holds the item s[len] whole. */
static bool list_has(const char *list, const char *s, size_t len)
{
	for (const char *i = list; i && *i; i += strcspn(i, ","), i += *i == ',')
		if (strncmp(i, s, len) == 0 && (i[len] == ',' || !i[len]))
			return true;
	return false;
}

int vt_profile_process_runtime(struct vt_profile *p, uint32_t id, const char *runtime)
{
	struct vt_process *pr;

	if (!id || id > p->procs.n)
		return 0;
	pr = &p->procs.v[id - 1];
	/* each item of runtime ("a" or a merged "a,b") once */
	for (const char *s = runtime; *s; s += strcspn(s, ","), s += *s == ',') {
		size_t len = strcspn(s, ",");
		char *joined;

		if (!len || list_has(pr->runtime, s, len))
			continue;
		if (asprintf(&joined, "%s%s%.*s", pr->runtime ? pr->runtime : "",
			     pr->runtime ? "," : "", (int)len, s) < 0)
			return -ENOMEM;
		free(pr->runtime);
		pr->runtime = joined;
	}
	return 0;
}

/* The number in dst of src's process proc (0 stays 0), with its runtimes. */
static int own_process(struct vt_profile *dst, const struct vt_profile *src, uint32_t proc,
		       uint32_t *out)
{
	const struct vt_process *pr;
	int err;

	*out = 0;
	if (!proc || proc > src->procs.n)
		return 0;
	pr = &src->procs.v[proc - 1];
	err = vt_profile_add_process(dst, pr->pid, pr->comm, pr->cgroup, out);
	return err || !pr->runtime ? err : vt_profile_process_runtime(dst, *out, pr->runtime);
}

int vt_profile_add_rows(struct vt_profile *dst, const struct vt_profile *src, uint32_t proc)
{
	int err = 0;

	for (size_t i = 0; !err && i < src->allocs.n; i++) {
		const struct vt_alloc *a = &src->allocs.v[i];
		uint32_t stack = 0, in = proc;

		err = vt_profile_stack_from(dst, src, a->stack, &stack);
		if (!err && proc == VT_PROFILE_OWN_PROCS)
			err = own_process(dst, src, a->proc, &in);
		if (!err)
			err = vt_profile_add_alloc_proc(dst, in, a->klass, a->method, a->site, stack,
							a->count, a->bytes, a->samples);
	}
	for (size_t i = 0; !err && i < src->method_cache_resets.n; i++)
		err = vt_profile_add_method_cache_reset(dst, src->method_cache_resets.v[i].name,
							src->method_cache_resets.v[i].name2,
							src->method_cache_resets.v[i].count);
	for (size_t i = 0; !err && i < src->constant_cache_resets.n; i++)
		err = vt_profile_add_constant_cache_reset(dst, src->constant_cache_resets.v[i].name,
							  src->constant_cache_resets.v[i].count);
	for (size_t i = 0; !err && i < src->global_serial_incs.n; i++)
		err = vt_profile_add_global_serial_inc(dst, src->global_serial_incs.v[i].name,
						       src->global_serial_incs.v[i].count);
	for (size_t i = 0; !err && i < src->calls.n; i++)
		err = vt_profile_add_call(dst, src->calls.v[i].name, src->calls.v[i].name2,
					  src->calls.v[i].count);
	for (size_t i = 0; !err && i < src->lost.n; i++)
		err = vt_profile_add_lost(dst, src->lost.v[i].what, src->lost.v[i].count);
	for (size_t i = 0; !err && i < src->frees.n; i++)
		err = vt_profile_add_free(dst, src->frees.v[i].klass, src->frees.v[i].count,
					  src->frees.v[i].bytes);
	for (size_t i = 0; !err && i < src->signals.n; i++) {
		const struct vt_signal *s = &src->signals.v[i];

		err = vt_profile_add_signal(dst, s->signo, s->received, s->handled,
					    s->latency_total_ns, s->latency_max_ns, s->latency_hist);
	}
	return err;
}

int vt_profile_merge(struct vt_profile *dst, const struct vt_profile *src, uint32_t proc)
{
	int err = vt_profile_add_rows(dst, src, proc);

	for (int k = 0; !err && k < VT_GC_KINDS; k++) {
		dst->gc_collections[k] += src->gc_collections[k];
		if (src->gc_stats[k].count)
			err = vt_profile_add_gc_stats(dst, k, &src->gc_stats[k]);
	}
	if (src->last_serial > dst->last_serial)
		dst->last_serial = src->last_serial;
	if (!src->has_allocations)
		dst->has_allocations = false;
	return err;
}
