// SPDX-License-Identifier: GPL-2.0
/*
 * jvm.bpf.c: HotSpot's own USDT probes (libjvm.so, provider "hotspot").
 *
 * Allocations (-XX:+DTraceAllocProbes): object__alloc(tid, name, name_len,
 * size) counted per class. The size comes from the object itself, read by
 * a uprobe on the entry of SharedRuntime::dtrace_object_alloc_base, the
 * function that fires object__alloc, and handed to the probe through a
 * per-thread slot: HotSpot 17's interpreter, C1 and C2 fast paths call
 * that function without its size argument, so the probe's size is
 * whatever the register held (runtime_jvm.c tells the whole story).
 *
 * Methods (-XX:+DTraceMethodProbes): method__entry(tid, class, class_len,
 * method, method_len, sig, sig_len) counted per (class, method); entries
 * and returns also keep each thread's Java frames, so an allocation is
 * counted under the method it ran in.
 *
 * GC: gc__begin(full) / gc__end timed per thread (the VM thread runs each
 * collection); each is counted and streamed as one pause.
 *
 * record --all (targ_all): a key's addresses carry their process's slot
 * (procs.bpf.h), so two JVMs' classes at one address stay two rows, each
 * named from its own process.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "runtimes/common.bpf.h"
#include "runtimes/pauses.bpf.h"
#include "runtimes/procs.bpf.h"
#include "runtimes/jvm/jvm_maps.h"

/* Set before load (runtime_jvm.c). */
const volatile struct vt_hs_layout layout = {};
/* object__alloc's size argument is the object's (JDK 18+) */
const volatile bool size_arg_right = false;

VT_COUNTING_MAP(allocs, BPF_MAP_TYPE_PERCPU_HASH, struct vt_hs_alloc_key, struct vt_hs_alloc_val);

VT_COUNTING_MAP(methods, BPF_MAP_TYPE_PERCPU_HASH, struct vt_hs_method_key, struct vt_hs_method_val);

/* The size of the object whose object__alloc is about to fire, per thread
 * (the thread can migrate between the two traps). 0: none. */
VT_MAP(pending_size, BPF_MAP_TYPE_HASH, __u32, __u64, 16384);

/* The name behind each address in an allocation key (jvm_maps.h),
 * written once, when a row with that address is first made. */
VT_COUNTING_MAP(names, BPF_MAP_TYPE_HASH, __u64, struct vt_hs_name);

VT_MAP(name_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct vt_hs_name, 1);

/* Each Java thread's frames (method__entry pushes, method__return pops). */
VT_MAP(stacks, BPF_MAP_TYPE_HASH, __u32, struct vt_hs_stack, 4096);

VT_MAP(empty_stack, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct vt_hs_stack, 1); /* zeroes: a new thread's stack */

VT_MAP(counters, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, __u64, VT_HS_COUNTERS);

VT_MAP(gc_start, BPF_MAP_TYPE_HASH, __u32, __u64, 1024);

VT_RINGBUF(gc_events, 1 << 18);

static __always_inline void add(__u32 slot, __u64 n)
{
	vt_count(&counters, slot, n);
}

/* Copy a HotSpot name (pointer and length, no NUL) into dst[size]; dst
 * starts zeroed, so the copy is NUL-terminated. size is a power of two.
 * quiet: a failed read is not counted (its caller counts what it costs). */
static __always_inline void copy_name(char *dst, __u32 size, const char *src, long len,
				      bool quiet)
{
	__u32 n;

	if (!src || len <= 0)
		return;
	if (len > size - 1) {
		add(VT_HS_L_TRUNCATED, 1);
		len = size - 1;
	}
	n = (__u32)len & (size - 1);
	if (bpf_probe_read_user(dst, n, src)) {
		dst[0] = '\0';
		if (!quiet)
			add(VT_HS_L_UNREADABLE, 1);
	}
}

/* The size in bytes of the object at oop, from its class's layout helper
 * (HotSpot's Klass::layout_helper encoding); 0 when it cannot be read. */
static __always_inline __u64 object_size(__u64 bias, const void *oop, __u64 *klass_out)
{
	/* CompressedKlassPointers::_narrow_klass: {base, shift} */
	struct { __u64 base; __s32 shift; __s32 pad; } nk;
	/* the class word and, for an array, its length right after it */
	struct { __u32 narrow; __s32 length; } word = {};
	__u64 klass = 0;
	__s32 lh = 0, length = -1;
	__u8 compressed = 0;

	if (bpf_probe_read_user(&compressed, 1, (void *)(bias + layout.compressed_vaddr)))
		return 0;
	if (compressed) {
		/* one read each: reads, not the arithmetic, are what a trap pays for */
		if (bpf_probe_read_user(&word, 8, oop + layout.klass_offset) ||
		    bpf_probe_read_user(&nk, 12, (void *)(bias + layout.narrow_klass_vaddr)))
			return 0;
		klass = nk.base + ((__u64)word.narrow << (nk.shift & 63));
		length = word.length;
	} else if (bpf_probe_read_user(&klass, 8, oop + layout.klass_offset)) {
		return 0;
	}
	*klass_out = klass;
	if (!klass || bpf_probe_read_user(&lh, 4, (void *)(klass + layout.layout_helper_offset)))
		return 0;
	if (lh > 0)     /* an instance: its size, bit 0 the slow-path flag */
		return (__u64)(lh & ~7);
	if (lh == 0)
		return 0;
	/* an array: header bytes in bits 16-23, log2(element size) in bits 0-7 */
	if (!compressed && bpf_probe_read_user(&length, 4, oop + layout.klass_offset + 8))
		return 0;
	if (length < 0)
		return 0;
	return ((((__u64)lh >> 16) & 0xff) + ((__u64)length << (lh & 0x1f)) + 7) & ~7ULL;
}

/* The innermost Java frame of thread tid into key's site fields. */
static __always_inline const struct vt_hs_frame *site(struct vt_hs_alloc_key *key, __u32 tid)
{
	struct vt_hs_stack *st = bpf_map_lookup_elem(&stacks, &tid);
	struct vt_hs_frame *f;
	__u32 top;

	if (!st || !st->depth)
		return NULL;
	top = st->depth - 1;
	f = &st->f[top & (VT_HS_DEPTH - 1)];
	if (f->depth != top) {      /* a deeper frame took the slot */
		add(VT_HS_L_TOO_DEEP, 1);
		return NULL;
	}
	key->site_class = f->klass;
	key->site_method = f->method;
	return f;
}

/* A name for addr in the names map, copied from src[len], unless one is
 * there already (quiet: as copy_name). */
static __always_inline void intern_name(__u64 addr, const char *src, long len, bool quiet)
{
	struct vt_hs_name *n;
	__u32 zero = 0;

	if (!addr || bpf_map_lookup_elem(&names, &addr))
		return;
	n = bpf_map_lookup_elem(&name_scratch, &zero);
	if (!n)
		return;
	__builtin_memset(n, 0, sizeof(*n));
	copy_name(n->s, sizeof(n->s), src, len, quiet);
	if (n->s[0] && bpf_map_update_elem(&names, &addr, n, BPF_NOEXIST) == -E2BIG)
		add(VT_HS_L_NAMES_FULL, 1);
}

/* The name of the class at qklass (Klass::_name, a Symbol: a u2 length and
 * the bytes) for the names map, where its place is known. qklass: qualified
 * by its process's slot under record --all, read at the raw address. A
 * name not paged in yet (a class of the CDS archive, early in the JVM's
 * start) is read again as its row grows (count_alloc); what stays unnamed
 * is counted at the end, per object (runtime_jvm.c). */
static __always_inline void intern_klass(__u64 qklass)
{
	__u64 sym = 0, klass = vt_proc_raw(qklass);
	__u16 len = 0;

	if (!klass || bpf_map_lookup_elem(&names, &qklass))
		return;
	if (!bpf_probe_read_user(&sym, 8, (void *)(klass + layout.name_offset)) && sym &&
	    !bpf_probe_read_user(&len, 2, (void *)(sym + layout.symbol_length_offset)))
		intern_name(qklass, (const char *)(sym + layout.symbol_body_offset), len, true);
}

/* The site's two names, for a new row keyed by key. */
static __always_inline void intern_site(const struct vt_hs_alloc_key *key,
					const struct vt_hs_frame *f)
{
	if (!f)
		return;
	intern_name(key->site_class, (const char *)f->klass, f->klass_len, false);
	intern_name(key->site_method, (const char *)f->method, f->method_len, false);
}

/* record --all (called under `if (targ_all)`): the key's addresses
 * qualified by the calling process's slot (a site's only when there is
 * one: 0 stays 0); false, counted, when it has none or one is above the
 * slot bits. */
static __always_inline bool all_qualify(__u64 *a, __u64 *b, __u64 *c)
{
	__u64 slot = vt_proc_slot();

	if (slot == VT_PROC_NONE || vt_proc_too_high(*a) || vt_proc_too_high(*b) ||
	    vt_proc_too_high(*c)) {
		add(slot == VT_PROC_NONE ? VT_HS_L_PROC_FULL : VT_HS_L_PROC_HIGH_PTR, 1);
		return false;
	}
	*a = vt_proc_qual(*a, slot);
	if (*b)
		*b = vt_proc_qual(*b, slot);
	if (*c)
		*c = vt_proc_qual(*c, slot);
	return true;
}

/* Push a frame on thread tid's stack. */
static __always_inline void push_frame(__u32 tid, const char *klass, long klass_len,
				       const char *method, long method_len)
{
	struct vt_hs_stack *st = bpf_map_lookup_elem(&stacks, &tid);
	struct vt_hs_frame *f;
	__u32 zero = 0;

	if (!st) {
		struct vt_hs_stack *init = bpf_map_lookup_elem(&empty_stack, &zero);

		if (!init)
			return;
		if (bpf_map_update_elem(&stacks, &tid, init, BPF_NOEXIST) == -E2BIG) {
			add(VT_HS_L_STACK_MAP_FULL, 1);
			return;
		}
		st = bpf_map_lookup_elem(&stacks, &tid);
		if (!st)
			return;
	}
	f = &st->f[st->depth & (VT_HS_DEPTH - 1)];
	f->klass = (__u64)klass;
	f->method = (__u64)method;
	f->klass_len = klass_len > 0 ? (__u32)klass_len : 0;
	f->method_len = method_len > 0 ? (__u32)method_len : 0;
	f->depth = st->depth;
	st->depth++;
}

/* Entry of SharedRuntime::dtrace_object_alloc_base(Thread *, oopDesc *, int). */
SEC("uprobe")
int hs_alloc_base(struct pt_regs *ctx)
{
	__u32 tid = vt_tid();
	__u64 bias = PT_REGS_IP(ctx) - layout.func_vaddr;
	__u64 klass = 0, size = object_size(bias, (const void *)PT_REGS_PARM2(ctx), &klass);

	if (size)
		bpf_map_update_elem(&pending_size, &tid, &size, BPF_ANY);
	return 0;
}

/* One allocation of size bytes under key (class and site filled in). A
 * new row (false) needs its names interned by the caller; *again is set
 * when an old row's count reaches a power of two, for a name that could
 * not be read before to be tried again (a few times, at no cost between). */
static __always_inline bool count_alloc(const struct vt_hs_alloc_key *key, __u64 size, bool *again)
{
	struct vt_hs_alloc_val one = { .count = 1, .bytes = size }, *v;
	enum vt_got got;

	v = bpf_map_lookup_elem(&allocs, key);
	if (v) {
		v->count++;
		v->bytes += size;
		*again = !(v->count & (v->count - 1));
		return true;
	}
	v = vt_insert(&allocs, key, &one, &got);
	if (!v) {
		if (got == VT_GOT_REFUSED)
			add(VT_HS_L_MAP_FULL, 1);
		return true;
	}
	if (got == VT_GOT_OLD) {    /* another CPU inserted the key first */
		v->count++;
		v->bytes += size;
	}
	return false;
}

/* The whole allocation in one trap, where runtime_jvm.c found the
 * class name's place in the function's own code (layout.name_offset):
 * the row is keyed by the Klass*, whose name is read only for a new row,
 * so object__alloc need not be attached. */
SEC("uprobe")
int hs_alloc_whole(struct pt_regs *ctx)
{
	__u64 bias = PT_REGS_IP(ctx) - layout.func_vaddr, klass = 0, size;
	struct vt_hs_alloc_key key = {};
	const struct vt_hs_frame *f;

	add(VT_HS_C_ALLOCS, 1);
	size = object_size(bias, (const void *)PT_REGS_PARM2(ctx), &klass);
	if (!size)
		add(VT_HS_L_SIZE_UNREADABLE, 1);
	key.klass = klass;
	f = site(&key, vt_tid());
	if (targ_all && !all_qualify(&key.klass, &key.site_class, &key.site_method))
		return 0;
	bool again = false;

	if (!count_alloc(&key, size, &again)) {
		intern_klass(key.klass);
		intern_site(&key, f);
	} else if (again) {
		intern_klass(key.klass);
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(hs_object_alloc, long jtid, const char *name, long name_len, long arg_size)
{
	struct vt_hs_alloc_key key = { .klass = (__u64)name };
	const struct vt_hs_frame *f;
	__u32 tid = vt_tid();
	__u64 *pending, size;

	add(VT_HS_C_ALLOCS, 1);
	pending = bpf_map_lookup_elem(&pending_size, &tid);
	if (pending && *pending) {
		size = *pending;
		*pending = 0;
	} else {
		size = arg_size > 0 ? (__u64)arg_size : 0;
		if (!size_arg_right)
			add(VT_HS_L_SIZE_FROM_ARG, 1);
	}
	f = site(&key, tid);
	if (targ_all && !all_qualify(&key.klass, &key.site_class, &key.site_method))
		return 0;
	bool again = false;

	if (!count_alloc(&key, size, &again)) {
		intern_name(key.klass, name, name_len, false);
		intern_site(&key, f);
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(hs_method_entry, long jtid, const char *klass, long klass_len,
	     const char *method, long method_len)
{
	struct vt_hs_method_key key = { .klass = (__u64)klass, .method = (__u64)method };
	struct vt_hs_method_val init = {}, *v;
	__u64 none = 0;
	enum vt_got got;

	add(VT_HS_C_METHOD_ENTRIES, 1);
	push_frame(vt_tid(), klass, klass_len, method, method_len);
	if (targ_all && !all_qualify(&key.klass, &key.method, &none))
		return 0;
	v = bpf_map_lookup_elem(&methods, &key);
	if (!v) {
		v = vt_insert(&methods, &key, &init, &got);
		if (!v) {
			if (got == VT_GOT_REFUSED)
				add(VT_HS_L_METHOD_MAP_FULL, 1);
			return 0;
		}
		if (got == VT_GOT_NEW) {
			intern_name(key.klass, klass, klass_len, false);
			intern_name(key.method, method, method_len, false);
		}
	}
	v->calls++;
	return 0;
}

/* A return pops its frame. Not every entry gets its return: C2-compiled
 * frames that an exception unwinds fire none. So the returning frame is
 * looked for from the top down; the frames above it are gone too, and are
 * counted. One not on the stack at all was entered before attach, below
 * every frame kept: all of them are gone. Past the kept slots the order
 * is trusted. */
SEC("usdt")
int BPF_USDT(hs_method_return, long jtid, const char *klass, long klass_len, const char *method,
	     long method_len)
{
	__u32 tid = vt_tid();
	struct vt_hs_stack *st = bpf_map_lookup_elem(&stacks, &tid);
	__u32 depth;

	if (!st || !st->depth)
		return 0;
	depth = st->depth;
	for (__u32 i = 0; i < VT_HS_DEPTH; i++) {
		struct vt_hs_frame *f;
		__u32 k;

		if (i >= depth) {
			add(VT_HS_L_NO_RETURN, depth);
			st->depth = 0;
			return 0;
		}
		k = depth - 1 - i;
		f = &st->f[k & (VT_HS_DEPTH - 1)];
		if (f->depth != k)  /* overwritten: what lies below is not kept */
			break;
		if (f->klass == (__u64)klass && f->method == (__u64)method) {
			if (i)
				add(VT_HS_L_NO_RETURN, i);
			st->depth = k;
			return 0;
		}
	}
	st->depth = depth - 1;
	return 0;
}

SEC("usdt")
int BPF_USDT(hs_gc_begin, int full)
{
	__u32 tid = vt_tid();
	/* the low bit carries the kind, so one map holds both */
	__u64 start = (bpf_ktime_get_ns() & ~1ULL) | (full ? 1 : 0);

	if (bpf_map_update_elem(&gc_start, &tid, &start, BPF_ANY))
		add(VT_HS_L_GC_UNPAIRED, 1);
	return 0;
}

SEC("usdt")
int BPF_USDT(hs_gc_end)
{
	__u32 tid = vt_tid();
	__u64 now = bpf_ktime_get_ns(), *s = bpf_map_lookup_elem(&gc_start, &tid), start;
	struct vt_hs_gc_event *e;
	__u32 full;

	if (!s || !*s) {
		add(VT_HS_L_GC_UNPAIRED, 1);
		return 0;
	}
	start = *s & ~1ULL;
	full = *s & 1;
	*s = 0;
	add(full ? VT_HS_C_GC_FULL : VT_HS_C_GC_PARTIAL, 1);
	vt_pause_counted(full, now > start ? now - start : 0);
	e = bpf_ringbuf_reserve(&gc_events, sizeof(*e), 0);
	if (!e) {
		add(VT_HS_L_GC_BUF_FULL, 1);
		return 0;
	}
	e->full = full;
	e->pad = 0;
	e->duration_ns = now > start ? now - start : 0;
	e->end_ns = now;
	/* no wakeup: poll() drains the buffer on its own clock */
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
