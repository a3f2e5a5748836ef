/*
 * ruby_maps.h: what ruby.bpf.c and runtime_ruby.c share: map keys, values
 * and loss counter slots for Ruby's own USDT probes (provider "ruby").
 *
 * Ruby passes method and file names as C strings it does not keep alive (a
 * class path can be a fresh Ruby string, and GC compaction moves embedded
 * strings), so the BPF side copies them into fixed-size key fields instead
 * of keying by pointer. Allocations are keyed by the class object itself
 * (a VALUE: classes stay put unless GC.compact moves them), named once.
 */
#ifndef VMTRACE_RUBY_MAPS_H
#define VMTRACE_RUBY_MAPS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define VT_RB_NAME 64      /* class and method names, NUL included */
#define VT_RB_FILE 128     /* source file of an allocation site */
#define VT_RB_DEPTH 64     /* frames remembered per thread (a ring) */

/* Ruby 3.1's heap slot (sizeof(RVALUE)): every object's bytes. */
#define VT_RB_SLOT 40

/* Cookie of a uprobe on one of libruby's allocation functions (ruby_code.c):
 * bits 0-7 the object's type (TYPE_FROM_FLAGS: the low 5 bits of the flags
 * register), 8-15 the register holding its class, 16-23 the one holding
 * its flags (x86 numbers, 0 %rax .. 7 %rdi, 8..15 %r8..%r15; NOREG: none),
 * IVARS: a T_OBJECT that gets an instance-variable buffer when its class
 * has more ivars than fit in the slot; bits 32-63 the probed instruction's
 * link-time address (the BPF side finds libruby's load address from it). */
#define VT_RB_CK_TYPE_FROM_FLAGS 0xffULL
#define VT_RB_CK_NOREG 0xffULL
#define VT_RB_CK_IVARS (1ULL << 24)
#define VT_RB_CK_VADDR_SHIFT 32
#define vt_rb_newobj_cookie(type, klass_reg, flags_reg) \
	((__u64)(type) | (__u64)(klass_reg) << 8 | (__u64)(flags_reg) << 16)

/* Ruby's value types (ruby_value_type), the ones vmtrace names. */
#define VT_RB_T_MASK 0x1f
#define VT_RB_T_OBJECT 0x01
#define VT_RB_T_DATA 0x0c
#define VT_RB_T_IMEMO 0x1a

/* GC phases: the index of the gc_collections slot and the pause kind. */
enum vt_rb_gc_phase { VT_RB_GC_MARK = 0, VT_RB_GC_SWEEP = 1, VT_RB_GC_PHASES = 2 };

/* The line of an allocation whose frames could not be read, so that it is
 * told apart from one made outside any Ruby method (no frame at all). */
#define VT_RB_LINE_WALK_FAILED 0xffffffffu

struct vt_rb_alloc_key {
	__u64 klass;              /* the class allocated (a VALUE of the target; 0: hidden) */
	__u32 type;               /* its ruby_value_type */
	__u32 line;               /* VT_RB_LINE_WALK_FAILED: the frame walk failed */
	char mklass[VT_RB_NAME];  /* the innermost Ruby method's class, "" = none */
	char method[VT_RB_NAME];  /* that method's name, "" = none */
	char file[VT_RB_FILE];    /* the allocation site, "" when no probe gave one */
	__u64 stack;              /* --stack vm: a key of rb_stacks; 0 none */
};

/* --stack vm (ruby_stack.bpf.h): whole Ruby-level stacks, interned by a
 * 64-bit hash of their frames. A frame is its code (rb_code_id(): the iseq
 * body's address mixed with its instructions'), the class owning its
 * method (0: a block or top-level code, named by its label) and the line;
 * its names are read once per (code, owner) into rb_frame_names. */
#define VT_RB_STACK_MAX 127       /* Ruby frames kept; deeper stacks are cut */
#define VT_RB_STACK_SLOTS 128
#define VT_RB_STACK_CUT 0x1u      /* deeper than VT_RB_STACK_MAX: the root side is missing */
#define VT_RB_STACK_BAD 0x2u      /* an unreadable frame ended the walk */

struct vt_rb_stack_frame {
	__u64 code, owner;         /* rb_code_id(), the owning class (0: none) */
	__u32 line, pad;
};

struct vt_rb_stack {              /* innermost frame first */
	__u32 depth, flags;
	struct vt_rb_stack_frame f[VT_RB_STACK_SLOTS];
};

struct vt_rb_frame_key {
	__u64 code, owner;
};

struct vt_rb_frame_name {
	char label[VT_RB_NAME];   /* the method's name (owner set), else the iseq's label */
	char file[VT_RB_FILE];
};

/* A class's name, read once from the class itself (its __classpath__). */
struct vt_rb_class_name {
	char name[VT_RB_NAME];    /* "" when anonymous or unreadable */
};

/* Per thread: what the last site probe said, for the allocation after it. */
struct vt_rb_pending {
	char file[VT_RB_FILE];
	__u32 line;
	__u32 site;               /* file/line are for the next allocation */
};

struct vt_rb_alloc_val {
	__u64 count;
	__u64 bytes;              /* VT_RB_SLOT per object */
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
	__u32 tid;                /* the collecting thread */
	__u64 duration_ns;
	__u64 end_ns;
};

/* Slots of the per-CPU counters array. */
enum vt_rb_counter {
	VT_RB_C_ALLOCS,           /* objects counted */
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
	VT_RB_L_PENDING_FULL,     /* pending-site map full: the site is unknown */
	VT_RB_L_NAMES_FULL,       /* class-name map full: the class is named in userspace */
	VT_RB_L_FRAME_BAD,        /* frame walk read what is not this Ruby's layout: no site */
	VT_RB_L_STACK_CUT,        /* --stack vm: stack deeper than VT_RB_STACK_MAX, cut */
	VT_RB_L_STACK_BAD,        /* --stack vm: an unreadable frame ended the stack */
	VT_RB_L_STACKS_FULL,      /* --stack vm: stack map full, its frames lost */
	VT_RB_L_FRAMES_FULL,      /* --stack vm: frame-name map full, the frame unnamed */
	VT_RB_L_PROC_FULL,        /* record --all: process table full, the object not counted */
	VT_RB_L_PROC_HIGH_PTR,    /* record --all: a class above 2^47, the object not counted */
	VT_RB_COUNTERS,
};

#endif /* VMTRACE_RUBY_MAPS_H */
