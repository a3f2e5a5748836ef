/*
 * python_interp.h: the places in CPython 3.11's binary (the python3.11
 * executable or libpython) that runtime_python.c probes and runtimes/python/python.bpf.c
 * reads, found from its symbols and code (elf_code.h), and where the
 * running process has loaded it.
 */
#ifndef VMTRACE_PYTHON_INTERP_H
#define VMTRACE_PYTHON_INTERP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "process/usdt_notes.h"

struct vt_py_interp {
	uint64_t runtime;        /* _PyRuntime, link-time address */
	uint64_t code_type;      /* PyCode_Type, link-time: a frame's f_code is checked against it */
	uint64_t hook;           /* where the object hook is probed, link-time */
	uint64_t hook_offset;    /* ... and its file offset */
};

/* CPython 3.11's _PyRuntime and tracemalloc's object hook
 * (_PyTraceMalloc_NewReference, local: the call in the exported
 * _Py_NewReference), probed past its own test of the tracing flag (a uprobe
 * on a rip-relative load is single-stepped, a second trap). 0, or -ENOTSUP
 * (not 3.11) / -ENOEXEC (unknown code), with a one-line reason in why. */
int vt_py_find_interp(const char *path, struct vt_py_interp *out, char *why, size_t whylen);

/* Where the module is loaded in pid, less its link-time addresses: 0 for a
 * fixed executable; for a shared libpython, where its first byte is mapped.
 * false when not known yet (a command not yet exec'd). */
bool vt_py_load_bias(const char *path, pid_t pid, uint64_t *bias);

/* In the running pid, with the module at bias: is PyCode_Type where the
 * binary says, named "code"? The frame walk checks each f_code against
 * it. 0, or -ENOEXEC with a one-line reason in why. */
int vt_py_check_code_type(pid_t pid, const struct vt_py_interp *in, uint64_t bias, char *why,
			  size_t whylen);

/* function__entry/return of provider fire inside dtrace_function_entry/
 * return(frame), small functions of ceval.c that begin by reading
 * frame->f_code: the file offsets of the first instruction of the one
 * around probe's site in path, and of the probe's semaphore. 0, -ENOENT (no
 * such probe with a semaphore), -ENOEXEC (code of another shape). */
int vt_py_frame_helper(const struct vt_usdt_list *pl, const char *provider, const char *path,
		       const char *probe, uint64_t *func_offset, uint64_t *sem_offset);

#endif /* VMTRACE_PYTHON_INTERP_H */
