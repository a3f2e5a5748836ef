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

#include "common.bpf.h"
#include "vmtrace_maps.h"
#include "procs.bpf.h"

/* Set before load (skeleton rodata). */
const volatile __u32 targ_tgid = 0;     /* 0: no filter */
const volatile bool targ_use_ns = false; /* vmtrace runs in a child pid namespace */
const volatile __u64 targ_ns_dev = 0, targ_ns_ino = 0;
const volatile __u32 nr_cpus = 1;
const volatile bool native_stacks = false; /* --stack native: take the user stack per event */

/* A per-CPU counting map. Hash maps are not preallocated: preallocating
 * 16384 per-CPU elements per map costs tens of milliseconds at attach, and
 * elements are only ever allocated for a new key (rare); updates of existing
 * keys are in place. */
#define VT_COUNT_MAP(name, key_type, value_type)                \
	struct {                                                \
		__uint(type, BPF_MAP_TYPE_PERCPU_HASH);         \
		__uint(map_flags, BPF_F_NO_PREALLOC);           \
		__uint(max_entries, VT_DEFAULT_MAP_ENTRIES);    \
		__type(key, key_type);                          \
		__type(value, value_type);                      \
	} name SEC(".maps")

VT_COUNT_MAP(allocs, struct vt_alloc_key, struct vt_alloc_val);
VT_COUNT_MAP(frees, struct vt_pair_key, struct vt_count_val);
VT_COUNT_MAP(method_cache_resets, struct vt_pair_key, struct vt_count_val);
VT_COUNT_MAP(constant_cache_resets, struct vt_pair_key, struct vt_count_val);
VT_COUNT_MAP(global_serial_incs, struct vt_pair_key, struct vt_count_val);

/* pointer -> string, shared by all CPUs; read once per pointer */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 2 * VT_DEFAULT_MAP_ENTRIES);
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

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, __u32);              /* thread id */
	__type(value, struct vt_gc_start);
} gc_starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, VT_GC_RINGBUF_BYTES);
} gc_events SEC(".maps");

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

/* stack id -> frames, shared by all CPUs: each stack once, so an
 * allocation's key carries only the id (docs/stacks.md) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, VT_DEFAULT_MAP_ENTRIES);
	__type(key, __u64);
	__type(value, struct vt_stack_val);
} stacks SEC(".maps");

/* --stack native: user stacks by frame pointers, keyed by a hash of their
 * instruction pointers (a stack trace map's buckets collide and would lose
 * stacks), each once */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, VT_DEFAULT_MAP_ENTRIES);
	__type(key, __u64);
	__type(value, struct vt_native_stack);
} native_stack_traces SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vt_native_stack);
} native_scratch SEC(".maps");



/* the stack being read out of a STACK batch, per CPU */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vt_stack_val);
} stack_scratch SEC(".maps");

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

#include "live.bpf.h"

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
	__u32 zero = 0;
	struct vt_name *buf;
	long n, err;

	if (!vt_proc_raw(ptr) || bpf_map_lookup_elem(&names, &ptr) ||
	    bpf_map_lookup_elem(&long_names, &ptr))
		return 0;
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
	v->count += count;
	v->bytes += bytes;
	v->samples += samples;
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

#include "vm_walk.bpf.h"

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

#include "batch_walk.bpf.h"

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

/* A timeline record of a cache reset or a handled signal; the counts live in
 * the maps, so a full ring only costs the timeline (counted). */
static __always_inline struct vt_gc_event *timeline(__u32 type)
{
	struct vt_gc_event *ev = bpf_ringbuf_reserve(&gc_events, sizeof(*ev), 0);

	if (!ev) {
		lose(VT_LOSS_TIMELINE_RINGBUF_FULL);
		return NULL;
	}
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->type = type;
	ev->tid = vt_tid();
	ev->ts_ns = bpf_ktime_get_ns();
	return ev; /* the caller fills in the rest and submits */
}

SEC("usdt")
int BPF_USDT(on_method_cache_reset, void *klass, void *method, __u64 serial)
{
	struct vt_gc_event *ev;
	__u64 k = (__u64)klass, m = (__u64)method;

	if (!in_target() || (targ_all && !all_qualify(&k, &m, NULL)))
		return 0;
	count_pair(&method_cache_resets, k, m, VT_LOSS_MCR_MAP_FULL);
	ev = timeline(VT_RING_METHOD_CACHE_RESET);
	if (ev) {
		ev->heap_bytes = k;
		ev->alloc_total = m;
		ev->serial = serial;
		bpf_ringbuf_submit(ev, 0);
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(on_constant_cache_reset, void *name, __u64 serial)
{
	struct vt_gc_event *ev;
	__u64 n = (__u64)name;

	if (!in_target() || (targ_all && !all_qualify(&n, NULL, NULL)))
		return 0;
	count_pair(&constant_cache_resets, n, 0, VT_LOSS_CCR_MAP_FULL);
	ev = timeline(VT_RING_CONSTANT_CACHE_RESET);
	if (ev) {
		ev->heap_bytes = n;
		ev->serial = serial;
		bpf_ringbuf_submit(ev, 0);
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(on_global_serial_inc, __u64 serial, void *reason)
{
	struct vt_stats *st;
	__u64 r = (__u64)reason;

	if (!in_target() || (targ_all && !all_qualify(&r, NULL, NULL)))
		return 0;
	st = my_stats();
	if (st && serial > st->last_serial)
		st->last_serial = serial;
	count_pair(&global_serial_incs, r, 0, VT_LOSS_GSI_MAP_FULL);
	return 0;
}

SEC("usdt")
int BPF_USDT(on_gc_begin, int kind, __u64 heap_bytes)
{
	struct vt_gc_start start = { .start_ns = bpf_ktime_get_ns(), .kind = kind };
	__u32 tid = vt_tid();

	if (!in_target())
		return 0;
	if (bpf_map_update_elem(&gc_starts, &tid, &start, BPF_ANY))
		lose(VT_LOSS_GC_THREAD_MAP_FULL);
	return 0;
}

/* Bytes allocated so far, all CPUs: a collection is rare, so summing the
 * per-CPU counters here costs nothing where it matters. */
static __always_inline __u64 alloc_total(void)
{
	__u64 total = 0;
	__u32 zero = 0;

	for (__u32 cpu = 0; cpu < VT_MAX_CPUS && cpu < nr_cpus; cpu++) {
		struct vt_stats *st = bpf_map_lookup_percpu_elem(&stats, &zero, cpu);

		if (st)
			total += st->alloc_bytes;
	}
	return total;
}

SEC("usdt")
int BPF_USDT(on_gc_end, int kind, __u64 heap_bytes)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tid = vt_tid();
	struct vt_gc_start *start;
	struct vt_gc_event *ev;
	struct vt_stats *st;

	if (!in_target())
		return 0;
	st = my_stats();
	if ((__u32)kind >= VT_GC_KIND_SLOTS)
		lose(VT_LOSS_BAD_GC_KIND);
	else if (st)
		st->gc_collections[(__u32)kind & 3] += 1; /* the mask keeps the verifier sure */

	start = bpf_map_lookup_elem(&gc_starts, &tid);
	if (!start) {
		lose(VT_LOSS_GC_NO_BEGIN);
		return 0;
	}
	ev = bpf_ringbuf_reserve(&gc_events, sizeof(*ev), 0);
	if (!ev) {
		lose(VT_LOSS_GC_RINGBUF_FULL);
	} else {
		ev->type = VT_RING_GC;
		ev->tid = tid;
		ev->ts_ns = start->start_ns;
		ev->kind = kind;
		ev->pad = 0;
		ev->duration_ns = now - start->start_ns;
		ev->heap_bytes = heap_bytes;
		ev->alloc_total = alloc_total();
		ev->serial = 0;
		bpf_ringbuf_submit(ev, 0);
	}
	bpf_map_delete_elem(&gc_starts, &tid);
	return 0;
}

static __always_inline struct vt_signal_val *signal_slot(int signo)
{
	__u32 key = (__u32)signo;

	if (signo < 0 || signo >= VT_SIGNALS) {
		lose(VT_LOSS_BAD_SIGNO);
		return NULL;
	}
	return bpf_map_lookup_elem(&signals, &key);
}

SEC("usdt")
int BPF_USDT(on_signal_received, int signo)
{
	struct vt_signal_val *s;

	if (!in_target())
		return 0;
	s = signal_slot(signo);
	if (s)
		s->received += 1;
	return 0;
}

static __always_inline __u32 log2_bucket(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) r += 1;
	return r;
}

SEC("usdt")
int BPF_USDT(on_signal_handled, int signo, __u64 latency_ns)
{
	struct vt_gc_event *ev;
	struct vt_signal_val *s;
	__u32 b;

	if (!in_target())
		return 0;
	s = signal_slot(signo);
	if (!s)
		return 0;
	s->handled += 1;
	s->latency_total_ns += latency_ns;
	if (latency_ns > s->latency_max_ns)
		s->latency_max_ns = latency_ns;
	b = log2_bucket(latency_ns);
	s->hist[b & (VT_LOG2_BUCKETS - 1)] += 1; /* b < 64 already; the mask tells the verifier */
	ev = timeline(VT_RING_SIGNAL);
	if (ev) {
		ev->kind = signo;
		ev->duration_ns = latency_ns;
		bpf_ringbuf_submit(ev, 0);
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(on_bus_dropped, int event_kind, __u64 total_dropped)
{
	struct vt_stats *st;

	if (!in_target())
		return 0;
	st = my_stats();
	if (st && total_dropped > st->bus_dropped_total)
		st->bus_dropped_total = total_dropped;
	return 0;
}

/* Never does anything: holding this probe's semaphore is what tells the
 * provider that a consumer wants sampled allocations (docs/sampling.md). */
SEC("usdt")
int BPF_USDT(on_sample_armed, __u64 period_bytes)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
