/*
 * python_maps.h: what python.bpf.c and runtime_python.c share, for
 * CPython's own USDT probes (provider "python").
 */
#ifndef VMTRACE_PYTHON_MAPS_H
#define VMTRACE_PYTHON_MAPS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define VT_PY_FILE 128
#define VT_PY_NAME 64
#define VT_PY_GENS 3             /* CPython's GC generations 0, 1, 2 */

struct vt_py_func_key {
	char file[VT_PY_FILE];
	char func[VT_PY_NAME];
};

struct vt_py_func_val {
	__u64 entries;           /* function__entry hits */
	__u64 returns;           /* function__return hits */
};

/* One collection, streamed to userspace through a ring buffer. */
struct vt_py_gc_event {
	__u32 generation;
	__u32 pad;
	__u64 duration_ns;
	__u64 collected;         /* gc__done's argument: unreachable objects found */
	__u64 end_ns;
};

enum vt_py_counter {
	VT_PY_C_ENTRIES,         /* function__entry hits */
	VT_PY_C_RETURNS,         /* function__return hits */
	VT_PY_C_UNMATCHED,       /* returns with no entry on the thread's stack */
	VT_PY_C_GC0,             /* completed collections per generation */
	VT_PY_C_GC1,
	VT_PY_C_GC2,
	VT_PY_C_COLLECTED,       /* objects collected, all generations */
	/* losses */
	VT_PY_L_UNREADABLE,
	VT_PY_L_TRUNCATED,
	VT_PY_L_MAP_FULL,
	VT_PY_L_GC_UNPAIRED,
	VT_PY_L_GC_BUF_FULL,
	VT_PY_COUNTERS,
};

#endif /* VMTRACE_PYTHON_MAPS_H */
