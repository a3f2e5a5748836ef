/*
 * ruby_stack.bpf.h: --stack vm for stock Ruby: the whole chain of Ruby-level
 * control frames of the allocating thread, walked in BPF (bpf_loop, one
 * frame an iteration) from ec->cfp to the root of its VM stack, as
 * rb_profile_frames does. C frames (Integer#times, Class#new) are skipped,
 * as in Ruby's own backtraces of Ruby code. The stack is interned by a hash
 * of its frames in rb_stacks; each frame's names are read once per (code,
 * owner) into rb_frame_names. Included by ruby.bpf.c after the frame walk
 * (ruby_frame.bpf.h), add() and learn_class_name().
 */
#ifndef VMTRACE_RUBY_STACK_BPF_H
#define VMTRACE_RUBY_STACK_BPF_H

#define RB_STACK_SCAN 512        /* control frames looked at, C frames included */
#define RB_IMEMO_MENT_TYPE 6
#define RB_HASH_MUL 0x100000001b3ULL

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* 3 KiB a stack: only for stacks seen */
	__type(key, __u64);
	__type(value, struct vt_rb_stack);
} rb_stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct vt_rb_frame_key);
	__type(value, struct vt_rb_frame_name);
} rb_frame_names SEC(".maps");

/* The walk's state and the stack it builds, per CPU: off the BPF stack,
 * which the callback shares with the allocation probe (512 bytes in all). */
struct rb_stack_walk {
	__u64 cfp, end, hash;
	__u64 root;                  /* the walk passed the VM stack's first frame */
	struct vt_rb_frame_key fk;   /* the frame whose names are looked up */
	struct vt_rb_stack st;
};

VT_MAP(stack_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct rb_stack_walk, 1);

VT_MAP(frame_name_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct vt_rb_frame_name, 1);

/* The class owning the method whose own env is ep (flags its ep[0]): the
 * method entry at ep[-2]; 0 for a block's env or top-level code. */
static __always_inline __u64 rb_env_owner(__u64 ep, __u64 flags)
{
	__u64 me = 0, mflags = 0, owner = 0;

	if (!(flags & rb_layout.env_local) || bpf_probe_read_user(&me, sizeof(me), (void *)(ep - 16)) ||
	    !me || bpf_probe_read_user(&mflags, sizeof(mflags), (void *)me) ||
	    (mflags & VT_RB_T_MASK) != RB_T_IMEMO || ((mflags >> 12) & 0xf) != RB_IMEMO_MENT_TYPE ||
	    bpf_probe_read_user(&owner, sizeof(owner), (void *)(me + rb_layout.me_owner)))
		return 0;
	return owner;
}

/* What names a frame's code: its iseq body's address mixed with its
 * instruction buffer's. Ruby frees the code of a file it has done with (a
 * gemspec's blocks, once read) and reuses its addresses; the body's alone
 * then gave later code the names read for the freed one. */
static __always_inline __u64 rb_code_id(__u64 body, __u64 enc)
{
	return body ^ (enc * 0x9E3779B97F4A7C15ULL);
}

/* Read the names of frame k (its code and owner set) once: its method's
 * name (base_label) when it has an owner, else its label ("block in c",
 * "<main>"), and its file, from its iseq body. */
static __always_inline int rb_learn_frame(struct vt_rb_frame_key *k, __u64 body)
{
	struct vt_rb_frame_name *n;
	bool truncated = false;
	__u64 label = 0;
	__u32 zero = 0;
	long err;

	if (bpf_map_lookup_elem(&rb_frame_names, k))
		return 0;
	n = bpf_map_lookup_elem(&frame_name_scratch, &zero);
	if (!n)
		return -1;
	if (bpf_probe_read_user(&label, sizeof(label),
				(void *)(body + (k->owner ? rb_layout.body_base_label : rb_layout.body_label))) ||
	    rb_read_string(n->label, VT_RB_NAME, label, &truncated) ||
	    rb_iseq_file(body, n->file, &truncated))
		return -1;
	if (truncated)
		add(VT_RB_L_TRUNCATED, 1);
	err = bpf_map_update_elem(&rb_frame_names, k, n, BPF_NOEXIST);
	if (err && err != -EEXIST)
		add(VT_RB_L_FRAMES_FULL, 1);
	return 0;
}

/* One control frame (bpf_loop's callback): 0 on to the caller, 1 done. */
static long rb_stack_step(__u64 i, void *ctx)
{
	__u64 iseq = 0, ep = 0, pc = 0, flags = 0, body = 0, enc = 0, owner;
	struct rb_stack_walk *w;
	struct vt_rb_stack *st;
	__u32 zero = 0, d, line;

	w = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!w)
		return 1;
	st = &w->st;
	if (!w->cfp || w->cfp + rb_layout.cfp_size > w->end) {
		w->root = 1;
		return 1;
	}
	if (bpf_probe_read_user(&iseq, sizeof(iseq), (void *)(w->cfp + rb_layout.cfp_iseq)) ||
	    bpf_probe_read_user(&ep, sizeof(ep), (void *)(w->cfp + rb_layout.cfp_ep)) ||
	    bpf_probe_read_user(&pc, sizeof(pc), (void *)(w->cfp + rb_layout.cfp_pc))) {
		st->flags |= VT_RB_STACK_BAD;
		return 1;
	}
	w->cfp += rb_layout.cfp_size;
	/* a dummy frame (no iseq), one not yet running (no pc: Ruby's
	 * backtraces skip it too) or a C method's */
	if (!iseq || !pc || bpf_probe_read_user(&flags, sizeof(flags), (void *)ep) ||
	    (flags & rb_layout.frame_cframe))
		return 0;
	d = st->depth;
	if (d >= VT_RB_STACK_MAX) {
		st->flags |= VT_RB_STACK_CUT;
		return 1;
	}
	if (rb_iseq_body(iseq, &body, &enc)) {
		st->flags |= VT_RB_STACK_BAD;
		return 1;
	}
	line = rb_line_at(body, pc > enc ? (pc - enc) / 8 - 1 : 0);
	owner = rb_env_owner(ep, flags);
	/* in the walk's state, not on the BPF stack, which is full */
	w->fk.code = rb_code_id(body, enc);
	w->fk.owner = owner;
	if (rb_learn_frame(&w->fk, body)) {
		st->flags |= VT_RB_STACK_BAD;
		return 1;
	}
	st->f[d & (VT_RB_STACK_SLOTS - 1)].code = w->fk.code;
	st->f[d & (VT_RB_STACK_SLOTS - 1)].owner = owner;
	st->f[d & (VT_RB_STACK_SLOTS - 1)].line = line;
	st->f[d & (VT_RB_STACK_SLOTS - 1)].pad = 0;
	st->depth = d + 1;
	w->hash = (((w->hash ^ w->fk.code) * RB_HASH_MUL ^ owner) * RB_HASH_MUL ^ line) * RB_HASH_MUL;
	return 0;
}

/* bpf_loop's callback over a newly interned stack: name frame i's owner
 * (apart from the walk, whose callback has no BPF stack left for it). */
static long rb_stack_owner(__u64 i, void *ctx)
{
	struct rb_stack_walk *w;
	__u32 zero = 0;

	w = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!w || i >= w->st.depth)
		return 1;
	learn_class_name(w->st.f[i & (VT_RB_STACK_SLOTS - 1)].owner);
	return 0;
}

/* The id of the thread's whole Ruby stack (its context ec), interned in
 * rb_stacks; 0 when it has no Ruby frame. Losses are counted. */
static __always_inline __u64 rb_stack_id(__u64 ec)
{
	struct rb_stack_walk *w;
	__u64 id;
	__u32 zero = 0;
	long err;

	w = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!w)
		return 0;
	/* end: vm_stack + its size in VALUEs (the size read into root first) */
	if (!ec || bpf_probe_read_user(&w->cfp, sizeof(w->cfp), (void *)(ec + rb_layout.ec_cfp)) ||
	    bpf_probe_read_user(&w->end, sizeof(w->end), (void *)(ec + rb_layout.ec_vm_stack)) ||
	    bpf_probe_read_user(&w->root, sizeof(w->root), (void *)(ec + rb_layout.ec_vm_stack_size))) {
		add(VT_RB_L_STACK_BAD, 1);
		return 0;
	}
	/* less the root frame, which Ruby's backtraces never show (on the
	 * main thread the top-level binding's <main>; a dummy on others) */
	w->end += w->root * 8 - rb_layout.cfp_size;
	w->st.depth = 0;
	w->st.flags = 0;
	w->hash = 0xcbf29ce484222325ULL;
	w->root = 0;
	bpf_loop(RB_STACK_SCAN, rb_stack_step, NULL, 0);
	if (!w->root && !(w->st.flags & VT_RB_STACK_BAD))
		w->st.flags |= VT_RB_STACK_CUT;
	if (w->st.flags & VT_RB_STACK_CUT)
		add(VT_RB_L_STACK_CUT, 1);
	if (w->st.flags & VT_RB_STACK_BAD)
		add(VT_RB_L_STACK_BAD, 1);
	if (!w->st.depth)
		return 0;
	id = (w->hash ^ w->st.flags) | 1;
	if (bpf_map_lookup_elem(&rb_stacks, &id))
		return id;
	bpf_loop(w->st.depth, rb_stack_owner, NULL, 0);
	err = bpf_map_update_elem(&rb_stacks, &id, &w->st, BPF_NOEXIST);
	if (err && err != -EEXIST)
		add(VT_RB_L_STACKS_FULL, 1);
	return id;
}

#endif /* VMTRACE_RUBY_STACK_BPF_H */
