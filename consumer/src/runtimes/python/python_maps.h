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

/* A code object, told apart from a later one at the same address (code
 * objects are freed and their memory reused) by its co_qualname and
 * co_filename objects and first line (every module's code is "<module>" at
 * line 1: the file tells them apart). */
struct vt_py_code_id {
	__u64 code;              /* PyCodeObject *, 0: none */
	__u64 qualname;          /* its co_qualname (a str *) */
	__u64 filename;          /* its co_filename (a str *) */
	__u32 firstlineno;
	__u32 instr;             /* a stack's frame: the instruction it runs, its
				  * index in the code + 1 (0: unknown); 0 in every key */
};

/* A function: its code object when the frame could be read (the name,
 * file and first line are in the codes map), else the probe's strings. */
struct vt_py_func_key {
	struct vt_py_code_id code; /* code.code 0: not read */
	char file[VT_PY_FILE];   /* "" when code is set */
	char func[VT_PY_NAME];
};

/* One object: its type, and the code object of the innermost Python
 * function running when it was made (0: none, or not read). */
struct vt_py_alloc_key {
	__u64 type;              /* PyTypeObject * */
	struct vt_py_code_id code;
	__u64 stack;             /* --stack vm: its id in py_stacks; 0 none */
};

/* --stack vm: a thread's whole chain of Python frames, innermost first,
 * each by its code object (named in the codes map). */
#define VT_PY_STACK_MAX 127      /* frames kept; deeper stacks are cut */
#define VT_PY_STACK_SLOTS 128    /* a power of two, for the verifier's bounds */
#define VT_PY_STACK_CUT 1u       /* deeper than VT_PY_STACK_MAX */
#define VT_PY_STACK_BAD 2u       /* ended at an unreadable frame */

struct vt_py_stack {
	__u32 depth;
	__u32 flags;             /* VT_PY_STACK_* */
	struct vt_py_code_id f[VT_PY_STACK_SLOTS];
};

/* --stack vm: a code object's co_linetable (3.11's location table), read
 * once per code object in a stack, so a frame's line is its instruction's,
 * not the function's first; a longer table is cut (frames past the cut
 * show the first line). */
#define VT_PY_LINETABLE 1024     /* a power of two, for the verifier's bounds */

struct vt_py_lines {
	__u32 len;               /* bytes of table kept */
	__u32 pad;
	__u8 table[VT_PY_LINETABLE];
};

struct vt_py_alloc_val {
	__u64 count;
	__u64 bytes;
};

/* A type, read the first time one of its objects is made. */
struct vt_py_type {
	char name[VT_PY_NAME];   /* tp_name */
	__s64 basicsize;         /* tp_basicsize */
	__s64 itemsize;          /* tp_itemsize: > 0, the items are not in bytes */
	__u64 flags;             /* tp_flags */
	__u64 bytes;             /* what one object counts: basicsize and the pre-header */
};

/* A code object, read the first time it is seen. */
struct vt_py_code {
	char qualname[VT_PY_NAME]; /* co_qualname */
	char file[VT_PY_FILE];     /* co_filename */
	__u32 firstlineno;         /* co_firstlineno */
	__u32 pad;
};

struct vt_py_func_val {
	__u64 entries;           /* function__entry hits */
	__u64 returns;           /* function__return hits */
};

/* One collection, streamed to userspace through a ring buffer. */
struct vt_py_gc_event {
	__u32 generation;
	__u32 tid;               /* the collecting thread */
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
	VT_PY_C_OBJECTS,         /* objects counted (tracemalloc's hook) */
	VT_PY_C_NO_FRAME,        /* objects made outside any Python function */
	/* losses */
	VT_PY_L_UNREADABLE,
	VT_PY_L_TRUNCATED,
	VT_PY_L_MAP_FULL,
	VT_PY_L_GC_UNPAIRED,
	VT_PY_L_GC_BUF_FULL,
	VT_PY_L_ALLOC_MAP_FULL,  /* allocation map full: the object is not counted */
	VT_PY_L_NAMES_FULL,      /* type or code map full: unnamed */
	VT_PY_L_LINES_FULL,      /* --stack vm: line table map full: frames at their first line */
	VT_PY_L_STACK_CUT,       /* --stack vm: stack cut at VT_PY_STACK_MAX frames */
	VT_PY_L_STACK_BAD,       /* ... ended at an unreadable frame */
	VT_PY_L_STACKS_FULL,     /* ... stack map full (stack lost) */
	VT_PY_L_PROC_FULL,       /* record --all: process table full, the event not counted */
	VT_PY_L_PROC_HIGH_PTR,   /* record --all: a pointer above 2^47, the event not counted */
	VT_PY_COUNTERS,
};

#endif /* VMTRACE_PYTHON_MAPS_H */
