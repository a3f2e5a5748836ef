/*
 * ruby_frame.bpf.h: walk a Ruby 3.x thread's frames in BPF, at any probe of
 * a thread that holds the GVL (an allocation), with the layout userspace
 * set (ruby_frame.h, src/ruby_layout.c). Ruby's own rb_source_location()
 * does the same walk: the innermost Ruby-level frame's file and the line of
 * its pc, which is what ObjectSpace.trace_object_allocations and Ruby's
 * USDT probes report.
 *
 * Every read is checked; an iseq that is not an imemo_iseq means the
 * layout is not this process's, and the caller counts it as a loss.
 * Kept apart from ruby.bpf.c so a whole-stack walk can reuse it.
 */
#ifndef VMTRACE_RUBY_FRAME_BPF_H
#define VMTRACE_RUBY_FRAME_BPF_H

#include "runtimes/ruby/ruby_frame.h"

const volatile struct vt_rb_frame_layout rb_layout = {};
/* link-time address of the tls_index (module, offset) of ruby_current_ec */
const volatile __u64 rb_ec_tls_index = 0;

#define RB_FRAME_SCAN 8           /* C frames skipped above the Ruby one */
#define RB_T_ARRAY 0x07
#define RB_T_IMEMO 0x1a
#define RB_IMEMO_ISEQ 7
#define RB_ARY_EMBED (1ULL << 13) /* RARRAY_EMBED_FLAG = FL_USER1 */
#define RB_SUCC_IMM 54            /* succ_index_table: IMMEDIATE_TABLE_SIZE */
#define RB_SUCC_BLOCK 80          /* sizeof(struct succ_dict_block) */
#define TLS_DTV_UNALLOCATED (~0ULL)

enum vt_rb_walk { VT_RB_WALK_OK, VT_RB_WALK_NONE, VT_RB_WALK_BAD };

/* The running thread's rb_execution_context_t: ruby_current_ec, through
 * the thread's DTV (glibc x86-64: fs:8, 16 bytes an entry), with libruby's
 * module id and offset from its GOT (base: where libruby is mapped). */
static __always_inline __u64 rb_current_ec(__u64 base)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 fs = BPF_CORE_READ(task, thread.fsbase), ti[2], dtv = 0, block = 0, ec = 0;

	if (!rb_ec_tls_index || bpf_probe_read_user(ti, sizeof(ti), (void *)(base + rb_ec_tls_index)) ||
	    ti[0] > 4096 || bpf_probe_read_user(&dtv, sizeof(dtv), (void *)(fs + 8)) || !dtv ||
	    bpf_probe_read_user(&block, sizeof(block), (void *)(dtv + ti[0] * 16)) ||
	    block == TLS_DTV_UNALLOCATED || !block ||
	    bpf_probe_read_user(&ec, sizeof(ec), (void *)(block + ti[1])))
		return 0;
	return ec;
}

/* popcount of a 64-bit word (what rb_popcount64 computes) */
static __always_inline __u64 rb_popcount64(__u64 x)
{
	x = x - ((x >> 1) & 0x5555555555555555ULL);
	x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (x * 0x0101010101010101ULL) >> 56;
}

/* The line of instruction pos of an iseq body: insns_info.body[i].line_no,
 * i from Ruby's succinct index (iseq.c: succ_index_lookup). 0 unknown. */
static __always_inline __u32 rb_line_at(__u64 body, __u64 pos)
{
	__u64 insn[4] = {}, entries, size, succ, index = 0, w = 0;
	__s32 line = 0;

	/* insns_info: body, positions, size, succ_index_table */
	if (bpf_probe_read_user(insn, sizeof(insn), (void *)(body + rb_layout.body_insns)))
		return 0;
	entries = insn[0];
	size = (__u32)insn[(rb_layout.body_insns_size - rb_layout.body_insns) / 8 & 3];
	succ = insn[(rb_layout.body_succ - rb_layout.body_insns) / 8 & 3];
	if (!entries || !size)
		return 0;
	if (size == 1) {
		index = 1;
	} else if (!succ) {
		return 0;
	} else if (pos < RB_SUCC_IMM) {
		if (bpf_probe_read_user(&w, sizeof(w), (void *)(succ + (pos / 9) * 8)))
			return 0;
		index = (w >> ((pos % 9) * 7)) & 0x7f;
	} else {
		__u64 bit = (pos - RB_SUCC_IMM) % 512, small = bit / 64, blk[2] = {}, bits = 0, sb = 0;
		__u64 at = succ + RB_SUCC_IMM / 9 * 8 + (pos - RB_SUCC_IMM) / 512 * RB_SUCC_BLOCK;

		/* struct succ_dict_block { unsigned rank; u64 small_block_ranks; u64 bits[8]; } */
		if (bpf_probe_read_user(blk, sizeof(blk), (void *)at) ||
		    bpf_probe_read_user(&bits, sizeof(bits), (void *)(at + 16 + (small & 7) * 8)))
			return 0;
		if (small)
			sb = (blk[1] >> ((small - 1) * 9)) & 0x1ff;
		index = (__u32)blk[0] + sb + rb_popcount64(bits << (63 - bit % 64));
	}
	if (!index || index > size ||
	    bpf_probe_read_user(&line, sizeof(line), (void *)(entries + (index - 1) * rb_layout.insn_entry_size)))
		return 0;
	return line > 0 ? (__u32)line : 0;
}

/* A Ruby String's text into dst (size a power of two), NUL-terminated;
 * *truncated when longer. 0, or -1 when str is no String. */
static __always_inline int rb_read_string(char *dst, __u32 size, __u64 str, bool *truncated)
{
	__u64 h[4] = {}, len, ptr;

	if (bpf_probe_read_user(h, sizeof(h), (void *)str) || (h[0] & VT_RB_T_MASK) != RB_T_STRING)
		return -1;
	if (h[0] & RB_STR_NOEMBED) {
		len = h[2];
		ptr = h[3];
	} else {
		len = (h[0] >> RB_STR_EMBED_LEN_SHIFT) & 0x1f;
		ptr = str + 16;
	}
	if (len >= size) {
		len = size - 1;
		*truncated = true;
	}
	if (len && bpf_probe_read_user(dst, len & (size - 1), (void *)ptr))
		return -1;
	dst[len & (size - 1)] = '\0';
	return 0;
}

/* The file of an iseq body into file (VT_RB_FILE bytes). 0 or -1. */
static __always_inline int rb_iseq_file(__u64 body, char *file, bool *truncated)
{
	__u64 path = 0, v[2] = {};

	if (bpf_probe_read_user(&path, sizeof(path), (void *)(body + rb_layout.body_path)))
		return -1;
	/* pathobj: the path, or [path, realpath] */
	if (!bpf_probe_read_user(v, sizeof(v), (void *)path) && (v[0] & VT_RB_T_MASK) == RB_T_ARRAY) {
		__u64 at = v[0] & RB_ARY_EMBED ? path + 16 : 0;

		if (!at && bpf_probe_read_user(&at, sizeof(at), (void *)(path + 32)))
			return -1;
		if (bpf_probe_read_user(&path, sizeof(path), (void *)at))
			return -1;
	}
	return rb_read_string(file, VT_RB_FILE, path, truncated);
}

/* Whether iseq is an imemo_iseq (the layout is this process's): its body
 * and iseq_encoded then. 0 or -1. */
static __always_inline int rb_iseq_body(__u64 iseq, __u64 *body, __u64 *enc)
{
	__u64 flags = 0;

	if (bpf_probe_read_user(&flags, sizeof(flags), (void *)iseq) ||
	    (flags & VT_RB_T_MASK) != RB_T_IMEMO || ((flags >> 12) & 0xf) != RB_IMEMO_ISEQ ||
	    bpf_probe_read_user(body, sizeof(*body), (void *)(iseq + rb_layout.iseq_body)) ||
	    bpf_probe_read_user(enc, sizeof(*enc), (void *)(*body + rb_layout.body_encoded)))
		return -1;
	return 0;
}

/* The innermost Ruby-level frame of the thread whose context is ec: its
 * file into file (VT_RB_FILE bytes), its line; its env (ep) and iseq body
 * for rb_frame_method(). */
static __always_inline enum vt_rb_walk rb_walk_site(__u64 ec, char *file, __u32 *line, __u64 *ep_out,
						   __u64 *body_out, bool *truncated)
{
	__u64 e[4] = {}, cfp, end, f[8] = {}, flags = 0, iseq = 0, pc = 0, body = 0, enc = 0;
	int i;

	if (!ec || bpf_probe_read_user(e, sizeof(e), (void *)ec))
		return VT_RB_WALK_BAD;
	cfp = e[rb_layout.ec_cfp / 8 & 3];
	end = e[rb_layout.ec_vm_stack / 8 & 3] + e[rb_layout.ec_vm_stack_size / 8 & 3] * 8;
	for (i = 0; i < RB_FRAME_SCAN; i++, cfp += rb_layout.cfp_size) {
		if (!cfp || cfp + rb_layout.cfp_size > end)
			return VT_RB_WALK_NONE;   /* no Ruby frame: C code at boot or in a C thread */
		if (bpf_probe_read_user(f, sizeof(f), (void *)cfp))
			return VT_RB_WALK_BAD;
		iseq = f[rb_layout.cfp_iseq / 8 & 7];
		if (!iseq || bpf_probe_read_user(&flags, sizeof(flags), (void *)f[rb_layout.cfp_ep / 8 & 7]))
			continue;
		if (!(flags & rb_layout.frame_cframe))
			break;
	}
	if (i == RB_FRAME_SCAN)
		return VT_RB_WALK_NONE;
	pc = f[rb_layout.cfp_pc / 8 & 7];
	/* the layout is this process's only if a Ruby frame's iseq is an imemo_iseq */
	if (rb_iseq_body(iseq, &body, &enc) || rb_iseq_file(body, file, truncated))
		return VT_RB_WALK_BAD;
	*ep_out = f[rb_layout.cfp_ep / 8 & 7];
	*body_out = body;
	/* the instruction before pc, as rb_vm_get_sourceline: pc points past it */
	pc = pc > enc ? (pc - enc) / 8 - 1 : 0;
	*line = rb_line_at(body, pc);
	return VT_RB_WALK_OK;
}

#define RB_ENV_SCAN 8             /* blocks nested in one method */
#define RB_IMEMO_MENT 6

/* The method of a frame (its env ep, its iseq body): the owner class of
 * the method entry in the method's own env (a block's env leads to it
 * through ep[-1]), and the method's name (base_label, which a block's iseq
 * shares with its method) into name (VT_RB_NAME bytes). 0, or -1 when the
 * frame is no method's (top-level code, a class body). */
static __always_inline int rb_frame_method(__u64 ep, __u64 body, __u64 *owner, char *name,
					   bool *truncated)
{
	__u64 flags = 0, me = 0, label = 0;
	int i;

	for (i = 0; i < RB_ENV_SCAN; i++) {
		if (bpf_probe_read_user(&flags, sizeof(flags), (void *)ep))
			return -1;
		if (flags & rb_layout.env_local)
			break;
		/* VM_ENV_PREV_EP: ep[-1] with its guard bits cleared */
		if (bpf_probe_read_user(&ep, sizeof(ep), (void *)(ep - 8)))
			return -1;
		ep &= ~3ULL;
	}
	if (i == RB_ENV_SCAN || bpf_probe_read_user(&me, sizeof(me), (void *)(ep - 16)) || !me ||
	    bpf_probe_read_user(&flags, sizeof(flags), (void *)me) ||
	    (flags & VT_RB_T_MASK) != RB_T_IMEMO || ((flags >> 12) & 0xf) != RB_IMEMO_MENT ||
	    bpf_probe_read_user(owner, sizeof(*owner), (void *)(me + rb_layout.me_owner)) ||
	    bpf_probe_read_user(&label, sizeof(label), (void *)(body + rb_layout.body_base_label)) ||
	    rb_read_string(name, VT_RB_NAME, label, truncated))
		return -1;
	return 0;
}

#endif /* VMTRACE_RUBY_FRAME_BPF_H */
