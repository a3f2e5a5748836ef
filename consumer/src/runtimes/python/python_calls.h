/*
 * python_calls.h: calls per Python function for stock CPython. python.bpf.c
 * counts function__entry and function__return per code object (funcs), or
 * per the probe's strings where the frame could not be read (funcs_named);
 * a function's calls are the larger of the two, and a row of the second
 * kind folds into the one function of its name and file when there is one.
 */
#ifndef VMTRACE_PYTHON_CALLS_H
#define VMTRACE_PYTHON_CALLS_H

#include <bpf/libbpf.h>

#include "profile/profile.h"
#include "runtimes/adapter.h"

struct vt_py_call_maps {
	struct bpf_map *funcs, *funcs_named, *codes;
};

/* Every function's calls as call rows of out. 0, or a negative errno. */
int vt_py_add_calls(struct vt_adapter *a, const struct vt_py_call_maps *m, struct vt_profile *out);

#endif /* VMTRACE_PYTHON_CALLS_H */
