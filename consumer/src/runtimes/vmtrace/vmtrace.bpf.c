// SPDX-License-Identifier: GPL-2.0
/*
 * vmtrace.bpf.c: the BPF side of the vmtrace provider's adapter.
 *
 * One program per probe of probes/vmtrace.d that the report uses. Every
 * counter is per CPU (no cross-CPU cache line traffic on the hot path);
 * userspace sums the CPUs when it reads. The hot path, object__alloc, is
 * one hash lookup keyed by three pointers plus one per-CPU array lookup;
 * strings are read only when a key is new (see vmtrace_maps.h). GC pauses
 * go through a ring buffer, one record per collection, so userspace has
 * every pause and p50/p99 are exact. Whatever cannot be counted where it
 * belongs is counted in `losses`.
 */
/* UAPI headers, not vmlinux.h: nothing here reads a kernel structure, and
 * without CO-RE relocations libbpf need not load and parse the kernel's BTF
 * (tens of milliseconds of attach latency). */
#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/errno.h>
#include <asm/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

#include "runtimes/common.bpf.h"
#include "runtimes/vmtrace/vmtrace_maps.h"
#include "runtimes/procs.bpf.h"

/* Set before load (skeleton rodata). */
const volatile __u32 targ_tgid = 0;     /* 0: no filter */
const volatile bool targ_use_ns = false; /* vmtrace runs in a child pid namespace */
const volatile __u64 targ_ns_dev = 0, targ_ns_ino = 0;
const volatile __u32 nr_cpus = 1;
const volatile bool native_stacks = false; /* --stack native: take the user stack per event */
const volatile bool targ_events = true;    /* timeline records of cache resets and signals */

/* A per-CPU counting map. Hash maps are not preallocated: preallocating
 * 16384 per-CPU elements per map costs tens of milliseconds at attach, and
 * elements are only ever allocated for a new key (rare); updates of existing
 * keys are in place. */
#define VT_COUNT_MAP(name, key_type, value_type)                \
	struct {                                                \
		__uint(type, BPF_MAP_TYPE_PERCPU_HASH);         \
		__uint(map_flags, BPF_F_NO_PREALLOC);           \
		__uint(max_entries, VT_COUNT_MAP_DEFAULT);    \
		__type(key, key_type);                          \
		__type(value, value_type);                      \
	} name SEC(".maps")

/* Allocations by key: one shared map, added to atomically. A real
 * program has thousands of keys, and a new key in a per-CPU map costs a
 * per-CPU allocation (about 50 us measured here on rdoc: 3000 new keys held
 * the batch flush for 160 ms); a shared element is a plain allocation. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, VT_COUNT_MAP_DEFAULT);
	__type(key, struct vt_alloc_key);
	__type(value, struct vt_alloc_val);
} allocs SEC(".maps");
VT_COUNT_MAP(frees, struct vt_pair_key, struct vt_count_val);
VT_COUNT_MAP(method_cache_resets, struct vt_pair_key, struct vt_count_val);
VT_COUNT_MAP(constant_cache_resets, struct vt_pair_key, struct vt_count_val);
VT_COUNT_MAP(global_serial_incs, struct vt_pair_key, struct vt_count_val);

/* pointer -> string, shared by all CPUs; read once per pointer */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 2 * VT_COUNT_MAP_DEFAULT);
	__type(key, __u64);
	__type(value, struct vt_name);
} names SEC(".maps");

/* pointer -> a name of VT_NAME_MAX bytes or more, read whole (up to
 * VT_LONG_NAME_MAX - 2 bytes) while the target runs: a long name then
 * survives a target that exits before userspace could read it */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, VT_LONG_NAMES);
	__type(key, __u64);
	__type(value, struct vt_long_name);
} long_names SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vt_long_name);
} long_scratch SEC(".maps");

/* pointers the kernel could not read: userspace reads them from
 * /proc/PID/mem while the target lives, then deletes them here */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u8);
} unresolved SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vt_name);
} scratch SEC(".maps");

/* Pointers known to be in names or long_names, direct-mapped by a hash of
 * the pointer: each frame of a new stack names two texts, a few thousand
 * texts a million times, and an array slot is read without the hash
 * map's lookup. Only pointers in a map go in (neither map forgets one), so
 * a hit is never wrong; CPUs writing one slot at once only cost a miss. */
#define VT_NAMES_SEEN 16384
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, VT_NAMES_SEEN);
	__type(key, __u32);
	__type(value, __u64);
} names_seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, __u32);              /* thread id */
	__type(value, struct vt_gc_start);
} gc_starts SEC(".maps");

VT_RINGBUF(gc_events, VT_GC_RINGBUF_BYTES);

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, VT_SIGNALS);
	__type(key, __u32);
	__type(value, struct vt_signal_val);
} signals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vt_stats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, VT_LOSS__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} losses SEC(".maps");

/* batches copied out of the target, one per CPU (a uprobe program runs to
 * its end on one CPU) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vt_batch_buf);
} batch_scratch SEC(".maps");

/* stack id -> where its frames are, shared by all CPUs: each stack once,
 * so an allocation's key carries only the id (docs/stacks.md) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, VT_COUNT_MAP_DEFAULT);
	__type(key, __u64);
	__type(value, struct vt_stack_ref);
} stacks SEC(".maps");

/* every stack's frames, one after another (vt_stack_ref); userspace maps
 * it to read them. One entry unless stacks are asked for. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vt_stack_frame);
} stack_frames SEC(".maps");

const volatile __u32 stack_frames_max = 1; /* stack_frames' entries */
__u64 stack_frames_used;                    /* ... taken (may pass the max: then full) */

/* --stack native: user stacks by frame pointers, keyed by a hash of their
 * instruction pointers (a stack trace map's buckets collide and would lose
 * stacks), each once */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, VT_COUNT_MAP_DEFAULT);
	__type(key, __u64);
	__type(value, struct vt_native_stack);
} native_stack_traces SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vt_native_stack);
} native_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, VT_BATCH_KINDS);
	__type(key, __u32);
	__type(value, struct vt_batch_state);
} batch_state SEC(".maps");

static __always_inline void lose(enum vt_loss what)
{
	vt_count(&losses, what, 1);
}

static __always_inline void lose_n(enum vt_loss what, __u64 n)
{
	vt_count(&losses, what, n);
}

#include "runtimes/vmtrace/live.bpf.h"

/* record --all (called under `if (targ_all)`, one rodata test per event
 * for one process): the pointers a, b, c (NULL: none) qualified by the
 * calling process's slot (procs_maps.h). false, with the event lost, when
 * the process table is full or a pointer is above the slot bits. */
static __always_inline bool all_qualify(__u64 *a, __u64 *b, __u64 *c)
{
	__u64 slot = vt_proc_slot();

	if (slot == VT_PROC_NONE) {
		lose(VT_LOSS_PROC_FULL);
		return false;
	}
	if (vt_proc_too_high(*a) || (b && vt_proc_too_high(*b)) || (c && vt_proc_too_high(*c))) {
		lose(VT_LOSS_PROC_HIGH_PTR);
		return false;
	}
	*a = vt_proc_qual(*a, slot);
	if (b)
		*b = vt_proc_qual(*b, slot);
	if (c)
		*c = vt_proc_qual(*c, slot);
	return true;
}

static __always_inline struct vt_stats *my_stats(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&stats, &zero);
}

/* The uprobes are attached for the target's pid already; this keeps a
 * program that some other tracer shares the file with honest. */
static __always_inline bool in_target(void)
{
	if (!targ_tgid)
		return true;
	if (targ_use_ns) {
		struct bpf_pidns_info ns = {};

		if (bpf_get_ns_current_pid_tgid(targ_ns_dev, targ_ns_ino, &ns, sizeof(ns)))
			return false;
		return ns.tgid == targ_tgid;
	}
	return (bpf_get_current_pid_tgid() >> 32) == targ_tgid;
}

static __always_inline void queue_unresolved(__u64 ptr)
{
	__u8 one = 1;

	if (bpf_map_update_elem(&unresolved, &ptr, &one, BPF_ANY))
		lose(VT_LOSS_UNRESOLVED_FULL);
}

/* Copy the string at ptr into `names` unless it is there already. */
static __noinline int resolve_name(__u64 ptr)
{
	__u32 zero = 0, slot = (__u32)((ptr * 0x9E3779B97F4A7C15ull) >> 50) & (VT_NAMES_SEEN - 1);
	__u64 *seen = bpf_map_lookup_elem(&names_seen, &slot);
	struct vt_name *buf;
	long n, err;

	if (!vt_proc_raw(ptr) || (seen && *seen == ptr))
		return 0;
	if (bpf_map_lookup_elem(&names, &ptr) || bpf_map_lookup_elem(&long_names, &ptr)) {
		if (seen)
			*seen = ptr;
		return 0;
	}
	buf = bpf_map_lookup_elem(&scratch, &zero);
	if (!buf)
		return 0;
	n = bpf_probe_read_user_str(buf->s, sizeof(buf->s), (const void *)vt_proc_raw(ptr));
	if (n < 0) {
		/* e.g. -EFAULT: a page the target never touched */
		lose(VT_LOSS_STR_FAULT);
		queue_unresolved(ptr);
		return 0;
	}
	if (n >= VT_NAME_MAX) {
		struct vt_long_name *big = bpf_map_lookup_elem(&long_scratch, &zero);

		lose(VT_LOSS_STR_LONG);
		n = big ? bpf_probe_read_user_str(big->s, sizeof(big->s),
						  (const void *)vt_proc_raw(ptr)) : -1;
		if (n > 0) {
			err = bpf_map_update_elem(&long_names, &ptr, big, BPF_NOEXIST);
			/* a full buffer may hold only the start: userspace reads
			 * the rest while it can, and has the start if it cannot */
			if ((!err || err == -EEXIST) && n < VT_LONG_NAME_MAX)
				return 0;
		}
		queue_unresolved(ptr);
		return 0;
	}
	err = bpf_map_update_elem(&names, &ptr, buf, BPF_NOEXIST);
	if (err && err != -EEXIST) {
		lose(VT_LOSS_NAMES_MAP_FULL);
		queue_unresolved(ptr);
	} else if (seen) {
		*seen = ptr;
	}
	return 0;
}

/* Count one event under (a, b) in a pair-keyed counting map, created
 * (zeroed) on first sight, when its names are read; b == 0 names nothing.
 * NULL, with `full` lost, when the map has no room. */
static __always_inline struct vt_count_val *count_pair(void *map, __u64 a, __u64 b, enum vt_loss full)
{
	static const struct vt_count_val zero;
	struct vt_pair_key key = { a, b };
	struct vt_count_val *v;
	enum vt_got got;

	v = vt_get_or_insert(map, &key, &zero, &got);
	if (!v) {
		lose(full);
		return NULL;
	}
	if (got == VT_GOT_NEW) {
		resolve_name(a);
		if (b)
			resolve_name(b);
	}
	v->count += 1;
	return v;
}

/* Room for a new stack's depth frames in stack_frames: the first's
 * index, or -1 when it is full (counted). */
static __always_inline __s64 stack_reserve(__u32 depth)
{
	__u64 first = __sync_fetch_and_add(&stack_frames_used, depth);

	if (first + depth > stack_frames_max) {
		lose(VT_LOSS_STACK_MAP_FULL);
		return -1;
	}
	return (__s64)first;
}

static __always_inline void stack_frame_put(__u64 at, const struct vt_stack_frame *f)
{
	__u32 k = (__u32)at;
	struct vt_stack_frame *to = bpf_map_lookup_elem(&stack_frames, &k);

	if (to)
		*to = *f;
}

/* A new stack's frames are in place from first: name it (once; a stack
 * another CPU named meanwhile keeps that one's frames). */
static __always_inline void stack_publish(__u64 id, __u32 depth, __u32 flags, __u64 first)
{
	struct vt_stack_ref r = { depth, flags, (__u32)first, 0 };
	long err = bpf_map_update_elem(&stacks, &id, &r, BPF_NOEXIST);

	if (err && err != -EEXIST)
		lose(VT_LOSS_STACK_MAP_FULL);
}

/* Add one allocation key's counts (a per-event hit, or a batch record). */
static __always_inline void add_alloc(__u64 klass, __u64 method, __u64 site, __u64 stack,
				      __u64 count, __u64 bytes, __u64 samples)
{
	static const struct vt_alloc_val zero;
	struct vt_alloc_key key = { klass, method, site, stack };
	struct vt_alloc_val *v;
	struct vt_stats *st;
	enum vt_got got;

	v = vt_get_or_insert(&allocs, &key, &zero, &got);
	if (!v) {
		lose_n(VT_LOSS_ALLOC_MAP_FULL, samples);
		return;
	}
	if (got == VT_GOT_NEW) {
		resolve_name(key.klass);
		resolve_name(key.method);
		resolve_name(key.site);
	}
	__sync_fetch_and_add(&v->count, count);
	__sync_fetch_and_add(&v->bytes, bytes);
	__sync_fetch_and_add(&v->samples, samples);
	st = my_stats();
	if (st)
		st->alloc_bytes += bytes;
}

/* Add one free key's counts. */
static __always_inline void add_free(__u64 klass, __u64 count, __u64 bytes)
{
	static const struct vt_count_val zero;
	struct vt_pair_key key = { klass, 0 };
	struct vt_count_val *v;
	enum vt_got got;

	v = vt_get_or_insert(&frees, &key, &zero, &got);
	if (!v) {
		lose_n(VT_LOSS_FREE_MAP_FULL, count);
		return;
	}
	if (got == VT_GOT_NEW)
		resolve_name(klass);
	v->count += count;
	v->bytes += bytes;
}

/* The id of the calling thread's user stack (kept in native_stack_traces),
 * or 0 when it could not be taken (counted). */
static __noinline __u64 native_stack_id(void *ctx)
{
	__u64 h = 0x9E3779B97F4A7C15ull, id;
	struct vt_native_stack *s;
	__u32 zero = 0;
	long err;

	s = bpf_map_lookup_elem(&native_scratch, &zero);
	if (!s)
		return 0;
	/* the kernel zeroes what the stack does not fill */
	if (bpf_get_stack(ctx, s->ip, sizeof(s->ip), BPF_F_USER_STACK) <= 0) {
		lose(VT_LOSS_NATIVE_STACK_FAIL);
		return 0;
	}
	for (int i = 0; i < VT_NATIVE_DEPTH; i++)
		h = (h ^ s->ip[i]) * 0xC2B2AE3D27D4EB4Full;
	id = VT_NATIVE_STACK | (h >> 2);  /* VT_BOTH_STACK clear */
	if (!bpf_map_lookup_elem(&native_stack_traces, &id)) {
		err = bpf_map_update_elem(&native_stack_traces, &id, s, BPF_NOEXIST);
		if (err && err != -EEXIST)
			lose(VT_LOSS_STACK_MAP_FULL);
	}
	return id;
}

#include "runtimes/vmtrace/vm_walk.bpf.h"

SEC("usdt")
int BPF_USDT(on_alloc, void *klass, void *method, __u64 size, void *site, __u64 weight, void *addr)
{
	__u64 stack = 0, k = (__u64)klass, m = (__u64)method, s = (__u64)site;

	if (!in_target() || (targ_all && !all_qualify(&k, &m, &s)))
		return 0;
	if (vm_walk)
		stack = both_stack_id(vm_stack_id(), native_stack_id(ctx));
	else if (native_stacks)
		stack = native_stack_id(ctx);
	add_alloc(k, m, s, stack, weight, size * weight, 1);
	live_alloc((__u64)addr, (__u64)klass, (__u64)method, (__u64)site, size, weight,
		   bpf_ktime_get_ns());
	return 0;
}

#include "runtimes/vmtrace/batch_walk.bpf.h"

/* live__batch: allocations and frees with their addresses, in the order
 * their thread made them (vmtrace/batch.h, kind VMTRACE_BATCH_LIVE). */
SEC("usdt")
int BPF_USDT(on_live_batch, void *batch, __u64 len)
{
	struct live_walk w = {};
	struct vt_batch_hdr *h;
	__u32 zero = 0;

	if (!in_target())
		return 0;
	w.b = (char *)bpf_map_lookup_elem(&batch_scratch, &zero);
	if (!w.b)
		return 0;
	if (len < sizeof(struct vt_batch_hdr) || len > VT_BATCH_MAX_BYTES) {
		lose(VT_LOSS_BATCH_BAD);
		return 0;
	}
	if (bpf_probe_read_user(w.b, len, batch)) {
		lose(VT_LOSS_BATCH_FAULT);
		return 0;
	}
	h = (struct vt_batch_hdr *)w.b;
	if (h->magic != VT_BATCH_MAGIC || h->version < VT_BATCH_VERSION || h->kind != VT_BATCH_LIVE ||
	    h->record_size != sizeof(struct vt_live_rec) ||
	    sizeof(*h) + (__u64)h->count * sizeof(struct vt_live_rec) > len) {
		lose(VT_LOSS_BATCH_BAD);
		return 0;
	}
	if (h->lost)
		lose_n(VT_LOSS_LIVE_PROVIDER, h->lost);
	host_uncounted(h);
	w.temps = bpf_map_lookup_elem(&live_temp_scratch, &zero);
	bpf_loop(h->count, live_record, &w, 0);
	live_temp_flush_all(w.temps);
	live_account(w.sum, w.max_rise, w.max_ns);
	return 0;
}

SEC("usdt")
int BPF_USDT(on_free, void *klass, __u64 size, void *addr)
{
	struct vt_count_val *v;
	__u64 k = (__u64)klass;

	if (!in_target() || (targ_all && !all_qualify(&k, NULL, NULL)))
		return 0;
	v = count_pair(&frees, k, 0, VT_LOSS_FREE_MAP_FULL);
	if (v)
		v->bytes += size;
	live_free((__u64)addr, bpf_ktime_get_ns());
	return 0;
}

#include "runtimes/vmtrace/vm_events.bpf.h"

char LICENSE[] SEC("license") = "GPL";
