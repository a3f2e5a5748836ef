/*
 * vmtrace_live.c: the live heap from vmtrace.bpf.c's maps (live.bpf.h).
 *
 * live_objs holds one entry per tracked object, so it is read in batches
 * and folded by allocation key here: the entries are sorted by their key
 * pointers and each run becomes one row, named once. The ages are taken
 * against the monotonic clock now, the clock bpf_ktime_get_ns() reads.
 * Objects counted by a word in each (live_keys) come as one row per key,
 * and their ages as the provider's last snapshot (live_ages).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "runtimes/vmtrace/vmtrace_live.h"
#include "runtimes/vmtrace/vmtrace_maps.h"
#include "vmtrace.skel.h"

#define LIVE_BATCH 4096

struct objs {
	struct vt_live_obj *v;
	size_t n, cap;
};

static int read_objs(int fd, struct objs *o)
{
	__u64 *keys = malloc(LIVE_BATCH * sizeof(*keys));
	__u64 in_tok = 0, out_tok = 0;
	bool first = true;
	int err = 0;
	LIBBPF_OPTS(bpf_map_batch_opts, opts);

	if (!keys)
		return -ENOMEM;
	for (;;) {
		__u32 count = LIVE_BATCH;

		if (o->cap - o->n < LIVE_BATCH) {
			size_t cap = o->cap ? 2 * o->cap : 4 * LIVE_BATCH;
			struct vt_live_obj *v = realloc(o->v, cap * sizeof(*v));

			if (!v) {
				err = -ENOMEM;
				break;
			}
			o->v = v;
			o->cap = cap;
		}
		err = bpf_map_lookup_batch(fd, first ? NULL : &in_tok, &out_tok, keys, o->v + o->n,
					   &count, &opts);
		if (err && err != -ENOENT)
			break;
		o->n += count;
		if (err == -ENOENT) {
			err = 0;
			break;
		}
		in_tok = out_tok;
		first = false;
	}
	free(keys);
	return err;
}

static int key_cmp(const void *a, const void *b)
{
	const struct vt_live_obj *x = a, *y = b;

	if (x->klass != y->klass)
		return x->klass < y->klass ? -1 : 1;
	if (x->method != y->method)
		return x->method < y->method ? -1 : 1;
	if (x->site != y->site)
		return x->site < y->site ? -1 : 1;
	return 0;
}

static unsigned log2_bucket(uint64_t v)
{
	return v ? 63u - (unsigned)__builtin_clzll(v) : 0;
}

struct temp_ctx {
	struct vt_profile *out;
	vt_live_name_fn name;
	void *name_ctx;
};

static int temp_row(const void *key, const void *val, void *ctx_)
{
	const struct vt_alloc_key *k = key;
	const struct vt_live_temp *t = val;
	struct temp_ctx *c = ctx_;
	char f1[40], f2[40], f3[40];
	struct vt_live row = {
		.klass = (char *)c->name(c->name_ctx, k->klass, f1, sizeof(f1)),
		.method = (char *)c->name(c->name_ctx, k->method, f2, sizeof(f2)),
		.site = (char *)c->name(c->name_ctx, k->site, f3, sizeof(f3)),
		.temp_count = t->count,
		.temp_bytes = t->bytes,
	};

	return t->count ? vt_profile_add_live(c->out, &row) : 0;
}

static int key_row(const void *key, const void *val, void *ctx_)
{
	const struct vt_alloc_key *k = key;
	const struct vt_live_key *l = val;
	struct temp_ctx *c = ctx_;
	char f1[40], f2[40], f3[40];
	struct vt_live row;

	/* every object of the key died: nothing alive to show */
	if (l->count <= 0)
		return 0;
	row = (struct vt_live){
		.klass = (char *)c->name(c->name_ctx, k->klass, f1, sizeof(f1)),
		.method = (char *)c->name(c->name_ctx, k->method, f2, sizeof(f2)),
		.site = (char *)c->name(c->name_ctx, k->site, f3, sizeof(f3)),
		.count = (uint64_t)l->count,
		.objects = (uint64_t)l->count,
		.bytes = l->bytes > 0 ? (uint64_t)l->bytes : 0,
	};
	return vt_profile_add_live(c->out, &row);
}

/* The age snapshots, every process's (a plain hash: one value a key). */
static int read_ages(int fd, uint64_t hist[VT_HIST_BUCKETS])
{
	struct vt_live_ages ages;
	__u32 key, next;
	int err = bpf_map_get_next_key(fd, NULL, &next);

	while (!err) {
		key = next;
		/* -ENOENT: deleted under us, nothing to add */
		if (bpf_map_lookup_elem(fd, &key, &ages) == 0)
			for (int b = 0; b < VT_HIST_BUCKETS && b < VT_LOG2_BUCKETS; b++)
				hist[b] += ages.hist[b];
		err = bpf_map_get_next_key(fd, &key, &next);
	}
	return err == -ENOENT ? 0 : err;
}

int vt_live_collect(struct vt_adapter *a, struct vmtrace_bpf *skel, uint64_t max_tracked,
		    uint64_t temp_ns, vt_live_name_fn name, void *name_ctx, struct vt_profile *out)
{
	struct objs o = { 0 };
	struct vt_live_stats ls;
	struct timespec now_ts;
	struct temp_ctx tc = { out, name, name_ctx };
	__u32 zero = 0;
	uint64_t now;
	int err;

	out->live_info.on = true;
	out->live_info.max_tracked = max_tracked;
	out->live_info.temp_ns = temp_ns;
	if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.live_stats), &zero, &ls) == 0) {
		out->live_info.peak_bytes = ls.peak_bytes;
		out->live_info.peak_at_ns = (int64_t)ls.peak_ns; /* made relative by the session */
	}
	clock_gettime(CLOCK_MONOTONIC, &now_ts);
	now = (uint64_t)now_ts.tv_sec * 1000000000ull + (uint64_t)now_ts.tv_nsec;

	err = read_objs(bpf_map__fd(skel->maps.live_objs), &o);
	if (err)
		goto out;
	qsort(o.v, o.n, sizeof(*o.v), key_cmp);
	for (size_t i = 0; i < o.n;) {
		char f1[40], f2[40], f3[40];
		struct vt_live row = {
			.klass = (char *)name(name_ctx, o.v[i].klass, f1, sizeof(f1)),
			.method = (char *)name(name_ctx, o.v[i].method, f2, sizeof(f2)),
			.site = (char *)name(name_ctx, o.v[i].site, f3, sizeof(f3)),
		};
		size_t j = i;

		for (; j < o.n && key_cmp(&o.v[i], &o.v[j]) == 0; j++) {
			row.count += o.v[j].weight;
			row.bytes += o.v[j].size * o.v[j].weight;
			row.objects++;
			out->live_info.age_hist[log2_bucket(now > o.v[j].ts_ns ? now - o.v[j].ts_ns : 0)] +=
				o.v[j].weight;
		}
		err = vt_profile_add_live(out, &row);
		if (err)
			goto out;
		i = j;
	}
	err = vt_adapter_read_hash(a, skel->maps.live_temps, temp_row, &tc);
	if (!err)
		err = vt_adapter_read_hash(a, skel->maps.live_keys, key_row, &tc);
	if (!err)
		err = read_ages(bpf_map__fd(skel->maps.live_ages), out->live_info.age_hist);
out:
	free(o.v);
	return err;
}
