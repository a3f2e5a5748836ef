/*
 * python_stacks.h: --stack vm for stock CPython: a stack id of the BPF
 * py_stacks map (runtimes/python/python_stack.bpf.h) as a root-to-leaf stack of the
 * profile, each frame named by its code's co_qualname at co_filename and
 * the line of the instruction it runs (co_firstlineno when unknown).
 */
#ifndef VMTRACE_PYTHON_STACKS_H
#define VMTRACE_PYTHON_STACKS_H

#include <stdint.h>

#include <bpf/libbpf.h>

#include "profile/profile.h"

struct vt_py_stack_maps {
	struct bpf_map *stacks, *codes, *lines; /* py_stacks, codes, py_lines */
};

/* Stack id as a stack of out, *sid its number. One the map does not hold
 * is the frame "[stack lost]" and adds samples to *missing. 0 or -ENOMEM. */
int vt_py_stack_of(const struct vt_py_stack_maps *m, uint64_t id, struct vt_profile *out,
		   uint64_t samples, uint32_t *sid, uint64_t *missing);

#endif /* VMTRACE_PYTHON_STACKS_H */
