/*
 * ruby_frame.h: the layout of Ruby's frames that runtimes/ruby/ruby_frame.bpf.h walks,
 * shared with userspace (src/ruby_layout.c holds the table of it per Ruby
 * version and sets it before load).
 *
 * The walk: the thread's execution context (ruby_current_ec, a TLS variable
 * of libruby, through the thread's DTV) -> ec->cfp, the innermost control
 * frame -> the first Ruby-level frame (one whose env is not a C frame's) ->
 * its iseq -> iseq->body: location.pathobj (the file), location.label (the
 * method or block), and the line of cfp->pc in body->insns_info (Ruby's own
 * succinct-bitvector index, as rb_vm_get_sourceline reads it). The method:
 * up the frame's env chain (ep[-1]) to the method's own env, whose ep[-2]
 * is its method entry (an imemo_ment): owner's name and the iseq's
 * base_label, `Owner#name`, as Ruby's method__entry names it.
 */
#ifndef VMTRACE_RUBY_FRAME_H
#define VMTRACE_RUBY_FRAME_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

struct vt_rb_frame_layout {
	__u32 ec_vm_stack;        /* rb_execution_context_t: vm_stack */
	__u32 ec_vm_stack_size;   /* ... its size in VALUEs */
	__u32 ec_cfp;             /* ... the innermost control frame */
	__u32 cfp_size;           /* sizeof(rb_control_frame_t); the caller is at cfp + size */
	__u32 cfp_pc, cfp_iseq, cfp_ep;
	__u32 iseq_body;          /* rb_iseq_t: body */
	__u32 body_encoded;       /* rb_iseq_constant_body: iseq_encoded */
	__u32 body_path;          /* location.pathobj (a String, or [path, realpath]) */
	__u32 body_label;         /* location.label */
	__u32 body_base_label;    /* location.base_label: the method of a block too */
	__u32 body_insns;         /* insns_info.body */
	__u32 body_insns_size;    /* insns_info.size */
	__u32 body_succ;          /* insns_info.succ_index_table */
	__u32 insn_entry_size;    /* sizeof(struct iseq_insn_info_entry); line_no first */
	__u32 frame_cframe;       /* VM_FRAME_FLAG_CFRAME in ep[0] */
	__u32 env_local;          /* VM_ENV_FLAG_LOCAL in ep[0]: a method's (not a block's) env */
	__u32 me_owner;           /* rb_method_entry_t: owner, the class defining the method */
};

#endif /* VMTRACE_RUBY_FRAME_H */
