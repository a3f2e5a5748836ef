/*
 * vm_walk.bpf.h: --stack both for hosts of libvmtrace: the VM frame chain
 * walked in BPF at each object__alloc, beside the native stack the kernel
 * takes there, and the two kept as one stack.
 *
 * Batched counting walks the chain in the process (provider/core/src/stacks.c),
 * but a native stack needs a BPF program at each allocation, and that
 * program cannot find the thread's innermost-frame pointer (a TLS variable
 * of the host). So the provider announces it: before a thread's first
 * object__alloc for this consumer, stacks__armed fires with where that
 * pointer lives and the frame descriptor (caller, name, file and line
 * offsets), kept here per thread. The walk then reads the chain as the
 * provider does, up to VT_STACK_MAX_DEPTH frames, interns it in `stacks`
 * (as a STACK batch would), and the pair (VM stack, native stack) is
 * interned in both_stacks under an id with VT_NATIVE_STACK | VT_BOTH_STACK
 * set. Included by vmtrace.bpf.c after native_stack_id().
 */
#ifndef VMTRACE_VM_WALK_BPF_H
#define VMTRACE_VM_WALK_BPF_H

/* Set before load: --stack both */
const volatile bool vm_walk = false;

#define VT_FRAMES_MAGIC 0x46544d56u   /* "VMTF", <vmtrace/frames.h> */
#define VT_FRAMES_VERSION 1
#define VT_FRAME_NONE (-1)

struct vt_vm_thread {
	__u64 current;                 /* where the thread's innermost-frame pointer lives */
	__s32 caller, name, file, line;
	__u32 lo, span;                /* the fields' bytes in a frame: one read when span <= 64 */
};

#define VM_SPAN_MAX 64

VT_MAP(vm_threads, BPF_MAP_TYPE_HASH, __u32, struct vt_vm_thread, 4096);

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct vt_both_stack);
} both_stacks SEC(".maps");

struct vm_walk_state {
	__u64 frame, hash;
	struct vt_vm_thread t;
	__u32 bad;
	__u8 buf[2 * VM_SPAN_MAX];     /* a frame's fields, read at once */
	struct vt_stack_val st;
	__u64 first;                   /* where a new stack's frames go (stack_frames) */
};

VT_MAP(vm_walk_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct vm_walk_state, 1);

/* stacks__armed(max_depth, current, frames): the thread's pointer and
 * the descriptor, once per thread and consumer. */
SEC("usdt")
int BPF_USDT(on_stacks_armed, __u64 max_depth, void *current, void *frames)
{
	struct {
		__u32 magic;
		__u16 version, max_depth;
		__s32 caller, name, file, line;
	} d;
	struct vt_vm_thread t;
	__u32 tid = vt_tid();

	if (!vm_walk || !in_target())
		return 0;
	__builtin_memset(&d, 0, sizeof(d));
	/* current NULL: the thread has no VM stack (yet), not a loss */
	if (current && (bpf_probe_read_user(&d, sizeof(d), frames) || d.magic != VT_FRAMES_MAGIC ||
			d.version != VT_FRAMES_VERSION)) {
		lose(VT_LOSS_VM_WALK_FAIL);
		return 0;
	}
	t.current = (__u64)current;
	t.caller = d.caller;
	t.name = d.name;
	t.file = d.file;
	t.line = d.line;
	/* lo..hi: the bytes the four fields span (the offsets are <= 4096) */
	{
		__s32 lo = d.caller < d.name ? d.caller : d.name, hi = (d.caller > d.name ? d.caller : d.name) + 8;

		if (d.file != VT_FRAME_NONE) {
			lo = d.file < lo ? d.file : lo;
			hi = d.file + 8 > hi ? d.file + 8 : hi;
		}
		if (d.line != VT_FRAME_NONE) {
			lo = d.line < lo ? d.line : lo;
			hi = d.line + 4 > hi ? d.line + 4 : hi;
		}
		t.lo = lo < 0 ? 0 : (__u32)lo;
		t.span = hi > lo ? (__u32)(hi - lo) : 0;
	}
	if (bpf_map_update_elem(&vm_threads, &tid, &t, BPF_ANY))
		lose(VT_LOSS_VM_WALK_FAIL);
	return 0;
}

static __always_inline int vm_read(void *dst, __u32 size, __u64 frame, __s32 off)
{
	if (off < 0 || off > 4096)
		return -1;
	return bpf_probe_read_user(dst, size, (void *)(frame + off));
}

/* One frame of the chain (bpf_loop's callback): 0 on, 1 done. */
static long vm_walk_step(__u32 i, void *ctx)
{
	struct vm_walk_state *w;
	struct vt_stack_frame *f;
	__u32 zero = 0, d;
	__s32 line = 0;

	w = bpf_map_lookup_elem(&vm_walk_scratch, &zero);
	if (!w || !w->frame)
		return 1;
	d = w->st.depth;
	if (d >= VT_STACK_MAX_DEPTH) {
		w->st.flags |= VT_STACK_CUT;
		return 1;
	}
	f = &w->st.f[d & (VT_STACK_MAX_DEPTH - 1)];
	f->file = 0;
	f->line = 0;
	if (w->t.span && w->t.span <= VM_SPAN_MAX && w->t.lo <= 4096) {
		/* the usual host: its frame's fields within 64 bytes, one read */
		__u32 lo = w->t.lo, n = w->t.span;

		/* keep the bound the verifier needs: the compiler drops a mask it proves */
		asm volatile("%0 &= 127" : "+r"(n));
		if (bpf_probe_read_user(w->buf, n, (void *)(w->frame + lo))) {
			w->bad = 1;
			return 1;
		}
		__builtin_memcpy(&f->name, w->buf + ((w->t.name - lo) & (VM_SPAN_MAX - 1)), 8);
		if (w->t.file != VT_FRAME_NONE)
			__builtin_memcpy(&f->file, w->buf + ((w->t.file - lo) & (VM_SPAN_MAX - 1)), 8);
		if (w->t.line != VT_FRAME_NONE)
			__builtin_memcpy(&line, w->buf + ((w->t.line - lo) & (VM_SPAN_MAX - 1)), 4);
		__builtin_memcpy(&w->frame, w->buf + ((w->t.caller - lo) & (VM_SPAN_MAX - 1)), 8);
	} else if (vm_read(&f->name, sizeof(f->name), w->frame, w->t.name) ||
	    (w->t.file != VT_FRAME_NONE && vm_read(&f->file, sizeof(f->file), w->frame, w->t.file)) ||
	    (w->t.line != VT_FRAME_NONE && vm_read(&line, sizeof(line), w->frame, w->t.line)) ||
	    vm_read(&w->frame, sizeof(w->frame), w->frame, w->t.caller)) {
		w->bad = 1;
		return 1;
	}
	f->line = line;
	w->hash = (w->hash ^ f->name) * 0xC2B2AE3D27D4EB4Full;
	w->hash = (w->hash ^ f->file ^ ((__u64)f->line << 48)) * 0x165667B19E3779F9ull;
	w->st.depth = d + 1;
	return 0;
}

/* Put frame i into stack_frames and read its strings into `names`
 * (bpf_loop's callback, over a stack new to the map: a known stack's
 * strings are there already). */
static long vm_resolve_step(__u32 i, void *ctx)
{
	struct vm_walk_state *w;
	struct vt_stack_frame *f;
	__u32 zero = 0;

	w = bpf_map_lookup_elem(&vm_walk_scratch, &zero);
	if (!w || i >= w->st.depth)
		return 1;
	f = &w->st.f[i & (VT_STACK_MAX_DEPTH - 1)];
	stack_frame_put(w->first + i, f);
	resolve_name(f->name);
	if (f->file)
		resolve_name(f->file);
	return 0;
}

/* The id of the calling thread's VM stack, kept in `stacks`: 0 when the
 * thread has none; losses counted. */
static __noinline __u64 vm_stack_id(void)
{
	struct vm_walk_state *w;
	struct vt_vm_thread *t;
	__u32 zero = 0, tid = vt_tid();
	__u64 id;
	__s64 first;

	w = bpf_map_lookup_elem(&vm_walk_scratch, &zero);
	t = bpf_map_lookup_elem(&vm_threads, &tid);
	if (!w)
		return 0;
	if (!t) {
		lose(VT_LOSS_VM_WALK_FAIL);   /* a thread never announced */
		return 0;
	}
	w->t = *t;
	w->frame = 0;
	if (!t->current)
		return 0;                      /* announced without a VM stack */
	if (bpf_probe_read_user(&w->frame, sizeof(w->frame), (void *)t->current)) {
		lose(VT_LOSS_VM_WALK_FAIL);
		return 0;
	}
	if (!w->frame)
		return 0;                      /* no VM frame now: not a loss */
	w->st.depth = 0;
	w->st.flags = 0;
	w->bad = 0;
	w->hash = 0x9E3779B97F4A7C15ull;
	bpf_loop(VT_STACK_MAX_DEPTH + 1, vm_walk_step, NULL, 0);
	if (w->bad || !w->st.depth) {
		lose(VT_LOSS_VM_WALK_FAIL);
		return 0;
	}
	/* a cut stack keeps VT_STACK_CUT: userspace counts its allocations */
	id = ((w->hash ^ w->st.depth ^ w->st.flags) >> 2) | 1;
	if (!bpf_map_lookup_elem(&stacks, &id)) {
		first = stack_reserve(w->st.depth);
		if (first >= 0) {
			w->first = first;
			bpf_loop(w->st.depth, vm_resolve_step, NULL, 0);
			stack_publish(id, w->st.depth, w->st.flags, first);
		}
	}
	return id;
}

/* The id of the pair (VM stack, native stack), kept in both_stacks; one
 * of them alone when the other is 0. */
static __always_inline __u64 both_stack_id(__u64 vm, __u64 native)
{
	struct vt_both_stack b = { vm, native };
	__u64 id;
	long err;

	if (!vm || !native)
		return vm | native;
	id = ((vm ^ native) * 0x9E3779B97F4A7C15ull) ^ (native >> 17);
	id = VT_NATIVE_STACK | VT_BOTH_STACK | (id >> 2);
	if (!bpf_map_lookup_elem(&both_stacks, &id)) {
		err = bpf_map_update_elem(&both_stacks, &id, &b, BPF_NOEXIST);
		if (err && err != -EEXIST) {
			lose(VT_LOSS_STACK_MAP_FULL);
			return native;
		}
	}
	return id;
}

#endif /* VMTRACE_VM_WALK_BPF_H */
