/*
 * adapter.c: the plumbing every runtime adapter shares (adapter.h).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "runtimes/adapter.h"
#include "runtimes/pause_maps.h"
#include "runtimes/percpu.h"

static bool permission_error(int err)
{
	return err == -EPERM || err == -EACCES;
}

static void say_not_permitted(char *errbuf, size_t errlen)
{
	snprintf(errbuf, errlen, "BPF not permitted (run as root or with CAP_BPF+CAP_PERFMON)");
}

int vt_adapter_init(struct vt_adapter *a, const char *provider, const char *attach_label,
		    pid_t pid, size_t event_size, size_t log_limit, char *errbuf, size_t errlen)
{
	int err;

	a->provider = provider;
	a->attach_label = attach_label;
	a->pid = pid;
	a->events.size = event_size;
	a->events.limit = log_limit ? log_limit : VT_GC_PAUSES_DEFAULT;
	a->gc_keep = a->events.limit;
	a->ncpus = libbpf_num_possible_cpus();
	if (a->ncpus <= 0) {
		err = a->ncpus ? a->ncpus : -EINVAL;
		snprintf(errbuf, errlen, "cannot count the CPUs: %s", strerror(-err));
		return err;
	}
	return 0;
}

int vt_adapter_open_failed(char *errbuf, size_t errlen)
{
	int err = errno ? -errno : -EINVAL;

	snprintf(errbuf, errlen, "cannot open the BPF object: %s", strerror(-err));
	return err;
}

void vt_adapter_size_map(struct bpf_map *map, uint32_t user, uint32_t def)
{
	enum bpf_map_type t = bpf_map__type(map);

	bpf_map__set_max_entries(map, user ? user : def);
	if (t == BPF_MAP_TYPE_HASH || t == BPF_MAP_TYPE_PERCPU_HASH)
		bpf_map__set_map_flags(map, bpf_map__map_flags(map) | BPF_F_NO_PREALLOC);
}

void vt_adapter_before_load(struct vt_adapter *a, struct bpf_object *obj)
{
	a->multi = vt_uprobe_multi_prepare(obj);
	/* present in every object with a USDT program (bpf/usdt.bpf.h) */
	a->mlinks.specs = bpf_object__find_map_by_name(obj, "__bpf_usdt_specs");
}

int vt_adapter_load_failed(int err, char *errbuf, size_t errlen)
{
	if (permission_error(err))
		say_not_permitted(errbuf, errlen);
	else
		snprintf(errbuf, errlen, "cannot load the BPF programs: %s", strerror(-err));
	return err;
}

int vt_adapter_buffers(struct vt_adapter *a, size_t key_size, size_t val_size,
		       struct bpf_map *events, ring_buffer_sample_fn fn, void *ctx,
		       char *errbuf, size_t errlen)
{
	a->key_size = key_size;
	a->val_size = val_size;
	a->keys = malloc(key_size * VT_ADAPTER_BATCH_ROWS);
	a->vals = malloc(vt_percpu_stride(val_size) * (size_t)a->ncpus * VT_ADAPTER_BATCH_ROWS);
	a->merged = malloc(val_size);
	a->rb = events ? ring_buffer__new(bpf_map__fd(events), fn, ctx, NULL) : NULL;
	if (!a->keys || !a->vals || !a->merged || (events && !a->rb)) {
		snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* The one-line reason attaching what failed with err. */
static int attach_failed(int err, const char *what, const char *path, char *errbuf, size_t errlen)
{
	if (permission_error(err))
		say_not_permitted(errbuf, errlen);
	else
		snprintf(errbuf, errlen, "cannot attach %s in %s: %s", what, path, strerror(-err));
	return err;
}

/* Room for one more link, then keep link (or say why it failed). */
static int keep_link(struct vt_adapter *a, struct bpf_link *link, const char *what,
		     const char *path, char *errbuf, size_t errlen)
{
	struct bpf_link **links;
	int err = libbpf_get_error(link);

	if (err)
		return attach_failed(err, what, path, errbuf, errlen);
	links = realloc(a->links, (a->nlinks + 1) * sizeof(*links));
	if (!links) {
		bpf_link__destroy(link);
		return -ENOMEM;
	}
	a->links = links;
	a->links[a->nlinks++] = link;
	return 0;
}

int vt_adapter_attach(struct vt_adapter *a, struct bpf_program *prog, const char *path,
		      const char *probe, uint64_t cookie, char *errbuf, size_t errlen)
{
	LIBBPF_OPTS(bpf_usdt_opts, uopts, .usdt_cookie = cookie);
	char what[160];
	int err;

	snprintf(what, sizeof(what), "%s%s", a->attach_label, probe);
	if (!a->multi)
		return keep_link(a, bpf_program__attach_usdt(prog, a->pid, path, a->provider, probe,
							     &uopts),
				 what, path, errbuf, errlen);
	err = vt_uprobe_links_usdt(&a->mlinks, prog, path, a->provider, probe, cookie, a->pid);
	return err ? attach_failed(err, what, path, errbuf, errlen) : 0;
}

int vt_adapter_attach_uprobe(struct vt_adapter *a, struct bpf_program *prog, const char *path,
			     const char *func, uint64_t file_offset, uint64_t cookie,
			     uint64_t ref_ctr_offset, char *errbuf, size_t errlen)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uopts, .func_name = func, .bpf_cookie = cookie,
		    .ref_ctr_offset = (size_t)ref_ctr_offset);
	char what[160];
	int err;

	if (func)
		snprintf(what, sizeof(what), "a uprobe on %s", func);
	else
		snprintf(what, sizeof(what), "a uprobe at offset 0x%llx", (unsigned long long)file_offset);
	if (!a->multi)
		return keep_link(a, bpf_program__attach_uprobe_opts(prog, a->pid, path,
								    func ? 0 : file_offset, &uopts),
				 what, path, errbuf, errlen);
	err = vt_uprobe_links_uprobe(&a->mlinks, prog, path, func, file_offset, cookie,
				     ref_ctr_offset, a->pid);
	return err ? attach_failed(err, what, path, errbuf, errlen) : 0;
}

size_t vt_adapter_attached(const struct vt_adapter *a)
{
	return a->nlinks + a->mlinks.nfds;
}

int vt_adapter_attach_program(struct vt_adapter *a, struct bpf_program *prog, char *errbuf,
			      size_t errlen)
{
	return keep_link(a, bpf_program__attach(prog), bpf_program__name(prog),
			 bpf_program__section_name(prog), errbuf, errlen);
}

void vt_adapter_release(struct vt_adapter *a)
{
	vt_uprobe_links_close(&a->mlinks);
	for (size_t i = a->nlinks; i-- > 0;)
		bpf_link__destroy(a->links[i]);
	free(a->links);
	ring_buffer__free(a->rb);
	free(a->events.v);
	free(a->gc_longest.v);
	free(a->gc_fresh.v);
	free(a->keys);
	free(a->vals);
	free(a->merged);
}

void *vt_adapter_event_slot(struct vt_adapter *a)
{
	struct vt_event_log *l = &a->events;

	if (l->n == l->limit) {
		/* full: the newest replaces the oldest, so memory stays bounded */
		void *slot = (unsigned char *)l->v + l->size * l->head;

		l->head = (l->head + 1) % l->limit;
		l->dropped++;
		return slot;
	}
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 256;
		void *v;

		if (ncap > l->limit)
			ncap = l->limit;
		v = realloc(l->v, ncap * l->size);

		if (!v) {
			l->err = -ENOMEM;
			return NULL;
		}
		l->v = v;
		l->cap = ncap;
	}
	return (unsigned char *)l->v + l->size * l->n++;
}

void *vt_adapter_events(struct vt_adapter *a, size_t *n)
{
	struct vt_event_log *l = &a->events;

	if (l->head) {
		/* unroll the ring: oldest first, as the readers expect */
		size_t first = (l->n - l->head) * l->size;
		unsigned char *v = malloc(l->cap * l->size);

		if (!v) {
			*n = 0;
			return NULL;
		}
		memcpy(v, (unsigned char *)l->v + l->head * l->size, first);
		memcpy(v + first, l->v, l->head * l->size);
		free(l->v);
		l->v = v;
		l->head = 0;
	}
	*n = l->n;
	return l->v;
}

void vt_adapter_count_pause(struct vt_adapter *a, const struct vt_gc_pause *g)
{
	if (g->kind >= 0 && g->kind < VT_GC_KINDS)
		vt_gc_stats_add(&a->gc[g->kind], g);
	if (vt_gc_pauses_keep(&a->gc_longest, a->gc_keep, g) ||
	    vt_gc_pauses_keep(&a->gc_fresh, a->gc_keep, g))
		a->events.err = -ENOMEM;
}

int vt_adapter_drain(struct vt_adapter *a)
{
	ring_buffer__consume(a->rb);
	return a->events.err;
}

int vt_adapter_poll(struct vt_adapter *a, int timeout_ms)
{
	/* the BPF side submits without a wakeup (a wakeup costs the target
	 * microseconds per GC phase): wait out the slice, then drain */
	int n = ring_buffer__poll(a->rb, timeout_ms);

	if (n >= 0)
		n = ring_buffer__consume(a->rb);
	if (n < 0)
		return n;
	return a->events.err;
}

int vt_adapter_read_hash(struct vt_adapter *a, struct bpf_map *map, vt_row_fn fn, void *ctx)
{
	int fd = bpf_map__fd(map);
	size_t ksz = bpf_map__key_size(map), vsz = bpf_map__value_size(map);
	/* a per-CPU map gives a copy per CPU, a shared one (kept with atomic
	 * adds) one value */
	int ncpus = bpf_map__type(map) == BPF_MAP_TYPE_PERCPU_HASH ? a->ncpus : 1;
	size_t stride = ncpus > 1 ? vt_percpu_stride(vsz) * (size_t)ncpus : vsz;
	__u64 in_tok = 0, out_tok = 0;
	bool first = true;
	LIBBPF_OPTS(bpf_map_batch_opts, opts);

	if (ksz > a->key_size || vsz > a->val_size)
		return -EINVAL;
	for (;;) {
		__u32 count = VT_ADAPTER_BATCH_ROWS;
		int err = bpf_map_lookup_batch(fd, first ? NULL : &in_tok, &out_tok,
					       a->keys, a->vals, &count, &opts);

		if (err && err != -ENOENT)
			return err;
		for (__u32 i = 0; i < count; i++) {
			const unsigned char *k = (const unsigned char *)a->keys + i * ksz;
			const unsigned char *v = (const unsigned char *)a->vals + i * stride;
			int rerr;

			vt_percpu_merge(v, vsz, ncpus, a->merged, NULL, 0);
			rerr = fn(k, a->merged, ctx);
			if (rerr)
				return rerr;
		}
		if (err == -ENOENT)
			return 0;
		in_tok = out_tok;
		first = false;
	}
}

int vt_adapter_read_entry(struct vt_adapter *a, struct bpf_map *map, uint32_t key, void *out,
			  const size_t *max_offs, size_t nmax)
{
	size_t vsz = bpf_map__value_size(map);
	int err = bpf_map_lookup_elem(bpf_map__fd(map), &key, a->vals);

	if (err)
		return err;
	vt_percpu_merge(a->vals, vsz, a->ncpus, out, max_offs, nmax);
	return 0;
}

int vt_adapter_read_counters(struct vt_adapter *a, struct bpf_map *map, uint32_t n, uint64_t *c)
{
	for (uint32_t i = 0; i < n; i++) {
		int err = vt_adapter_read_entry(a, map, i, &c[i], NULL, 0);

		if (err)
			return err;
	}
	return 0;
}

int vt_adapter_add_losses(struct vt_profile *out, const char *const *names, const uint64_t *c,
			  size_t from, size_t to)
{
	for (size_t i = from; i < to; i++) {
		int err = vt_profile_add_lost(out, names[i], c[i]);

		if (err)
			return err;
	}
	return 0;
}

bool vt_usdt_has_probe(const struct vt_usdt_list *pl, const char *provider, const char *path,
		       const char *name)
{
	for (size_t i = 0; i < pl->n; i++)
		if (strcmp(pl->v[i].provider, provider) == 0 && strcmp(pl->v[i].name, name) == 0 &&
		    strcmp(pl->v[i].path, path) == 0)
			return true;
	return false;
}

const char *vt_usdt_probe_path(const struct vt_usdt_list *pl, const char *provider,
			       const char *name)
{
	for (size_t i = 0; pl && i < pl->n; i++)
		if (pl->v[i].provider && strcmp(pl->v[i].provider, provider) == 0 &&
		    pl->v[i].name && strcmp(pl->v[i].name, name) == 0)
			return pl->v[i].path;
	return NULL;
}

static int add_gc_stats(struct vt_adapter *a, struct vt_profile *out)
{
	for (int k = 0; k < VT_GC_KINDS; k++) {
		int err = vt_profile_add_gc_stats(out, k, &a->gc[k]);

		if (err)
			return err;
	}
	return 0;
}

int vt_adapter_pauses_counted(struct vt_adapter *a, struct bpf_map *map)
{
	static const size_t max_off[] = { offsetof(struct vt_pause_count, max_ns) };

	for (uint32_t k = 0; k < VT_GC_KINDS && k < VT_PAUSE_KINDS; k++) {
		struct vt_pause_count c;
		struct vt_gc_stats *g = &a->gc[k];
		int err = vt_adapter_read_entry(a, map, k, &c, max_off, 1);

		if (err)
			return err;
		if (c.count <= g->count)
			continue; /* the ring had them all */
		g->count = c.count;
		g->total_ns = c.total_ns;
		if (c.max_ns > g->max_ns)
			g->max_ns = c.max_ns;
		for (int b = 0; b < VT_HIST_BUCKETS; b++)
			g->hist[b] = b < VT_PAUSE_LOG2_BUCKETS ? c.hist[b] : 0;
	}
	return 0;
}

int vt_adapter_add_pauses(struct vt_adapter *a, struct vt_profile *out)
{
	int err = add_gc_stats(a, out);

	out->gc_pauses_limit = a->gc_keep;
	for (size_t i = 0; !err && i < a->gc_longest.n; i++)
		err = vt_profile_keep_gc_pause(out, &a->gc_longest.v[i]);
	for (size_t i = 0; !err && i < a->gc_fresh.n; i++)
		err = vt_gc_pauses_keep(&out->gc_fresh, a->gc_keep, &a->gc_fresh.v[i]);
	if (err)
		return err;
	a->gc_fresh.n = 0; /* the next collection's start */
	vt_gc_pauses_by_start(&out->gc_pauses);
	vt_gc_pauses_by_start(&out->gc_fresh);
	return 0;
}

void vt_key_string(char *dst, size_t dlen, const char *src, size_t slen)
{
	size_t n = strnlen(src, slen);

	if (n >= dlen)
		n = dlen - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}
