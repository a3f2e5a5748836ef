/*
 * ruby_maps.h: what ruby.bpf.c and runtime_ruby.c share: map keys, values
 * and loss counter slots for Ruby's own USDT probes (provider "ruby").
 *
 * Ruby passes class, method and file names as C strings it does not keep
 * alive (a class path can be a fresh Ruby string, and GC compaction moves
 * embedded strings), so the BPF side copies every string into fixed-size
 * key fields instead of keying by pointer.
 */
#ifndef VMTRACE_RUBY_MAPS_H
#define VMTRACE_RUBY_MAPS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define VT_RB_NAME 64      /* class and method names, NUL included */
#define VT_RB_FILE 128     /* source file of an allocation site */
#define VT_RB_DEPTH 64     /* frames remembered per thread (a ring) */

/* Cookies of the *__create probes: the class they allocate. */
enum vt_rb_builtin { VT_RB_STRING = 1, VT_RB_ARRAY = 2, VT_RB_HASH = 3 };

/* GC phases: the index of the gc_collections slot and the pause kind. */
enum vt_rb_gc_phase { VT_RB_GC_MARK = 0, VT_RB_GC_SWEEP = 1, VT_RB_GC_PHASES = 2 };

struct vt_rb_alloc_key {
	char klass[VT_RB_NAME];   /* the class allocated */
	char mklass[VT_RB_NAME];  /* the innermost Ruby method's class, "" = none */
	char method[VT_RB_NAME];  /* that method's name, "" = none */
	char file[VT_RB_FILE];    /* the allocation site */
	__u32 line;
	__u32 pad;
};

struct vt_rb_alloc_val {
	__u64 count;
};

struct vt_rb_frame {
	char klass[VT_RB_NAME];
	char method[VT_RB_NAME];
	__s64 depth;              /* the depth it was entered at: a stale ring slot differs */
};

/* One thread's Ruby-level method stack: depth counts method__entry minus
 * method__return since attach (never below 0); frames[depth % DEPTH] holds
 * the innermost method. */
struct vt_rb_thread {
	__s64 depth;
	struct vt_rb_frame frames[VT_RB_DEPTH];
};

/* One GC phase, streamed to userspace through a ring buffer. */
struct vt_rb_gc_event {
	__u32 phase;              /* enum vt_rb_gc_phase */
	__u32 pad;
	__u64 duration_ns;
	__u64 end_ns;
};

/* Slots of the per-CPU counters array. */
enum vt_rb_counter {
	VT_RB_C_ALLOCS,           /* allocation probe hits */
	VT_RB_C_METHOD_ENTRIES,   /* method__entry hits */
	VT_RB_C_NO_METHOD,        /* allocations with no Ruby method on the thread's stack */
	VT_RB_C_GC_MARK,          /* completed mark phases */
	VT_RB_C_GC_SWEEP,         /* completed sweep phases */
	VT_RB_C_GC_NS_MARK,       /* their total duration */
	VT_RB_C_GC_NS_SWEEP,
	/* losses */
	VT_RB_L_UNREADABLE,       /* a string the process had not paged in (-EFAULT) */
	VT_RB_L_TRUNCATED,        /* a name longer than its key field */
	VT_RB_L_MAP_FULL,         /* allocation map full: the event is not counted */
	VT_RB_L_THREADS_FULL,     /* thread map full: that thread's methods are unknown */
	VT_RB_L_STACK_DEEP,       /* innermost method fell out of the frame ring */
	VT_RB_L_GC_UNPAIRED,      /* a phase end without its begin (attached mid-phase) */
	VT_RB_L_GC_BUF_FULL,      /* pause not streamed: totals still count it */
	VT_RB_COUNTERS,
};

#endif /* VMTRACE_RUBY_MAPS_H */
