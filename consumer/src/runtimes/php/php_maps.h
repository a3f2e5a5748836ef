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

/* The Zend engine's layout the programs read (php_layout.c: a row per
 * PHP API version, checked against that version's headers), and where a
 * PHP with no USDT probes keeps its executor's globals. */
struct vt_php_layout {
	__u32 ce_name, ce_flags, ce_props;     /* zend_class_entry's name, ce_flags, default_properties_count */
	__u32 zstr_val;                        /* zend_string's val */
	__u32 object_size, zval_size;          /* sizeof(zend_object), sizeof(zval) */
	__u32 acc_use_guards;                  /* ZEND_ACC_USE_GUARDS */
	__u32 eg_current_execute_data;         /* zend_executor_globals' current_execute_data */
	__u32 ex_func, ex_prev;                /* zend_execute_data's func, prev_execute_data */
	__u32 fn_type, fn_name, fn_scope;      /* zend_function's common.type, .function_name, .scope */
	__u32 user_function;                   /* ZEND_USER_FUNCTION */
	/* frames from executor_globals (a PHP with no function probes): the
	 * link-time addresses of it and of the two probed functions, whose
	 * difference to the probed address gives the load bias */
	__u32 eg_frames;
	__u32 api;                             /* the extension API version the row is for */
	__u64 eg_vaddr, objects_new_vaddr, std_init_vaddr;
};

#define VT_PHP_EG_DEPTH 16 /* internal frames passed to find the user function an object is made in */

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
	VT_PHP_L_EG_DEEP,          /* an object below more internal frames than VT_PHP_EG_DEPTH: no function */
	VT_PHP_COUNTERS,
};

#endif /* VMTRACE_PHP_MAPS_H */
