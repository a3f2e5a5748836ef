// SPDX-License-Identifier: GPL-2.0
/*
 * ruby.bpf.c: Ruby's own USDT probes (libruby, provider "ruby") counted the
 * way vmtrace counts its own provider.
 *
 * Allocations: a uprobe on every function of libruby that makes an object
 * (rb_wb_protected_newobj_of and its siblings, rb_data_*_wrap, rb_imemo_new,
 * rb_class_allocate_instance; ruby_code.c) counts each object once, per
 * (class, type, innermost Ruby method, site), with its 40-byte slot and
 * the ivar buffer a plain object gets at birth. Its site and method come
 * from the thread's own frames (ruby_frame.bpf.h) when walk_frames is set.
 * Otherwise the USDT probes object__create and string/array/hash__create
 * announce the site of the allocation that follows them on the thread, and
 * method__entry / method__return keep, per thread, the depth of
 * Ruby-level methods (`def`s) and a ring of the innermost frames' names.
 * cmethod__entry/return are never attached, so C methods such as Class#new
 * do not hide the Ruby method that called them.
 *
 * GC: gc__mark__begin/end and gc__sweep__begin/end are timed per thread;
 * each completed phase is counted and streamed as one pause.
 *
 * Every string is copied (never keyed by pointer); one the process has not
 * paged in, or one longer than its field, is counted as a loss and the event
 * is still counted under what could be read.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/usdt.bpf.h>
#include "runtimes/common.bpf.h"
#include "runtimes/pauses.bpf.h"
#include "runtimes/ruby/ruby_maps.h"
#include "runtimes/procs.bpf.h"

#ifndef E2BIG
#define E2BIG 7
#endif
#ifndef EEXIST
#define EEXIST 17
#endif

/* Set before load: false when --no-methods left the method probes out. */
const volatile bool track_methods = true;
/* Set before load: sites from the frame walk (ruby_frame.bpf.h), with no
 * site probe; false for a Ruby whose layout vmtrace does not know. */
const volatile bool walk_frames = false;
/* Set before load: --stack vm (ruby_stack.bpf.h, ruby_chain.bpf.h) */
const volatile bool walk_stacks = false;

VT_COUNTING_MAP(allocs, BPF_MAP_TYPE_PERCPU_HASH, struct vt_rb_alloc_key, struct vt_rb_alloc_val);

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* a thread's stack is 8 KiB: only for threads seen */
	__type(key, __u32);
	__type(value, struct vt_rb_thread);
} threads SEC(".maps");

VT_MAP(empty_thread, BPF_MAP_TYPE_ARRAY, __u32, struct vt_rb_thread, 1); /* all zeros: the initial value of a new thread */

VT_MAP(scratch, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct vt_rb_alloc_key, 1); /* the key is too big for the BPF stack */

VT_MAP(class_names, BPF_MAP_TYPE_HASH, __u64, struct vt_rb_class_name, 16384);

VT_MAP(pending, BPF_MAP_TYPE_HASH, __u32, struct vt_rb_pending, 4096);

VT_MAP(empty_pending, BPF_MAP_TYPE_ARRAY, __u32, struct vt_rb_pending, 1);

VT_MAP(counters, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, __u64, VT_RB_COUNTERS);

struct vt_rb_gc_start {
	__u64 start[VT_RB_GC_PHASES];
};

VT_MAP(gc_start, BPF_MAP_TYPE_HASH, __u32, struct vt_rb_gc_start, 1024);

VT_RINGBUF(gc_events, 1 << 20);

/* --stack vm: the counter slots one allocation touched (a bit each), so a
 * frame walk that counted a loss is never cached (ruby_chain.bpf.h). */
VT_MAP(event_counted, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, __u32, 1);

static __always_inline void add(__u32 slot, __u64 n)
{
	__u32 zero = 0, *seen;

	vt_count(&counters, slot, n);
	if (walk_stacks && (seen = bpf_map_lookup_elem(&event_counted, &zero)))
		*seen |= 1u << (slot & 31);
}

static __always_inline void rb_event_counted_reset(void)
{
	__u32 zero = 0, *seen = bpf_map_lookup_elem(&event_counted, &zero);

	if (seen)
		*seen = 0;
}

static __always_inline __u32 rb_event_counted(void)
{
	__u32 zero = 0, *seen = bpf_map_lookup_elem(&event_counted, &zero);

	return seen ? *seen : ~0u;
}

/* Fields start zeroed, so a NULL src (the runtime gave no name) leaves "". */
static __always_inline void copy_str(char *dst, __u32 size, const char *src)
{
	vt_copy_str(dst, size, src, &counters, VT_RB_L_UNREADABLE, VT_RB_L_TRUNCATED);
}

/* This thread's value in map (keyed by thread id), created as a copy of
 * the zeroed value in empty when create is set and it is missing; a refused
 * insert counts slot full. */
static __always_inline void *per_thread(void *map, void *empty, __u32 full, bool create)
{
	__u32 tid = vt_tid(), zero = 0;
	void *v = bpf_map_lookup_elem(map, &tid), *init;
	enum vt_got got;

	if (v || !create)
		return v;
	/* looked up only here: most events find their thread */
	init = bpf_map_lookup_elem(empty, &zero);
	if (!init)
		return NULL;
	v = vt_insert(map, &tid, init, &got);
	if (got == VT_GOT_REFUSED)
		add(full, 1);
	return v;
}

static __always_inline struct vt_rb_thread *thread_get(bool create)
{
	return per_thread(&threads, &empty_thread, VT_RB_L_THREADS_FULL, create);
}

SEC("usdt")
int BPF_USDT(rb_method_entry, const char *klass, const char *method)
{
	struct vt_rb_thread *t = thread_get(true);
	struct vt_rb_frame *f;
	__s64 depth;

	add(VT_RB_C_METHOD_ENTRIES, 1);
	if (!t)
		return 0;
	depth = t->depth + 1;
	t->depth = depth;
	f = &t->frames[depth & (VT_RB_DEPTH - 1)];
	f->klass[0] = '\0';
	f->method[0] = '\0';
	copy_str(f->klass, sizeof(f->klass), klass);
	copy_str(f->method, sizeof(f->method), method);
	f->depth = depth;
	return 0;
}

SEC("usdt")
int BPF_USDT(rb_method_return)
{
	struct vt_rb_thread *t = thread_get(false);

	/* a return below depth 0 leaves a method entered before attach */
	if (t && t->depth > 0)
		t->depth--;
	return 0;
}

static __always_inline void count_alloc(struct vt_rb_alloc_key *key, __u64 bytes)
{
	struct vt_rb_alloc_val one = { .count = 1, .bytes = bytes }, *v;
	long err;

	add(VT_RB_C_ALLOCS, 1);
	v = bpf_map_lookup_elem(&allocs, key);
	if (v) {
		v->count++;
		v->bytes += bytes;
		return;
	}
	err = bpf_map_update_elem(&allocs, key, &one, BPF_NOEXIST);
	if (err == -EEXIST) {
		/* another CPU inserted the key first */
		v = bpf_map_lookup_elem(&allocs, key);
		if (v) {
			v->count++;
			v->bytes += bytes;
		}
		return;
	}
	if (err)
		add(VT_RB_L_MAP_FULL, 1);
}

/* Fill in the innermost Ruby method of the current thread. */
static __always_inline void set_method(struct vt_rb_alloc_key *key)
{
	struct vt_rb_thread *t;
	struct vt_rb_frame *f;
	__s64 depth;

	if (!track_methods)
		return;
	t = thread_get(false);
	depth = t ? t->depth : 0;
	if (!t || depth <= 0) {
		add(VT_RB_C_NO_METHOD, 1);
		return;
	}
	f = &t->frames[depth & (VT_RB_DEPTH - 1)];
	if (f->depth != depth) {
		/* deeper calls since overwrote this frame's slot */
		key->method[0] = '?';
		add(VT_RB_L_STACK_DEEP, 1);
		return;
	}
	__builtin_memcpy(key->mklass, f->klass, sizeof(key->mklass));
	__builtin_memcpy(key->method, f->method, sizeof(key->method));
}

static __always_inline struct vt_rb_alloc_key *new_key(void)
{
	__u32 zero = 0;
	struct vt_rb_alloc_key *key = bpf_map_lookup_elem(&scratch, &zero);

	if (key)
		__builtin_memset(key, 0, sizeof(*key));
	return key;
}

/* a Ruby String: its flags, and where its bytes are */
#define RB_T_STRING 0x05
#define RB_STR_NOEMBED (1ULL << 13)      /* RSTRING_NOEMBED = FL_USER1 */
#define RB_STR_EMBED_LEN_SHIFT 14        /* FL_USHIFT + 2 */

#include "runtimes/ruby/ruby_frame.bpf.h"
#include "runtimes/ruby/ruby_class_name.bpf.h"

#include "runtimes/ruby/ruby_stack.bpf.h"
#include "runtimes/ruby/ruby_chain.bpf.h"

/* ---- the site a probe announced, for the allocation that follows ---- */

static __always_inline struct vt_rb_pending *pending_get(bool create)
{
	return per_thread(&pending, &empty_pending, VT_RB_L_PENDING_FULL, create);
}

static __always_inline void announce(const char *file, int line)
{
	struct vt_rb_pending *p = pending_get(true);

	if (!p)
		return;
	p->file[0] = '\0';
	copy_str(p->file, sizeof(p->file), file);
	p->line = line;
	p->site = 1;
}

/* One object of class klass and type type: its site (when a probe announced
 * one), the innermost Ruby method, one count. */
/* The method of the allocating frame, `Owner#name` as method__entry names
 * it, the owner named once from the class itself. */
static __always_inline void frame_method(struct vt_rb_alloc_key *key, __u64 ep, __u64 body,
					 __u64 slot, bool *truncated)
{
	struct vt_rb_class_name *n;
	__u64 owner = 0;

	if (rb_frame_method(ep, body, &owner, key->method, truncated)) {
		key->method[0] = '\0';
		add(VT_RB_C_NO_METHOD, 1);
		return;
	}
	if (targ_all) {
		if (vt_proc_too_high(owner))
			return; /* the class of the method stays unnamed */
		owner = vt_proc_qual(owner, slot);
	}
	learn_class_name(owner);
	n = bpf_map_lookup_elem(&class_names, &owner);
	if (n)
		__builtin_memcpy(key->mklass, n->name, sizeof(key->mklass));
}

static __always_inline void count_object(__u64 klass, __u32 type, __u64 bytes, __u64 base)
{
	struct vt_rb_alloc_key *key;
	struct vt_rb_pending *p;
	bool truncated = false;
	__u64 slot = 0;

	if (targ_all) { /* dropped by the verifier for one process */
		slot = vt_proc_slot();
		if (slot == VT_PROC_NONE || vt_proc_too_high(klass)) {
			add(slot == VT_PROC_NONE ? VT_RB_L_PROC_FULL : VT_RB_L_PROC_HIGH_PTR, 1);
			return;
		}
	}
	key = new_key();
	if (!key)
		return;
	if (walk_frames) {
		/* the site and method from the thread's own frames: no trap but this */
		__u64 ep = 0, body = 0, ec = rb_current_ec(base);
		enum vt_rb_walk w;

		/* --stack vm: the frames' raw words hashed, the walk's result cached */
		if (walk_stacks && rb_chain_hit(ec, slot, key))
			goto counted;
		w = rb_walk_site(ec, key->file, &key->line, &ep, &body, &truncated);
		if (walk_stacks)
			key->stack = rb_stack_id(ec);

		if (w == VT_RB_WALK_BAD) {
			key->file[0] = '\0';
			key->line = VT_RB_LINE_WALK_FAILED;
			add(VT_RB_L_FRAME_BAD, 1);
		} else if (w == VT_RB_WALK_OK && track_methods) {
			frame_method(key, ep, body, slot, &truncated);
		}
		if (truncated)
			add(VT_RB_L_TRUNCATED, 1);
		if (walk_stacks)
			rb_chain_store(key, truncated);
	} else if ((p = pending_get(false))) {
		if (p->site) {
			__builtin_memcpy(key->file, p->file, sizeof(key->file));
			key->line = p->line;
		}
		p->site = 0;
	}
counted:
	/* a hidden object's 0 is qualified too: the row keeps its process */
	key->klass = targ_all ? vt_proc_qual(klass, slot) : klass;
	key->type = type;
	learn_class_name(key->klass);
	if (!walk_frames)
		set_method(key);
	count_alloc(key, bytes);
}

/* A register at the probed instruction by its x86 number (ruby_code.c
 * says which hold the class and the flags there). Read through a helper:
 * the verifier refuses a load from ctx at an offset it cannot see. */
#define PT(f) __builtin_offsetof(struct pt_regs, f)
/* a global, not static: a static const lands in .rodata.cst32, which
 * leaves the object's BTF unloadable and bpf_loop needs it */
const volatile __u16 pt_regs_at[16] = {
	PT(ax), PT(cx), PT(dx), PT(bx), PT(sp), PT(bp), PT(si), PT(di),
	PT(r8), PT(r9), PT(r10), PT(r11), PT(r12), PT(r13), PT(r14), PT(r15),
};

static __always_inline __u64 reg(struct pt_regs *ctx, __u64 r)
{
	__u64 v = 0;

	bpf_probe_read_kernel(&v, sizeof(v), (char *)ctx + pt_regs_at[r & 15]);
	return v;
}

/* Instance variables that do not fit in the slot (ROBJECT_EMBED_LEN_MAX):
 * rb_class_allocate_instance gives the object a buffer of one VALUE per
 * ivar its class has seen (RCLASS_EXT(klass)->iv_index_tbl->num_entries),
 * which ObjectSpace.memsize_of counts. */
#define RB_EMBED_IVARS 3
#define ST_NUM_ENTRIES 16

static __always_inline __u64 ivar_bytes(__u64 klass)
{
	__u64 ext = 0, tbl = 0, n = 0;

	if (bpf_probe_read_user(&ext, sizeof(ext), (void *)(klass + RB_CLASS_EXT)) || !ext ||
	    bpf_probe_read_user(&tbl, sizeof(tbl), (void *)ext) || !tbl ||
	    bpf_probe_read_user(&n, sizeof(n), (void *)(tbl + ST_NUM_ENTRIES)))
		return 0;
	return n > RB_EMBED_IVARS ? n * 8 : 0;
}

/* libruby's allocation functions (ruby_code.c): every object is made by
 * exactly one of them. The cookie says where its class and type are. */
SEC("uprobe")
int rb_newobj(struct pt_regs *ctx)
{
	__u64 ck = bpf_get_attach_cookie(ctx), kreg = (ck >> 8) & 0xff, freg = (ck >> 16) & 0xff;
	__u64 klass = kreg == VT_RB_CK_NOREG ? 0 : reg(ctx, kreg), bytes = VT_RB_SLOT;
	__u32 type = ck & 0xff;

	if (type == VT_RB_CK_TYPE_FROM_FLAGS)
		type = freg == VT_RB_CK_NOREG ? 0 : reg(ctx, freg) & VT_RB_T_MASK;
	if ((ck & VT_RB_CK_IVARS) && klass)
		bytes += ivar_bytes(klass);
	/* libruby's load address: the probe's address less its link-time one */
	count_object(klass, type, bytes, PT_REGS_IP(ctx) - (ck >> VT_RB_CK_VADDR_SHIFT));
	return 0;
}

/* object__create fires in class_call_alloc_func before the allocator runs:
 * its site is the new object's. */
SEC("usdt")
int BPF_USDT(rb_object_create, const char *klass, const char *file, int line)
{
	announce(file, line);
	return 0;
}

/* string__create, array__create, hash__create: the site of the String,
 * Array or Hash allocated next (Hash.new fires hash__create inside its
 * allocator, after object__create: one object, counted once). */
SEC("usdt")
int BPF_USDT(rb_builtin_create, long length, const char *file, int line)
{
	announce(file, line);
	return 0;
}

/* gc__{mark,sweep}__begin: the cookie is the phase */
SEC("usdt")
int BPF_USDT(rb_gc_begin)
{
	__u32 tid = vt_tid();
	__u64 phase = bpf_usdt_cookie(ctx);
	struct vt_rb_gc_start fresh = {}, *s;
	enum vt_got got;

	if (phase >= VT_RB_GC_PHASES)
		return 0;
	s = vt_get_or_insert(&gc_start, &tid, &fresh, &got);
	if (!s) {
		add(VT_RB_L_GC_UNPAIRED, 1);
		return 0;
	}
	s->start[phase] = bpf_ktime_get_ns();
	return 0;
}

SEC("usdt")
int BPF_USDT(rb_gc_end)
{
	__u32 tid = vt_tid();
	__u64 phase = bpf_usdt_cookie(ctx), now = bpf_ktime_get_ns(), start;
	struct vt_rb_gc_start *s;
	struct vt_rb_gc_event *e;

	if (phase >= VT_RB_GC_PHASES)
		return 0;
	s = bpf_map_lookup_elem(&gc_start, &tid);
	start = s ? s->start[phase] : 0;
	if (!start) {
		add(VT_RB_L_GC_UNPAIRED, 1);
		return 0;
	}
	s->start[phase] = 0;
	add(phase == VT_RB_GC_MARK ? VT_RB_C_GC_MARK : VT_RB_C_GC_SWEEP, 1);
	add(phase == VT_RB_GC_MARK ? VT_RB_C_GC_NS_MARK : VT_RB_C_GC_NS_SWEEP, now - start);
	vt_pause_counted((__u32)phase, now - start);
	e = bpf_ringbuf_reserve(&gc_events, sizeof(*e), 0);
	if (!e) {
		add(VT_RB_L_GC_BUF_FULL, 1);
		return 0;
	}
	e->phase = phase;
	e->tid = tid;
	e->duration_ns = now - start;
	e->end_ns = now;
	/* no wakeup: poll() drains the buffer on its own clock */
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
