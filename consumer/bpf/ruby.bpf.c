// SPDX-License-Identifier: GPL-2.0
/*
 * ruby.bpf.c: Ruby's own USDT probes (libruby, provider "ruby") counted the
 * way vmtrace counts its own provider.
 *
 * Allocations: object__create (class, file, line) and string__create /
 * array__create / hash__create (length, file, line; the cookie says which
 * class) become one count per (class, innermost Ruby method, file:line).
 *
 * Methods: method__entry / method__return keep, per thread, the depth of
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
#include <bpf/usdt.bpf.h>
#include "common.bpf.h"
#include "ruby_maps.h"

/* Set before load: false when --no-methods left the method probes out. */
const volatile bool track_methods = true;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 10240); /* --map-entries */
	__type(key, struct vt_rb_alloc_key);
	__type(value, struct vt_rb_alloc_val);
} allocs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* a thread's stack is 8 KiB: only for threads seen */
	__type(key, __u32);
	__type(value, struct vt_rb_thread);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vt_rb_thread);
} empty_thread SEC(".maps"); /* all zeros: the initial value of a new thread */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vt_rb_alloc_key);
} scratch SEC(".maps"); /* the key is too big for the BPF stack */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, VT_RB_COUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct vt_rb_gc_start {
	__u64 start[VT_RB_GC_PHASES];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct vt_rb_gc_start);
} gc_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} gc_events SEC(".maps");

static __always_inline void add(__u32 slot, __u64 n)
{
	vt_count(&counters, slot, n);
}

/* Fields start zeroed, so a NULL src (the runtime gave no name) leaves "". */
static __always_inline void copy_str(char *dst, __u32 size, const char *src)
{
	vt_copy_str(dst, size, src, &counters, VT_RB_L_UNREADABLE, VT_RB_L_TRUNCATED);
}

static __always_inline struct vt_rb_thread *thread_get(bool create)
{
	__u32 tid = vt_tid();
	struct vt_rb_thread *t = bpf_map_lookup_elem(&threads, &tid);
	__u32 zero = 0;
	struct vt_rb_thread *empty;
	enum vt_got got;

	if (t || !create)
		return t;
	/* looked up only here: most events find their thread */
	empty = bpf_map_lookup_elem(&empty_thread, &zero);
	if (!empty)
		return NULL;
	t = vt_insert(&threads, &tid, empty, &got);
	if (got == VT_GOT_REFUSED)
		add(VT_RB_L_THREADS_FULL, 1);
	return t;
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

static __always_inline void count_alloc(struct vt_rb_alloc_key *key)
{
	struct vt_rb_alloc_val one = { .count = 1 }, *v;
	long err;

	v = bpf_map_lookup_elem(&allocs, key);
	if (v) {
		v->count++;
		return;
	}
	err = bpf_map_update_elem(&allocs, key, &one, BPF_NOEXIST);
	if (err == -EEXIST) {
		/* another CPU inserted the key first */
		v = bpf_map_lookup_elem(&allocs, key);
		if (v)
			v->count++;
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

/* The rest of every allocation probe, once key->klass is set: the site, the
 * innermost Ruby method, and one count under the whole key. */
static __always_inline void finish_alloc(struct vt_rb_alloc_key *key, const char *file, int line)
{
	copy_str(key->file, sizeof(key->file), file);
	key->line = line;
	set_method(key);
	count_alloc(key);
}

SEC("usdt")
int BPF_USDT(rb_object_create, const char *klass, const char *file, int line)
{
	struct vt_rb_alloc_key *key = new_key();

	add(VT_RB_C_ALLOCS, 1);
	if (!key)
		return 0;
	copy_str(key->klass, sizeof(key->klass), klass);
	finish_alloc(key, file, line);
	return 0;
}

/* string__create, array__create, hash__create: the cookie names the class */
SEC("usdt")
int BPF_USDT(rb_builtin_create, long length, const char *file, int line)
{
	struct vt_rb_alloc_key *key = new_key();
	__u64 which = bpf_usdt_cookie(ctx);

	add(VT_RB_C_ALLOCS, 1);
	if (!key)
		return 0;
	if (which == VT_RB_STRING)
		__builtin_memcpy(key->klass, "String", 7);
	else if (which == VT_RB_ARRAY)
		__builtin_memcpy(key->klass, "Array", 6);
	else
		__builtin_memcpy(key->klass, "Hash", 5);
	finish_alloc(key, file, line);
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
	e = bpf_ringbuf_reserve(&gc_events, sizeof(*e), 0);
	if (!e) {
		add(VT_RB_L_GC_BUF_FULL, 1);
		return 0;
	}
	e->phase = phase;
	e->pad = 0;
	e->duration_ns = now - start;
	e->end_ns = now;
	/* no wakeup: poll() drains the buffer on its own clock */
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
