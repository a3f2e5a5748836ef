/*
 * ruby_stacks.h: --stack vm for stock Ruby: a stack id of the BPF
 * rb_stacks map (runtimes/ruby/ruby_stack.bpf.h) as a root-to-leaf stack of the
 * profile, each frame named `Owner#method` (or its label) at file:line.
 */
#ifndef VMTRACE_RUBY_STACKS_H
#define VMTRACE_RUBY_STACKS_H

#include <stdint.h>

#include <bpf/libbpf.h>

#include "profile/profile.h"

struct vt_rb_stack_maps {
	struct bpf_map *stacks, *frames, *classes; /* rb_stacks, rb_frame_names, class_names */
};

/* Stack id as a stack of out, *sid its number. One the map does not hold
 * is the frame "[stack lost]" and adds samples to *missing. 0 or -ENOMEM. */
int vt_rb_stack_of(const struct vt_rb_stack_maps *m, uint64_t id, struct vt_profile *out,
		   uint64_t samples, uint32_t *sid, uint64_t *missing);

#endif /* VMTRACE_RUBY_STACKS_H */
