/*
 * profile.c: the recording model. Adders copy their strings and merge rows
 * with the same key, so a collector may add per-CPU values one by one.
 *
 * Maps can hold tens of thousands of keys (a Python program's functions, a
 * Ruby program's allocation sites), so each keyed vector has a small
 * open-addressing hash index (row numbers, rebuilt on growth) rather than a
 * linear search per add.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "profile/row_index.h"

/* The sum of every numeric column over its rows. An adder refuses
 * (-EOVERFLOW) a value that would take a sum past 2^64-1, so no total a
 * report prints, and no row merged from others, can wrap. */
enum total {
	T_ALLOC_COUNT, T_ALLOC_BYTES, T_ALLOC_SAMPLES, T_MCR, T_CCR, T_GSI, T_CALLS,
	T_SIG_RECEIVED, T_SIG_HANDLED,
	T_SIG_LATENCY, T_SIG_HIST, T_LOST, T_FREE_COUNT, T_FREE_BYTES, T__COUNT
};

struct vt_profile_index {
	struct vt_row_index allocs, mcr, ccr, gsi, signals, calls, lost, frees, live;
	uint64_t total[T__COUNT];
};

/* Adds v[i] to total t[i] for each i, or none of them when one would wrap. */
static int add_totals(struct vt_profile_index *idx, const enum total *t, const uint64_t *v,
		      size_t n)
{
	uint64_t sum;

	for (size_t i = 0; i < n; i++)
		if (__builtin_add_overflow(idx->total[t[i]], v[i], &sum))
			return -EOVERFLOW;
	for (size_t i = 0; i < n; i++)
		idx->total[t[i]] += v[i];
	return 0;
}

static int grow(void **v, size_t *cap, size_t n, size_t elem)
{
	size_t ncap;
	void *nv;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	nv = realloc(*v, ncap * elem);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

#define VEC_GROW(vec) grow((void **)&(vec).v, &(vec).cap, (vec).n, sizeof(*(vec).v))

static struct vt_profile_index *index_of(struct vt_profile *p)
{
	if (!p->index)
		p->index = calloc(1, sizeof(struct vt_profile_index));
	return p->index;
}

void vt_profile_init(struct vt_profile *p)
{
	memset(p, 0, sizeof(*p));
	p->has_allocations = true;
}

static void free_keyed(struct vt_keyed_count *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].name2);
	}
	free(v);
}

void vt_profile_free(struct vt_profile *p)
{
	struct vt_profile_index *idx;

	if (!p)
		return;
	free(p->runtime);
	free(p->probes);
	free(p->target);
	for (size_t i = 0; i < p->allocs.n; i++) {
		free(p->allocs.v[i].klass);
		free(p->allocs.v[i].method);
		free(p->allocs.v[i].site);
	}
	free(p->allocs.v);
	free_keyed(p->method_cache_resets.v, p->method_cache_resets.n);
	free_keyed(p->constant_cache_resets.v, p->constant_cache_resets.n);
	free_keyed(p->global_serial_incs.v, p->global_serial_incs.n);
	free_keyed(p->calls.v, p->calls.n);
	free(p->gc_pauses.v);
	free(p->gc_fresh.v);
	free(p->signals.v);
	for (size_t i = 0; i < p->lost.n; i++)
		free(p->lost.v[i].what);
	free(p->lost.v);
	for (size_t i = 0; i < p->frees.n; i++)
		free(p->frees.v[i].klass);
	free(p->frees.v);
	for (size_t i = 0; i < p->live.n; i++) {
		free(p->live.v[i].klass);
		free(p->live.v[i].method);
		free(p->live.v[i].site);
	}
	free(p->live.v);
	for (size_t i = 0; i < p->series.n; i++)
		free(p->series.v[i].klass);
	free(p->series.v);
	for (size_t i = 0; i < p->procs.n; i++)
		free(p->procs.v[i].comm), free(p->procs.v[i].cgroup), free(p->procs.v[i].runtime);
	free(p->procs.v);
	for (size_t i = 0; i < p->events.n; i++) {
		free(p->events.v[i].name);
		free(p->events.v[i].name2);
	}
	free(p->events.v);
	vt_stack_table_free(&p->stacks);
	idx = p->index;
	if (idx) {
		struct vt_row_index *all[] = { &idx->allocs, &idx->mcr, &idx->ccr, &idx->gsi,
					  &idx->signals, &idx->calls, &idx->lost, &idx->frees,
					  &idx->live };

		for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
			free(all[i]->slot);
		free(idx);
	}
	vt_profile_init(p);
}

static int replace_str(char **dst, const char *src)
{
	char *s = strdup(vt_nz(src));

	if (!s)
		return -ENOMEM;
	free(*dst);
	*dst = s;
	return 0;
}

int vt_profile_set_meta(struct vt_profile *p, const char *runtime, const char *probes,
			const char *target, int32_t pid)
{
	if (replace_str(&p->runtime, runtime) || replace_str(&p->probes, probes) ||
	    replace_str(&p->target, target))
		return -ENOMEM;
	p->pid = pid;
	return 0;
}

static void alloc_key(const void *row, struct vt_row_key *k)
{
	const struct vt_alloc *a = row;

	k->s[0] = a->klass;
	k->s[1] = a->method;
	k->s[2] = a->site;
	k->num = (int64_t)a->stack | (int64_t)a->proc << 32;
}

int vt_profile_add_alloc(struct vt_profile *p, const char *klass, const char *method,
			 const char *site, uint64_t count, uint64_t bytes, uint64_t samples)
{
	return vt_profile_add_alloc_stack(p, klass, method, site, 0, count, bytes, samples);
}

int vt_profile_add_alloc_stack(struct vt_profile *p, const char *klass, const char *method,
			       const char *site, uint32_t stack, uint64_t count, uint64_t bytes,
			       uint64_t samples)
{
	return vt_profile_add_alloc_proc(p, 0, klass, method, site, stack, count, bytes, samples);
}

int vt_profile_add_alloc_proc(struct vt_profile *p, uint32_t proc, const char *klass,
			      const char *method, const char *site, uint32_t stack, uint64_t count,
			      uint64_t bytes, uint64_t samples)
{
	struct vt_profile_index *idx = index_of(p);
	struct vt_row_key key = { { klass, method, site }, (int64_t)stack | (int64_t)proc << 32 };
	struct vt_alloc *a;
	long row;
	int err;

	if (!idx)
		return -ENOMEM;
	if (stack > p->stacks.n || proc > p->procs.n)
		return -EINVAL;
	err = add_totals(idx, (const enum total[]){ T_ALLOC_COUNT, T_ALLOC_BYTES, T_ALLOC_SAMPLES },
			 (const uint64_t[]){ count, bytes, samples }, 3);
	if (err)
		return err;
	row = vt_row_index_find(&idx->allocs, (const char *)p->allocs.v, p->allocs.n,
			sizeof(*p->allocs.v), alloc_key, &key, &err);
	if (err)
		return err;
	if (row < 0) {
		if (VEC_GROW(p->allocs))
			return -ENOMEM;
		a = &p->allocs.v[p->allocs.n];
		memset(a, 0, sizeof(*a));
		a->klass = strdup(vt_nz(klass));
		a->method = strdup(vt_nz(method));
		a->site = strdup(vt_nz(site));
		a->stack = stack;
		a->proc = proc;
		if (!a->klass || !a->method || !a->site) {
			free(a->klass);
			free(a->method);
			free(a->site);
			return -ENOMEM;
		}
		vt_row_index_insert(&idx->allocs, &key, p->allocs.n);
		p->allocs.n++;
	} else {
		a = &p->allocs.v[row];
	}
	a->count += count;
	a->bytes += bytes;
	a->samples += samples;
	return 0;
}

static void live_key(const void *row, struct vt_row_key *k)
{
	const struct vt_live *l = row;

	k->s[0] = l->klass;
	k->s[1] = l->method;
	k->s[2] = l->site;
}

struct vt_live *vt_profile_live_row(struct vt_profile *p, const char *klass, const char *method,
				    const char *site)
{
	struct vt_profile_index *idx = index_of(p);
	struct vt_row_key key = { { klass, method, site }, 0 };
	struct vt_live *row;
	long at;
	int err;

	if (!idx)
		return NULL;
	at = vt_row_index_find(&idx->live, (const char *)p->live.v, p->live.n, sizeof(*p->live.v),
			       live_key, &key, &err);
	if (err)
		return NULL;
	if (at >= 0)
		return &p->live.v[at];
	if (VEC_GROW(p->live))
		return NULL;
	row = &p->live.v[p->live.n];
	memset(row, 0, sizeof(*row));
	row->klass = strdup(vt_nz(klass));
	row->method = strdup(vt_nz(method));
	row->site = strdup(vt_nz(site));
	if (!row->klass || !row->method || !row->site) {
		free(row->klass);
		free(row->method);
		free(row->site);
		return NULL;
	}
	vt_row_index_insert(&idx->live, &key, p->live.n);
	return &p->live.v[p->live.n++];
}

const struct vt_live *vt_profile_live_of(const struct vt_profile *p, const char *klass,
					 const char *method, const char *site)
{
	const struct vt_profile_index *idx = p->index;
	struct vt_row_key key = { { klass, method, site }, 0 };
	long at = idx ? vt_row_index_lookup(&idx->live, (const char *)p->live.v, p->live.n,
					    sizeof(*p->live.v), live_key, &key)
		      : -1;

	return at >= 0 ? &p->live.v[at] : NULL;
}

int vt_profile_add_stack(struct vt_profile *p, const struct vt_frame *frames, uint32_t depth,
			 bool cut, uint32_t *id)
{
	return vt_stack_table_add(&p->stacks, frames, depth, cut, id);
}

int vt_profile_stack_from(struct vt_profile *dst, const struct vt_profile *src, uint32_t id,
			  uint32_t *out)
{
	const struct vt_stack *s;

	if (id == 0) {
		*out = 0;
		return 0;
	}
	if (id > src->stacks.n)
		return -EINVAL;
	s = &src->stacks.v[id - 1];
	return vt_stack_table_add(&dst->stacks, s->frames, s->depth, s->cut, out);
}

static void keyed_key(const void *row, struct vt_row_key *k)
{
	const struct vt_keyed_count *c = row;

	k->s[0] = c->name;
	k->s[1] = c->name2;
}

#define KEYED_VEC(vec) (struct vt_keyed_count **)&(vec).v, &(vec).n, &(vec).cap

static int add_keyed(struct vt_profile_index *idx, enum total t, struct vt_row_index *h,
		     struct vt_keyed_count **v, size_t *n, size_t *cap,
		     const char *name, const char *name2, uint64_t count)
{
	struct vt_row_key key = { { name, name2, NULL }, 0 };
	struct vt_keyed_count *c;
	long row;
	int err;

	err = add_totals(idx, &t, &count, 1);
	if (err)
		return err;
	row = vt_row_index_find(h, (const char *)*v, *n, sizeof(**v), keyed_key, &key, &err);
	if (err)
		return err;
	if (row >= 0) {
		(*v)[row].count += count;
		return 0;
	}
	if (grow((void **)v, cap, *n, sizeof(**v)))
		return -ENOMEM;
	c = &(*v)[*n];
	c->name = strdup(vt_nz(name));
	c->name2 = strdup(vt_nz(name2));
	if (!c->name || !c->name2) {
		free(c->name);
		free(c->name2);
		return -ENOMEM;
	}
	c->count = count;
	vt_row_index_insert(h, &key, *n);
	(*n)++;
	return 0;
}

int vt_profile_add_method_cache_reset(struct vt_profile *p, const char *klass,
				      const char *method, uint64_t count)
{
	struct vt_profile_index *idx = index_of(p);

	if (!idx)
		return -ENOMEM;
	return add_keyed(idx, T_MCR, &idx->mcr, KEYED_VEC(p->method_cache_resets), klass, method, count);
}

int vt_profile_add_constant_cache_reset(struct vt_profile *p, const char *name, uint64_t count)
{
	struct vt_profile_index *idx = index_of(p);

	if (!idx)
		return -ENOMEM;
	return add_keyed(idx, T_CCR, &idx->ccr, KEYED_VEC(p->constant_cache_resets), name, "", count);
}

int vt_profile_add_global_serial_inc(struct vt_profile *p, const char *reason, uint64_t count)
{
	struct vt_profile_index *idx = index_of(p);

	if (!idx)
		return -ENOMEM;
	return add_keyed(idx, T_GSI, &idx->gsi, KEYED_VEC(p->global_serial_incs), reason, "", count);
}

int vt_profile_add_call(struct vt_profile *p, const char *name, const char *file, uint64_t count)
{
	struct vt_profile_index *idx = index_of(p);

	if (!idx)
		return -ENOMEM;
	return add_keyed(idx, T_CALLS, &idx->calls, KEYED_VEC(p->calls), name, file, count);
}

static void signal_key(const void *row, struct vt_row_key *k)
{
	k->num = ((const struct vt_signal *)row)->signo;
}

int vt_profile_add_signal(struct vt_profile *p, int signo, uint64_t received, uint64_t handled,
			  uint64_t latency_ns_total, uint64_t latency_ns_max,
			  const uint64_t hist[VT_HIST_BUCKETS])
{
	struct vt_profile_index *idx = index_of(p);
	struct vt_row_key key = { { NULL, NULL, NULL }, signo };
	struct vt_signal *s;
	long row;
	int err;

	uint64_t hist_sum = 0;

	if (!idx)
		return -ENOMEM;
	/* the histogram's buckets together: no bucket, and no bar chart
	 * scaled by the largest, can wrap */
	for (int i = 0; hist && i < VT_HIST_BUCKETS; i++)
		if (__builtin_add_overflow(hist_sum, hist[i], &hist_sum))
			return -EOVERFLOW;
	err = add_totals(idx, (const enum total[]){ T_SIG_RECEIVED, T_SIG_HANDLED, T_SIG_LATENCY,
						    T_SIG_HIST },
			 (const uint64_t[]){ received, handled, latency_ns_total, hist_sum }, 4);
	if (err)
		return err;
	row = vt_row_index_find(&idx->signals, (const char *)p->signals.v, p->signals.n,
			sizeof(*p->signals.v), signal_key, &key, &err);
	if (err)
		return err;
	if (row < 0) {
		if (VEC_GROW(p->signals))
			return -ENOMEM;
		s = &p->signals.v[p->signals.n];
		memset(s, 0, sizeof(*s));
		s->signo = signo;
		vt_row_index_insert(&idx->signals, &key, p->signals.n);
		p->signals.n++;
	} else {
		s = &p->signals.v[row];
	}
	s->received += received;
	s->handled += handled;
	s->latency_total_ns += latency_ns_total;
	if (latency_ns_max > s->latency_max_ns)
		s->latency_max_ns = latency_ns_max;
	if (hist)
		for (int i = 0; i < VT_HIST_BUCKETS; i++)
			s->latency_hist[i] += hist[i];
	return 0;
}

static void lost_key(const void *row, struct vt_row_key *k)
{
	k->s[0] = ((const struct vt_lost *)row)->what;
}

int vt_profile_add_lost(struct vt_profile *p, const char *what, uint64_t count)
{
	struct vt_profile_index *idx = index_of(p);
	struct vt_row_key key = { { what, NULL, NULL }, 0 };
	long row;
	int err;

	if (!idx)
		return -ENOMEM;
	err = add_totals(idx, (const enum total[]){ T_LOST }, &count, 1);
	if (err)
		return err;
	row = vt_row_index_find(&idx->lost, (const char *)p->lost.v, p->lost.n, sizeof(*p->lost.v),
			lost_key, &key, &err);
	if (err)
		return err;
	if (row >= 0) {
		p->lost.v[row].count += count;
		return 0;
	}
	if (VEC_GROW(p->lost))
		return -ENOMEM;
	p->lost.v[p->lost.n].what = strdup(vt_nz(what));
	if (!p->lost.v[p->lost.n].what)
		return -ENOMEM;
	p->lost.v[p->lost.n].count = count;
	vt_row_index_insert(&idx->lost, &key, p->lost.n);
	p->lost.n++;
	return 0;
}

static void free_key(const void *row, struct vt_row_key *k)
{
	k->s[0] = ((const struct vt_free *)row)->klass;
}

int vt_profile_add_free(struct vt_profile *p, const char *klass, uint64_t count, uint64_t bytes)
{
	struct vt_profile_index *idx = index_of(p);
	struct vt_row_key key = { { klass, NULL, NULL }, 0 };
	long row;
	int err;

	if (!idx)
		return -ENOMEM;
	err = add_totals(idx, (const enum total[]){ T_FREE_COUNT, T_FREE_BYTES },
			 (const uint64_t[]){ count, bytes }, 2);
	if (err)
		return err;
	row = vt_row_index_find(&idx->frees, (const char *)p->frees.v, p->frees.n, sizeof(*p->frees.v),
			free_key, &key, &err);
	if (err)
		return err;
	if (row < 0) {
		if (VEC_GROW(p->frees))
			return -ENOMEM;
		p->frees.v[p->frees.n].klass = strdup(vt_nz(klass));
		if (!p->frees.v[p->frees.n].klass)
			return -ENOMEM;
		p->frees.v[p->frees.n].count = 0;
		p->frees.v[p->frees.n].bytes = 0;
		vt_row_index_insert(&idx->frees, &key, p->frees.n);
		row = (long)p->frees.n++;
	}
	p->frees.v[row].count += count;
	p->frees.v[row].bytes += bytes;
	return 0;
}

int vt_profile_add_event(struct vt_profile *p, const struct vt_event *e)
{
	struct vt_event *d;

	if (VEC_GROW(p->events))
		return -ENOMEM;
	d = &p->events.v[p->events.n];
	*d = *e;
	d->name = strdup(vt_nz(e->name));
	d->name2 = strdup(vt_nz(e->name2));
	if (!d->name || !d->name2) {
		free(d->name);
		free(d->name2);
		return -ENOMEM;
	}
	p->events.n++;
	return 0;
}

const char *vt_gc_kind_name(const struct vt_profile *p, int kind)
{
	static const char *const generic[VT_GC_KINDS] = { "minor", "major", "pause" };
	static const char *const python[VT_GC_KINDS] = { "gen0", "gen1", "gen2" };
	static const char *const ruby[VT_GC_KINDS] = { "mark", "sweep", "kind2" };

	if (kind < 0 || kind >= VT_GC_KINDS)
		return "unknown";
	if (p && p->runtime && !strcmp(p->runtime, "python"))
		return python[kind];
	if (p && p->runtime && !strcmp(p->runtime, "ruby"))
		return ruby[kind];
	return generic[kind];
}
