/*
 * jvm_maps.h: what jvm.bpf.c and runtime_jvm.c share: map keys,
 * values and counter slots for HotSpot's own USDT probes (provider
 * "hotspot", in libjvm.so).
 *
 * HotSpot passes class and method names as pointers into its Symbols with
 * a length, not NUL-terminated, so the BPF side copies them into fixed-size
 * key fields.
 */
#ifndef VMTRACE_JVM_MAPS_H
#define VMTRACE_JVM_MAPS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define VT_HS_CLASS 128    /* names kept: internal class names ("java/lang/String", "[I") and method names, NUL included */

#define VT_HS_DEPTH 64     /* Java frames kept per thread for allocation sites */

/* An allocation's class and, with -XX:+DTraceMethodProbes, the Java method
 * it ran in (the innermost frame; both 0 without method probes), as
 * addresses in the JVM: the key stays small and no name is read per
 * event. Each address's name is read once, when its first row is made,
 * into the names map (struct vt_hs_name). Under record --all each
 * address (a site's when there is one) carries its process's slot
 * (procs_maps.h), and so do the names map's keys. */
struct vt_hs_alloc_key {
	__u64 klass;               /* the Klass*, or its name's bytes (object__alloc's pointer) */
	__u64 site_class;          /* the frame's class name bytes (a Symbol's body) */
	__u64 site_method;         /* the frame's method name bytes */
};

/* The name behind one address of a key, NUL-terminated. */
struct vt_hs_name {
	char s[VT_HS_CLASS];
};

/* One Java frame as method__entry named it: pointers into HotSpot's
 * Symbols, which live as long as their class, read only at an allocation. */
struct vt_hs_frame {
	__u64 klass;
	__u64 method;
	__u32 klass_len;
	__u32 method_len;
	__u32 depth;               /* its place on the stack: a slot may be reused */
	__u32 pad;
};

/* A thread's Java frames: a ring of the VT_HS_DEPTH innermost, the frame
 * at depth d in slot d % VT_HS_DEPTH (valid while its own depth is d). */
struct vt_hs_stack {
	__u32 depth;
	__u32 pad;
	struct vt_hs_frame f[VT_HS_DEPTH];
};

struct vt_hs_alloc_val {
	__u64 count;
	__u64 bytes;
};

/* A method by its class's and its own name's bytes in the JVM (Symbol
 * bodies, as method__entry passes them; with the slot under record --all),
 * named through the names map. */
struct vt_hs_method_key {
	__u64 klass;
	__u64 method;
};

struct vt_hs_method_val {
	__u64 calls;
};

/* Where the object's own size is found, for the uprobe at the entry of
 * the function that fires object__alloc (set before load; see
 * runtime_jvm.c for why the probe's size argument is not used). */
struct vt_hs_layout {
	__u64 func_vaddr;          /* SharedRuntime::dtrace_object_alloc_base, link-time */
	__u64 narrow_klass_vaddr;  /* CompressedKlassPointers::_narrow_klass {base, shift} */
	__u64 compressed_vaddr;    /* the UseCompressedClassPointers flag (a bool) */
	__u32 klass_offset;        /* oopDesc::_metadata */
	__u32 layout_helper_offset; /* Klass::_layout_helper */
	__u32 name_offset;         /* Klass::_name (0: not found, object__alloc names the class) */
	__u32 symbol_length_offset; /* Symbol::_length, a u2 */
	__u32 symbol_body_offset;  /* Symbol::_body */
	__u32 pad;
};

/* One GC, streamed to userspace through a ring buffer. */
struct vt_hs_gc_event {
	__u32 full;                /* gc__begin's argument */
	__u32 pad;
	__u64 duration_ns;
	__u64 end_ns;
};

/* Slots of the per-CPU counters array. */
enum vt_hs_counter {
	VT_HS_C_ALLOCS,            /* object__alloc hits */
	VT_HS_C_METHOD_ENTRIES,    /* method__entry hits */
	VT_HS_C_GC_PARTIAL,        /* completed collections that were not full */
	VT_HS_C_GC_FULL,           /* completed full collections */
	/* losses */
	VT_HS_L_SIZE_FROM_ARG,     /* size not read from the object: the probe's argument, which may be wrong */
	VT_HS_L_UNREADABLE,        /* a name the process had not paged in (-EFAULT) */
	VT_HS_L_TRUNCATED,         /* a name longer than its key field */
	VT_HS_L_MAP_FULL,          /* allocation map full: the event is not counted */
	VT_HS_L_METHOD_MAP_FULL,   /* method map full: the call is not counted */
	VT_HS_L_GC_UNPAIRED,       /* gc__end without gc__begin (attached mid-collection) */
	VT_HS_L_GC_BUF_FULL,       /* pause not streamed: totals still count it */
	VT_HS_L_TOO_DEEP,          /* allocation below VT_HS_DEPTH Java frames: no method */
	VT_HS_L_STACK_MAP_FULL,    /* a thread's frames not kept: its allocations have no method */
	VT_HS_L_SIZE_UNREADABLE,   /* an object whose class or length could not be read: 0 bytes */
	VT_HS_L_NO_RETURN,         /* frames dropped without their method__return (see jvm.bpf.c) */
	VT_HS_L_NAMES_FULL,        /* names map full: a row's name is not kept */
	VT_HS_L_PROC_FULL,         /* record --all: process table full, the event not counted */
	VT_HS_L_PROC_HIGH_PTR,     /* record --all: an address above 2^47, the event not counted */
	VT_HS_COUNTERS,
};

#endif /* VMTRACE_JVM_MAPS_H */
