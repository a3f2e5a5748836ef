/*
 * ruby_chain.bpf.h: --stack vm for stock Ruby without the whole walk at
 * every object. What an allocation's key takes from the thread's frames
 * (its site, its method, its stack id) is a function of the raw words of
 * its control frames: each frame's iseq and pc, and of its env the method
 * entry or cref (ep[-2]) and the C-frame and local-env flags (ep[0]), plus
 * for the innermost Ruby frame the method entry of its method's own env.
 * Those words are read in large pieces (eight control frames a read, they
 * are contiguous in the VM stack, and one 24-byte read an env) and hashed;
 * the hash keys an LRU cache of the key's site, method and stack id, which
 * the full walk (ruby_frame.bpf.h, ruby_stack.bpf.h) fills on a miss.
 *
 * Frame addresses, self and ep are left out of the hash on purpose: a frame
 * popped and pushed again by another call at the same place differs in its
 * iseq, pc or method entry, which are in it, and a loop calling the same
 * methods on other objects keeps hitting. Code freed by GC whose
 * addresses are reused is told apart as the frame-name cache tells it
 * (rb_code_id()): a pc is an address in the iseq's instruction buffer, so
 * the new code would need both the old iseq's address and its buffer's.
 *
 * A walk with a loss (an unreadable frame, a cut stack, a full map) is not
 * cached, so every such allocation is counted again; the per-allocation
 * counts a cached key stands for (a truncated name, no method) are counted
 * again at each hit. Included by ruby.bpf.c after ruby_stack.bpf.h.
 */
#ifndef VMTRACE_RUBY_CHAIN_BPF_H
#define VMTRACE_RUBY_CHAIN_BPF_H

#define RB_CHAIN_FRAMES 8            /* control frames a read (64 bytes each in 3.1) */
#define RB_CHAIN_WORDS 64
#define RB_CHAIN_READS (RB_STACK_SCAN / RB_CHAIN_FRAMES)
#define RB_CHAIN_MUL 0x9e3779b97f4a7c15ULL
#define RB_CHAIN_REPLAY_TRUNCATED 0x1u
#define RB_CHAIN_REPLAY_NO_METHOD 0x2u

/* The part of struct vt_rb_alloc_key the frames give, and what to count
 * again on each hit. */
struct rb_chain_val {
	__u32 line, replay;
	char mklass[VT_RB_NAME];
	char method[VT_RB_NAME];
	char file[VT_RB_FILE];
	__u64 stack;
};

VT_MAP(rb_chains, BPF_MAP_TYPE_LRU_HASH, __u64, struct rb_chain_val, 8192);

enum rb_chain_state { RB_CHAIN_WALKING, RB_CHAIN_WHOLE, RB_CHAIN_UNCACHED };

struct rb_chain_walk {
	__u64 cfp, end, hash;
	__u64 leaf_ep, leaf_flags;   /* the frame the site walk takes (0: none) */
	__u32 passed, kept;          /* control frames passed; frames the stack keeps */
	__u32 state;                 /* enum rb_chain_state */
	__u32 pad;
	__u64 env[3];                /* ep[-2] (method entry or cref), ep[-1], ep[0] (flags) */
	__u64 ec[4];                 /* the execution context's first words */
	__u64 f[RB_CHAIN_WORDS];     /* RB_CHAIN_FRAMES control frames */
};

VT_MAP(chain_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct rb_chain_walk, 1);

static __always_inline __u64 rb_chain_mix(__u64 h, __u64 v)
{
	h = (h ^ v) * RB_CHAIN_MUL;
	return h ^ (h >> 29);
}

/* One read of up to RB_CHAIN_FRAMES control frames, each hashed (bpf_loop's
 * callback): 0 on, 1 done (state says how). */
static long rb_chain_read(__u64 i, void *ctx)
{
	__u64 frames, len, mask = rb_layout.frame_cframe | rb_layout.env_local, h;
	__u32 zero = 0, words = rb_layout.cfp_size / 8, j;
	struct rb_chain_walk *w = bpf_map_lookup_elem(&chain_scratch, &zero);

	if (!w)
		return 1;
	if (!w->cfp || w->cfp + rb_layout.cfp_size > w->end) {
		w->state = RB_CHAIN_WHOLE;
		return 1;
	}
	frames = (w->end - w->cfp) / rb_layout.cfp_size;
	if (frames > RB_CHAIN_FRAMES)
		frames = RB_CHAIN_FRAMES;
	len = frames * rb_layout.cfp_size;
	if (!words || len > sizeof(w->f) || !len ||
	    bpf_probe_read_user(w->f, len, (void *)w->cfp)) {
		w->state = RB_CHAIN_UNCACHED;
		return 1;
	}
	h = w->hash;
	for (j = 0; j < RB_CHAIN_FRAMES; j++) {
		__u32 at = j * words;
		__u64 iseq, pc, ep, flags;

		if (j >= frames)
			break;
		iseq = w->f[(at + rb_layout.cfp_iseq / 8) & (RB_CHAIN_WORDS - 1)];
		pc = w->f[(at + rb_layout.cfp_pc / 8) & (RB_CHAIN_WORDS - 1)];
		ep = w->f[(at + rb_layout.cfp_ep / 8) & (RB_CHAIN_WORDS - 1)];
		if (!iseq) {            /* skipped by every walk: only its place counts */
			h = rb_chain_mix(h, 1);
			continue;
		}
		if (bpf_probe_read_user(w->env, sizeof(w->env), (void *)(ep - 16))) {
			w->state = RB_CHAIN_UNCACHED;
			return 1;
		}
		flags = w->env[2] & mask;
		h = rb_chain_mix(rb_chain_mix(rb_chain_mix(rb_chain_mix(h, iseq), pc), w->env[0]), flags);
		if (!(flags & rb_layout.frame_cframe)) {
			if (!w->leaf_ep && w->passed + j < RB_FRAME_SCAN) {
				w->leaf_ep = ep;
				w->leaf_flags = w->env[2];
			}
			/* a stack this deep may be cut: the full walk counts it */
			if (pc && ++w->kept >= VT_RB_STACK_MAX - 1) {
				w->state = RB_CHAIN_UNCACHED;
				return 1;
			}
		}
	}
	w->hash = h;
	w->passed += frames;
	w->cfp += frames * rb_layout.cfp_size;
	return 0;
}

/* The method entry of the innermost Ruby frame's method (its own env, up
 * the env chain as rb_frame_method goes), into the hash. 0, or -1 when an
 * env cannot be read. */
static __always_inline int rb_chain_method(struct rb_chain_walk *w)
{
	__u64 ep = w->leaf_ep, flags = w->leaf_flags;
	int i;

	for (i = 0; i < RB_ENV_SCAN; i++) {
		if (bpf_probe_read_user(w->env, sizeof(w->env), (void *)(ep - 16)))
			return -1;
		flags = w->env[2];
		if (flags & rb_layout.env_local)
			break;
		ep = w->env[1] & ~3ULL;
	}
	w->hash = rb_chain_mix(w->hash, i == RB_ENV_SCAN ? 0 : w->env[0]);
	return 0;
}

/* The hash of the thread's frames (context ec; slot: its process under
 * record --all, whose addresses mean nothing in another) into the walk's
 * scratch; a cached key part for it into key: 1. 0: the full walk
 * must run (rb_chain_store then caches it when the scratch says it may). */
static __noinline int rb_chain_hit(__u64 ec, __u64 slot, struct vt_rb_alloc_key *key)
{
	struct rb_chain_walk *w;
	struct rb_chain_val *v;
	__u32 zero = 0;
	__u64 *e;

	w = bpf_map_lookup_elem(&chain_scratch, &zero);
	if (!w)
		return 0;
	w->state = RB_CHAIN_UNCACHED;
	e = w->ec;                   /* off the BPF stack, which the probe's walks fill */
	if (!ec || bpf_probe_read_user(w->ec, sizeof(w->ec), (void *)ec))
		return 0;
	/* to the real end of the VM stack: the site walk looks at the root frame too */
	w->cfp = e[rb_layout.ec_cfp / 8 & 3];
	w->end = e[rb_layout.ec_vm_stack / 8 & 3] + e[rb_layout.ec_vm_stack_size / 8 & 3] * 8;
	w->hash = rb_chain_mix(0xcbf29ce484222325ULL ^ track_methods, slot);
	w->leaf_ep = 0;
	w->leaf_flags = 0;
	w->passed = 0;
	w->kept = 0;
	w->state = RB_CHAIN_WALKING;
	bpf_loop(RB_CHAIN_READS, rb_chain_read, NULL, 0);
	if (w->state != RB_CHAIN_WHOLE) {
		w->state = RB_CHAIN_UNCACHED;
		return 0;
	}
	if (track_methods && w->leaf_ep && rb_chain_method(w)) {
		w->state = RB_CHAIN_UNCACHED;
		return 0;
	}
	v = bpf_map_lookup_elem(&rb_chains, &w->hash);
	if (!v) {
		rb_event_counted_reset();
		return 0;
	}
	key->line = v->line;
	key->stack = v->stack;
	__builtin_memcpy(key->mklass, v->mklass, sizeof(key->mklass));
	__builtin_memcpy(key->method, v->method, sizeof(key->method));
	__builtin_memcpy(key->file, v->file, sizeof(key->file));
	if (v->replay & RB_CHAIN_REPLAY_TRUNCATED)
		add(VT_RB_L_TRUNCATED, 1);
	if (v->replay & RB_CHAIN_REPLAY_NO_METHOD)
		add(VT_RB_C_NO_METHOD, 1);
	return 1;
}

/* After the full walk of a miss: cache what it gave, unless it counted a
 * loss (then every such allocation walks, and counts it, again). A call of
 * its own, as rb_chain_hit: the probe's BPF stack is full with the walks. */
static __noinline void rb_chain_store(const struct vt_rb_alloc_key *key, int truncated)
{
	__u32 zero = 0, seen = rb_event_counted();
	__u32 fine = 1u << VT_RB_L_TRUNCATED | 1u << VT_RB_C_NO_METHOD;
	struct rb_chain_walk *w = bpf_map_lookup_elem(&chain_scratch, &zero);
	struct rb_chain_val *v;

	if (!w || w->state != RB_CHAIN_WHOLE || (seen & ~fine))
		return;
	/* the value is built in the walk's frame buffer, done with by now */
	v = (struct rb_chain_val *)w->f;
	v->line = key->line;
	v->replay = (truncated ? RB_CHAIN_REPLAY_TRUNCATED : 0) |
		    (seen & 1u << VT_RB_C_NO_METHOD ? RB_CHAIN_REPLAY_NO_METHOD : 0);
	v->stack = key->stack;
	__builtin_memcpy(v->mklass, key->mklass, sizeof(v->mklass));
	__builtin_memcpy(v->method, key->method, sizeof(v->method));
	__builtin_memcpy(v->file, key->file, sizeof(v->file));
	bpf_map_update_elem(&rb_chains, &w->hash, v, BPF_ANY);
}

#endif /* VMTRACE_RUBY_CHAIN_BPF_H */
