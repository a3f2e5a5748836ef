// SPDX-License-Identifier: GPL-2.0
/*
 * python.bpf.c: CPython's own USDT probes (provider "python").
 *
 * function__entry / function__return (file, function, line): counted per
 * (file, function), and per thread a stack depth so a return without its
 * entry (a frame entered before attach, or an entry CPython never fired)
 * is told apart. CPython 3.11 fires function__entry only while a profile or
 * trace function is set (CPython gh-98894); function__return always fires.
 *
 * gc__start(generation) / gc__done(collected): timed per thread; each
 * collection is counted per generation and streamed as one pause.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/usdt.bpf.h>
#include "common.bpf.h"
#include "python_maps.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 10240); /* --map-entries */
	__type(key, struct vt_py_func_key);
	__type(value, struct vt_py_func_val);
} funcs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __s64);
} depths SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vt_py_func_key);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, VT_PY_COUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct vt_py_gc_start {
	__u64 start;
	__u32 generation;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct vt_py_gc_start);
} gc_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 18);
} gc_events SEC(".maps");

static __always_inline void add(__u32 slot, __u64 n)
{
	vt_count(&counters, slot, n);
}

static __always_inline void copy_str(char *dst, __u32 size, const char *src)
{
	vt_copy_str(dst, size, src, &counters, VT_PY_L_UNREADABLE, VT_PY_L_TRUNCATED);
}

static __always_inline void count_func(const char *file, const char *func, bool entry)
{
	__u32 zero = 0;
	struct vt_py_func_key *key = bpf_map_lookup_elem(&scratch, &zero);
	struct vt_py_func_val init = {}, *v;
	enum vt_got got;

	if (!key)
		return;
	__builtin_memset(key, 0, sizeof(*key));
	copy_str(key->file, sizeof(key->file), file);
	copy_str(key->func, sizeof(key->func), func);
	v = vt_get_or_insert(&funcs, key, &init, &got);
	if (!v) {
		if (got == VT_GOT_REFUSED)
			add(VT_PY_L_MAP_FULL, 1);
		return;
	}
	if (entry)
		v->entries++;
	else
		v->returns++;
}

SEC("usdt")
int BPF_USDT(py_function_entry, const char *file, const char *func)
{
	__u32 tid = vt_tid();
	__s64 one = 1, *d;

	add(VT_PY_C_ENTRIES, 1);
	d = bpf_map_lookup_elem(&depths, &tid);
	if (d)
		(*d)++;
	else
		bpf_map_update_elem(&depths, &tid, &one, BPF_ANY);
	count_func(file, func, true);
	return 0;
}

SEC("usdt")
int BPF_USDT(py_function_return, const char *file, const char *func)
{
	__u32 tid = vt_tid();
	__s64 *d;

	add(VT_PY_C_RETURNS, 1);
	d = bpf_map_lookup_elem(&depths, &tid);
	if (d && *d > 0)
		(*d)--;
	else
		add(VT_PY_C_UNMATCHED, 1);
	count_func(file, func, false);
	return 0;
}

SEC("usdt")
int BPF_USDT(py_gc_start, int generation)
{
	__u32 tid = vt_tid();
	struct vt_py_gc_start s = {
		.start = bpf_ktime_get_ns(),
		.generation = generation,
	};

	if (bpf_map_update_elem(&gc_start, &tid, &s, BPF_ANY))
		add(VT_PY_L_GC_UNPAIRED, 1);
	return 0;
}

SEC("usdt")
int BPF_USDT(py_gc_done, long collected)
{
	__u32 tid = vt_tid();
	__u64 now = bpf_ktime_get_ns();
	struct vt_py_gc_start *s = bpf_map_lookup_elem(&gc_start, &tid);
	struct vt_py_gc_event *e;
	__u32 gen;

	if (!s || !s->start) {
		add(VT_PY_L_GC_UNPAIRED, 1);
		return 0;
	}
	gen = s->generation;
	if (gen >= VT_PY_GENS)
		gen = VT_PY_GENS - 1;
	add(VT_PY_C_GC0 + gen, 1);
	if (collected > 0)
		add(VT_PY_C_COLLECTED, collected);
	e = bpf_ringbuf_reserve(&gc_events, sizeof(*e), 0);
	if (e) {
		e->generation = gen;
		e->pad = 0;
		e->duration_ns = now - s->start;
		e->collected = collected > 0 ? collected : 0;
		e->end_ns = now;
		/* no wakeup: poll() drains the buffer on its own clock */
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	} else {
		add(VT_PY_L_GC_BUF_FULL, 1);
	}
	s->start = 0;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
