/*
 * php_maps.h: what php.bpf.c and runtime_php.c share: map keys, values and
 * counter slots for PHP's own USDT probes (provider "php", in the php
 * binary) and the uprobes on the Zend engine's object constructors.
 */
#ifndef VMTRACE_PHP_MAPS_H
#define VMTRACE_PHP_MAPS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define VT_PHP_NAME 64     /* class and function names, NUL included */
#define VT_PHP_FILE 128    /* script paths */
#define VT_PHP_DEPTH 64    /* PHP frames kept per thread (a ring) */

/* Calls per (class, function, file): class "" for a plain function. */
struct vt_php_call_key {
	char klass[VT_PHP_NAME];
	char func[VT_PHP_NAME];
	char file[VT_PHP_FILE];
};

struct vt_php_call_val {
	__u64 calls;
};

/* record --all: an object's process, as its slot (procs_maps.h), in its
 * key's last 4 class bytes, its class name in the bytes before them: the
 * key keeps its single-process size. Calls are not per process. */
#define VT_PHP_PROC_AT (VT_PHP_NAME - 4)

/* Objects per class and the innermost PHP function they were made in. */
struct vt_php_obj_key {
	char klass[VT_PHP_NAME];
	char site_class[VT_PHP_NAME];
	char site_func[VT_PHP_NAME];
};

struct vt_php_obj_val {
	__u64 count;
	__u64 bytes;               /* what zend_objects_new asked for; 0 from a class's own handler */
};

/* A PHP frame: function__entry's class and function name pointers (into
 * zend_strings that live as long as the function), read at an object. */
struct vt_php_frame {
	__u64 klass;
	__u64 func;
};

struct vt_php_stack {
	__u32 depth;
	__u32 pad;
	struct vt_php_frame f[VT_PHP_DEPTH];
};

/* Slots of the per-CPU counters array. */
enum vt_php_counter {
	VT_PHP_C_CALLS,            /* function__entry hits */
	VT_PHP_C_OBJECTS,          /* objects seen */
	/* losses */
	VT_PHP_L_UNREADABLE,       /* a string the process had not paged in */
	VT_PHP_L_TRUNCATED,        /* a name longer than its key field */
	VT_PHP_L_CALL_MAP_FULL,    /* call map full: the call is not counted */
	VT_PHP_L_OBJ_MAP_FULL,     /* object map full: the object is not counted */
	VT_PHP_L_STACK_MAP_FULL,   /* a thread's frames not kept: its objects have no function */
	VT_PHP_L_TOO_DEEP,         /* an object below more than VT_PHP_DEPTH frames: no function */
	VT_PHP_L_PROC_FULL,        /* record --all: process table full, the object not counted */
	VT_PHP_COUNTERS,
};

#endif /* VMTRACE_PHP_MAPS_H */
