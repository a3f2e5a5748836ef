/* SPDX-License-Identifier: GPL-2.0 */
/*
 * live.bpf.h: the live heap of vmtrace.bpf.c (--live, docs/live.md).
 *
 * object__alloc puts the object's address into `live_objs` with its
 * allocation key, size, weight and time; object__free takes it out, and
 * counts it as temporary when it lived less than targ_temp_ns. What is left
 * at the end is what is still alive. The map is bounded (--live-max): an
 * object that finds it full is not tracked and is counted in Lost, and so
 * is its free later (it is then "untracked", like objects allocated before
 * tracing began). Live bytes and their peak are one shared counter, added
 * to atomically, so the peak is the true maximum of the sum.
 */
#ifndef VT_LIVE_BPF_H
#define VT_LIVE_BPF_H

const volatile bool targ_live = false;
const volatile __u64 targ_temp_ns = VT_LIVE_DEFAULT_TEMP_NS;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VT_LIVE_DEFAULT_MAX); /* --live-max, set before load */
	__type(key, __u64);
	__type(value, struct vt_live_obj);
} live_objs SEC(".maps");

VT_COUNT_MAP(live_temps, struct vt_alloc_key, struct vt_live_temp);

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vt_live_stats);
} live_stats SEC(".maps");

static __always_inline struct vt_live_stats *live_stats_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&live_stats, &zero);
}

static __always_inline void live_alloc(__u64 addr, __u64 klass, __u64 method, __u64 site, __u64 size,
				       __u64 weight)
{
	struct vt_live_obj o = { klass, method, site, 0, size, weight, bpf_ktime_get_ns() };
	struct vt_live_stats *ls;
	__s64 now;

	if (!targ_live || !addr)
		return;
	if (bpf_map_update_elem(&live_objs, &addr, &o, BPF_ANY)) {
		lose(VT_LOSS_LIVE_MAP_FULL);
		return;
	}
	ls = live_stats_get();
	if (!ls)
		return;
	now = __sync_add_and_fetch(&ls->live_bytes, (__s64)(size * weight));
	/* two CPUs may both pass the test: each stores a value that was the
	 * sum at its moment, so the peak kept is never more than the truth */
	if (now > 0 && (__u64)now > ls->peak_bytes) {
		ls->peak_bytes = (__u64)now;
		ls->peak_ns = o.ts_ns;
	}
}

static __always_inline void live_free(__u64 addr)
{
	struct vt_live_stats *ls = live_stats_get();
	struct vt_live_obj *o;
	__u64 bytes;

	if (!targ_live || !addr || !ls)
		return;
	o = bpf_map_lookup_elem(&live_objs, &addr);
	if (!o) {
		__sync_fetch_and_add(&ls->untracked_frees, 1);
		return;
	}
	bytes = o->size * o->weight;
	if (bpf_ktime_get_ns() - o->ts_ns < targ_temp_ns) {
		static const struct vt_live_temp zero;
		struct vt_alloc_key key = { o->klass, o->method, o->site };
		struct vt_live_temp *t;
		enum vt_got got;

		t = vt_get_or_insert(&live_temps, &key, &zero, &got);
		if (t) {
			t->count += o->weight;
			t->bytes += bytes;
		} else {
			lose(VT_LOSS_LIVE_TEMP_FULL);
		}
	}
	__sync_fetch_and_add(&ls->live_bytes, -(__s64)bytes);
	bpf_map_delete_elem(&live_objs, &addr);
}

#endif /* VT_LIVE_BPF_H */
