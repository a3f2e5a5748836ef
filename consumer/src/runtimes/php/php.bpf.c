// SPDX-License-Identifier: GPL-2.0
/*
 * php.bpf.c: PHP 8.2's own USDT probes (provider "php", in the php binary)
 * and uprobes on the Zend engine's object constructors.
 *
 * Calls: function__entry(func, file, line, class, scope) counted per
 * (class, function, file); PHP fires it, and function__return, around
 * every user function only while it runs with USE_ZEND_DTRACE=1. Both keep
 * each thread's PHP frames, so an object is counted under the function it
 * was made in.
 *
 * Objects: a uprobe on zend_objects_new(ce), which makes every object of a
 * class without a create handler of its own (the size it asks for follows
 * from the class), and one on zend_object_std_init(obj, ce), which the
 * classes with their own handler (Closure, ArrayObject, DateTime, ...)
 * call; zend_objects_new inlines its own copy, so none is counted twice.
 *
 * A PHP built without DTrace probes (Debian's 8.4) has no function
 * probes: an object's function is read where the engine keeps it, the
 * executor's current frame (executor_globals, which the php binary
 * exports), passing the internal functions' frames up to the user function
 * that called them, as function__entry would have it.
 *
 * record --all (targ_all): an object's key carries its process's slot
 * (php_maps.h); names are copied, so calls need none.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "runtimes/common.bpf.h"
#include "runtimes/procs.bpf.h"
#include "runtimes/php/php_maps.h"

/* Set before load (runtime_php.c, from php_layout.c's row). */
const volatile struct vt_php_layout layout = {};

VT_COUNTING_MAP(calls, BPF_MAP_TYPE_PERCPU_HASH, struct vt_php_call_key, struct vt_php_call_val);

VT_COUNTING_MAP(objects, BPF_MAP_TYPE_PERCPU_HASH, struct vt_php_obj_key, struct vt_php_obj_val);

VT_MAP(stacks, BPF_MAP_TYPE_HASH, __u32, struct vt_php_stack, 4096);

VT_MAP(empty_stack, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct vt_php_stack, 1); /* zeroes: a new thread's stack */

VT_MAP(call_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct vt_php_call_key, 1); /* the keys are too big for the BPF stack */

VT_MAP(obj_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct vt_php_obj_key, 1);

VT_MAP(counters, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, __u64, VT_PHP_COUNTERS);

static __always_inline void add(__u32 slot, __u64 n)
{
	vt_count(&counters, slot, n);
}

static __always_inline void copy(char *dst, __u32 size, const char *src)
{
	vt_copy_str(dst, size, src, &counters, VT_PHP_L_UNREADABLE, VT_PHP_L_TRUNCATED);
}

static __always_inline struct vt_php_stack *stack_of(__u32 tid, bool create)
{
	struct vt_php_stack *st = bpf_map_lookup_elem(&stacks, &tid), *init;
	__u32 zero = 0;

	if (st || !create)
		return st;
	init = bpf_map_lookup_elem(&empty_stack, &zero);
	if (!init)
		return NULL;
	if (bpf_map_update_elem(&stacks, &tid, init, BPF_NOEXIST) == -E2BIG) {
		add(VT_PHP_L_STACK_MAP_FULL, 1);
		return NULL;
	}
	return bpf_map_lookup_elem(&stacks, &tid);
}

SEC("usdt")
int BPF_USDT(php_function_entry, const char *func, const char *file, int line, const char *klass)
{
	struct vt_php_call_key *key;
	struct vt_php_call_val init = {}, *v;
	struct vt_php_stack *st;
	__u32 zero = 0;
	enum vt_got got;

	add(VT_PHP_C_CALLS, 1);
	st = stack_of(vt_tid(), true);
	if (st) {
		struct vt_php_frame *f = &st->f[st->depth & (VT_PHP_DEPTH - 1)];

		f->klass = (__u64)klass;
		f->func = (__u64)func;
		st->depth++;
	}
	key = bpf_map_lookup_elem(&call_scratch, &zero);
	if (!key)
		return 0;
	__builtin_memset(key, 0, sizeof(*key));
	copy(key->klass, sizeof(key->klass), klass);
	copy(key->func, sizeof(key->func), func);
	copy(key->file, sizeof(key->file), file);
	v = vt_get_or_insert(&calls, key, &init, &got);
	if (!v) {
		if (got == VT_GOT_REFUSED)
			add(VT_PHP_L_CALL_MAP_FULL, 1);
		return 0;
	}
	v->calls++;
	return 0;
}

/* PHP fires one return per entry, exceptions included (dtrace_execute_ex
 * wraps the whole call); a return of a call entered before attach finds
 * the stack empty. */
SEC("usdt")
int BPF_USDT(php_function_return)
{
	struct vt_php_stack *st = stack_of(vt_tid(), false);

	if (st && st->depth)
		st->depth--;
	return 0;
}

/* The user function the executor runs at eg (executor_globals in the
 * process), its class and name into key: the current frame's, or its
 * caller's while the frame is an internal function's. Top-level code has
 * no name, as with function__entry. */
static __always_inline void eg_site(struct vt_php_obj_key *key, __u64 eg)
{
	__u64 ex = 0, fn = 0, zstr = 0, scope = 0;
	__u8 type = 0;

	if (bpf_probe_read_user(&ex, sizeof(ex), (void *)(eg + layout.eg_current_execute_data)))
		return;
	for (int i = 0; i < VT_PHP_EG_DEPTH && ex; i++) {
		if (bpf_probe_read_user(&fn, sizeof(fn), (void *)(ex + layout.ex_func)) || !fn ||
		    bpf_probe_read_user(&type, sizeof(type), (void *)(fn + layout.fn_type)))
			return;
		if (type == layout.user_function) {
			if (bpf_probe_read_user(&zstr, sizeof(zstr), (void *)(fn + layout.fn_name)) || !zstr)
				return;
			copy(key->site_func, sizeof(key->site_func), (const char *)(zstr + layout.zstr_val));
			if (!bpf_probe_read_user(&scope, sizeof(scope), (void *)(fn + layout.fn_scope)) && scope &&
			    !bpf_probe_read_user(&zstr, sizeof(zstr), (void *)(scope + layout.ce_name)) && zstr)
				copy(key->site_class, sizeof(key->site_class),
				     (const char *)(zstr + layout.zstr_val));
			return;
		}
		if (bpf_probe_read_user(&ex, sizeof(ex), (void *)(ex + layout.ex_prev)))
			return;
	}
	if (ex)
		add(VT_PHP_L_EG_DEEP, 1);
}

/* One object of class ce, of size bytes (0: not known); eg: where
 * executor_globals is in the process (layout.eg_frames). */
static __always_inline void count_object(const void *ce, __u64 size, __u64 eg)
{
	struct vt_php_obj_key *key;
	struct vt_php_obj_val one = { .count = 1, .bytes = size }, *v;
	struct vt_php_stack *st;
	const char *name = NULL;
	__u64 zstr = 0, slot = 0;
	__u32 zero = 0;
	enum vt_got got;

	add(VT_PHP_C_OBJECTS, 1);
	if (targ_all) { /* dropped by the verifier for one process */
		slot = vt_proc_slot();
		if (slot == VT_PROC_NONE) {
			add(VT_PHP_L_PROC_FULL, 1);
			return;
		}
	}
	key = bpf_map_lookup_elem(&obj_scratch, &zero);
	if (!key)
		return;
	__builtin_memset(key, 0, sizeof(*key));
	if (!bpf_probe_read_user(&zstr, sizeof(zstr), ce + layout.ce_name) && zstr)
		name = (const char *)(zstr + layout.zstr_val);
	if (targ_all) {
		copy(key->klass, VT_PHP_PROC_AT, name);
		*(__u32 *)(key->klass + VT_PHP_PROC_AT) = (__u32)slot;
	} else {
		copy(key->klass, sizeof(key->klass), name);
	}
	if (layout.eg_frames) {
		eg_site(key, eg);
	} else if ((st = stack_of(vt_tid(), false)) && st->depth) {
		if (st->depth > VT_PHP_DEPTH) {
			add(VT_PHP_L_TOO_DEEP, 1);
		} else {
			struct vt_php_frame *f = &st->f[(st->depth - 1) & (VT_PHP_DEPTH - 1)];

			copy(key->site_class, sizeof(key->site_class), (const char *)f->klass);
			copy(key->site_func, sizeof(key->site_func), (const char *)f->func);
		}
	}
	v = bpf_map_lookup_elem(&objects, key);
	if (v) {
		v->count++;
		v->bytes += size;
		return;
	}
	v = vt_insert(&objects, key, &one, &got);
	if (!v) {
		if (got == VT_GOT_REFUSED)
			add(VT_PHP_L_OBJ_MAP_FULL, 1);
		return;
	}
	if (got == VT_GOT_OLD) {    /* another CPU inserted the key first */
		v->count++;
		v->bytes += size;
	}
}

/* zend_objects_new(zend_class_entry *ce): emalloc(sizeof(zend_object) +
 * zend_object_properties_size(ce)), as zend_objects_API.h computes it. */
SEC("uprobe")
int BPF_KPROBE(php_objects_new, const void *ce)
{
	__u32 flags = 0;
	__s32 props = 0;
	__u64 size = 0;

	if (!bpf_probe_read_user(&flags, sizeof(flags), ce + layout.ce_flags) &&
	    !bpf_probe_read_user(&props, sizeof(props), ce + layout.ce_props) && props >= 0) {
		/* zend_object holds one zval of the table already */
		__s64 n = layout.object_size +
			  ((__s64)props - ((flags & layout.acc_use_guards) ? 0 : 1)) * layout.zval_size;

		size = n > 0 ? (__u64)n : 0;
	}
	/* the probed address less the function's link-time one: the bias */
	count_object(ce, size, PT_REGS_IP(ctx) - layout.objects_new_vaddr + layout.eg_vaddr);
	return 0;
}

/* zend_object_std_init(zend_object *obj, zend_class_entry *ce), from a
 * class's own create handler: its size is the handler's business. */
SEC("uprobe")
int BPF_KPROBE(php_object_std_init, const void *obj, const void *ce)
{
	count_object(ce, 0, PT_REGS_IP(ctx) - layout.std_init_vaddr + layout.eg_vaddr);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
