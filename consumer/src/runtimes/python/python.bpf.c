// SPDX-License-Identifier: GPL-2.0
/*
 * python.bpf.c: CPython's own USDT probes (provider "python").
 *
 * function__entry / function__return (file, function, line): counted per
 * (file, function), and per thread a stack depth so a return without its
 * entry (a frame entered before attach, or an entry CPython never fired)
 * is told apart. CPython 3.11 fires function__entry only while a profile or
 * trace function is set (CPython gh-98894); function__return always fires.
 *
 * gc__start(generation) / gc__done(collected): timed per thread; each
 * collection is counted per generation and streamed as one pause.
 *
 * Objects: a uprobe on tracemalloc's _PyTraceMalloc_NewReference(op), which
 * every creation of an object calls (also one taken from a free list)
 * while the target traces memory: one count per (type, innermost Python
 * function), with the type's fixed size.
 *
 * Functions are read from the interpreter's own structures (CPython 3.11,
 * x86-64; offsets from its headers, runtime_python.c checks the version):
 * _PyRuntime.gilstate.tstate_current -> cframe -> current_frame -> f_code,
 * and from the code object its co_qualname, co_filename, co_firstlineno.
 * The thread that fires a probe holds the GIL, so tstate_current is its
 * own thread state. --stack vm walks on from that frame (python_stack.bpf.h).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "runtimes/common.bpf.h"
#include "runtimes/procs.bpf.h"
#include "runtimes/pauses.bpf.h"
#include "runtimes/python/python_maps.h"

#ifndef E2BIG
#define E2BIG 7
#endif

/* Calls per code object: the per-call path hashes 24 bytes, never a string. */
VT_COUNTING_MAP(funcs, BPF_MAP_TYPE_PERCPU_HASH, struct vt_py_code_id, struct vt_py_func_val);

/* Calls keyed by the USDT probes' strings, when frames cannot be read. */
VT_COUNTING_MAP(funcs_named, BPF_MAP_TYPE_PERCPU_HASH, struct vt_py_func_key, struct vt_py_func_val);

VT_MAP(depths, BPF_MAP_TYPE_HASH, __u32, __s64, 4096);

VT_COUNTING_MAP(allocs, BPF_MAP_TYPE_PERCPU_HASH, struct vt_py_alloc_key, struct vt_py_alloc_val);

VT_MAP(types, BPF_MAP_TYPE_HASH, __u64, struct vt_py_type, 8192);

VT_MAP(codes, BPF_MAP_TYPE_HASH, struct vt_py_code_id, struct vt_py_code, 16384);

VT_MAP(code_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct vt_py_code, 1);

/* Link-time addresses, set before load: _PyRuntime, and the instruction the
 * object hook is attached at. */
const volatile __u64 runtime_link = 0;
const volatile __u64 hook_link = 0;
/* The module's load bias: set by userspace when it knows it (a fixed
 * executable, a running process), else learnt at the hook's first hit. */
__u64 bias = 0;
__u32 bias_known = 0;

VT_MAP(scratch, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct vt_py_func_key, 1);

VT_MAP(counters, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, __u64, VT_PY_COUNTERS);

struct vt_py_gc_start {
	__u64 start;
	__u32 generation;
	__u32 pad;
};

VT_MAP(gc_start, BPF_MAP_TYPE_HASH, __u32, struct vt_py_gc_start, 1024);

VT_RINGBUF(gc_events, 1 << 18);

static __always_inline void add(__u32 slot, __u64 n)
{
	vt_count(&counters, slot, n);
}

static __always_inline void copy_str(char *dst, __u32 size, const char *src)
{
	vt_copy_str(dst, size, src, &counters, VT_PY_L_UNREADABLE, VT_PY_L_TRUNCATED);
}

/* CPython 3.11 offsets (Include/internal/pycore_runtime.h, pycore_frame.h,
 * cpython/code.h, cpython/unicodeobject.h, cpython/object.h) */
#define PY_RUNTIME_TSTATE_CURRENT 576  /* _PyRuntime.gilstate.tstate_current */
#define PY_TSTATE_CFRAME 56
#define PY_CFRAME_CURRENT_FRAME 8
#define PY_FRAME_F_CODE 32
#define PY_CODE_FIRSTLINENO 72
#define PY_CODE_FILENAME 112
#define PY_CODE_QUALNAME 128
#define PY_UNICODE_STATE 32            /* interned:2 kind:3 compact:1 ascii:1 */
#define PY_UNICODE_COMPACT (1u << 5)
#define PY_UNICODE_ASCII (1u << 6)
#define PY_ASCII_DATA 48               /* sizeof(PyASCIIObject) */
#define PY_COMPACT_UTF8 56             /* PyCompactUnicodeObject.utf8 */
#define PY_OB_TYPE 8
#define PY_OB_SIZE 16 /* PyVarObject: the items, set before _Py_NewReference */
#define PY_TP_NAME 24
#define PY_TP_BASICSIZE 32
#define PY_TP_ITEMSIZE 40
#define PY_TP_FLAGS 168
#define PY_TPFLAGS_MANAGED_DICT (1ULL << 4)
#define PY_TPFLAGS_HAVE_GC (1ULL << 14)
#define PY_GC_HEAD 16                  /* sizeof(PyGC_Head) */

static __always_inline __u64 read_ptr(__u64 addr)
{
	__u64 v = 0;

	if (!addr || bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

/* A str object's UTF-8 text into dst: compact ASCII strings hold it inline,
 * other compact ones keep a UTF-8 copy when one was asked for. */
static __always_inline void read_pystr(char *dst, __u32 size, __u64 str)
{
	__u32 state = 0;
	__u64 data = 0;

	if (!str || bpf_probe_read_user(&state, sizeof(state), (void *)(str + PY_UNICODE_STATE)))
		return;
	if ((state & PY_UNICODE_COMPACT) && (state & PY_UNICODE_ASCII))
		data = str + PY_ASCII_DATA;
	else if (state & PY_UNICODE_COMPACT)
		data = read_ptr(str + PY_COMPACT_UTF8);
	if (data)
		copy_str(dst, size, (const char *)data);
}

/* The innermost Python frame (_PyInterpreterFrame *) on this thread, 0
 * when the thread state or frame cannot be read. */
static __always_inline __u64 current_frame(void)
{
	__u64 tstate, cframe;

	if (!bias_known)
		return 0;
	tstate = read_ptr(runtime_link + bias + PY_RUNTIME_TSTATE_CURRENT);
	cframe = read_ptr(tstate ? tstate + PY_TSTATE_CFRAME : 0);
	return read_ptr(cframe ? cframe + PY_CFRAME_CURRENT_FRAME : 0);
}

/* code's identity: the object and what it holds (see vt_py_code_id). */
static __always_inline void code_id(struct vt_py_code_id *id, __u64 code)
{
	/* co_firstlineno through co_qualname in one read, not two */
	__u64 fields[(PY_CODE_QUALNAME + 8 - PY_CODE_FIRSTLINENO) / 8];

	id->code = code;
	if (!code || bpf_probe_read_user(fields, sizeof(fields), (void *)(code + PY_CODE_FIRSTLINENO)))
		return;
	id->firstlineno = (__u32)fields[0];
	id->filename = fields[(PY_CODE_FILENAME - PY_CODE_FIRSTLINENO) / 8];
	id->qualname = fields[(PY_CODE_QUALNAME - PY_CODE_FIRSTLINENO) / 8];
}

/* Name code in the codes map. Its fields can sit on a page of the binary
 * the process never touched (deep-frozen code of the standard library), so
 * the probe's own strings, when given, stand in for what cannot be read. */
static __always_inline void learn_code(const struct vt_py_code_id *id, const char *file,
				       const char *func)
{
	__u32 zero = 0;
	__u64 code = vt_proc_raw(id->code); /* record --all: the key's is qualified */
	struct vt_py_code *c;

	if (!code || bpf_map_lookup_elem(&codes, id))
		return;
	c = bpf_map_lookup_elem(&code_scratch, &zero);
	if (!c)
		return;
	__builtin_memset(c, 0, sizeof(*c));
	read_pystr(c->qualname, sizeof(c->qualname), id->qualname);
	read_pystr(c->file, sizeof(c->file), id->filename); /* code_id read it */
	if (!c->qualname[0] && func)
		copy_str(c->qualname, sizeof(c->qualname), func);
	if (!c->file[0] && file)
		copy_str(c->file, sizeof(c->file), file);
	c->firstlineno = id->firstlineno;
	if (bpf_map_update_elem(&codes, id, c, BPF_NOEXIST) == -E2BIG)
		add(VT_PY_L_NAMES_FULL, 1);
}

#include "runtimes/python/python_stack.bpf.h"

/* record --all (called under `if (targ_all)`): a and b (NULL: none)
 * qualified by the calling process's slot; false, counted, when it has none
 * or one is above the slot bits. */
static __always_inline bool all_qualify(__u64 *a, __u64 *b)
{
	__u64 slot = vt_proc_slot();

	if (slot == VT_PROC_NONE || vt_proc_too_high(*a) || (b && vt_proc_too_high(*b))) {
		add(slot == VT_PROC_NONE ? VT_PY_L_PROC_FULL : VT_PY_L_PROC_HIGH_PTR, 1);
		return false;
	}
	*a = vt_proc_qual(*a, slot);
	if (b)
		*b = vt_proc_qual(*b, slot);
	return true;
}

/* qtype: qualified by its process's slot under record --all (procs_maps.h),
 * the key of types; its memory is read at the raw pointer. */
static __always_inline struct vt_py_type *learn_type(__u64 qtype)
{
	struct vt_py_type t = {}, *known = bpf_map_lookup_elem(&types, &qtype);
	__u64 type = vt_proc_raw(qtype);

	if (known || !type)
		return known;
	copy_str(t.name, sizeof(t.name), (const char *)read_ptr(type + PY_TP_NAME));
	bpf_probe_read_user(&t.basicsize, sizeof(t.basicsize), (void *)(type + PY_TP_BASICSIZE));
	bpf_probe_read_user(&t.itemsize, sizeof(t.itemsize), (void *)(type + PY_TP_ITEMSIZE));
	bpf_probe_read_user(&t.flags, sizeof(t.flags), (void *)(type + PY_TP_FLAGS));
	/* _PyType_PreHeaderSize(): the GC header and the managed-dict pointers */
	t.bytes = t.basicsize + (t.flags & PY_TPFLAGS_HAVE_GC ? PY_GC_HEAD : 0) +
		  (t.flags & PY_TPFLAGS_MANAGED_DICT ? 2 * sizeof(__u64) : 0);
	if (bpf_map_update_elem(&types, &qtype, &t, BPF_NOEXIST) == -E2BIG)
		add(VT_PY_L_NAMES_FULL, 1);
	return bpf_map_lookup_elem(&types, &qtype);
}

/* _PyTraceMalloc_NewReference(PyObject *op): op has its type already. */
SEC("uprobe")
int py_new_object(struct pt_regs *ctx)
{
	struct vt_py_alloc_key key = {};
	struct vt_py_alloc_val init = {}, *v;
	struct vt_py_type *t;
	enum vt_got got;
	__u64 frame;

	if (!bias_known) {
		/* the hit is at hook_link + bias (+1 past the breakpoint); the
		 * bias is a whole number of pages */
		bias = (PT_REGS_IP(ctx) - hook_link) & ~0xfffULL;
		bias_known = 1;
	}
	add(VT_PY_C_OBJECTS, 1);
	__u64 obj = PT_REGS_PARM1(ctx);
	__s64 items = 0;

	key.type = read_ptr(obj + PY_OB_TYPE);
	frame = current_frame();
	code_id(&key.code, read_ptr(frame ? frame + PY_FRAME_F_CODE : 0));
	/* a code not read stays 0; the type (0 too) carries the process */
	if (targ_all && !all_qualify(&key.type, key.code.code ? &key.code.code : NULL))
		return 0;
	t = learn_type(key.type);
	if (walk_stacks)
		key.stack = py_stack_id(frame);
	if (key.code.code)
		learn_code(&key.code, NULL, NULL);
	else
		add(VT_PY_C_NO_FRAME, 1);
	v = vt_get_or_insert(&allocs, &key, &init, &got);
	if (!v) {
		if (got == VT_GOT_REFUSED)
			add(VT_PY_L_ALLOC_MAP_FULL, 1);
		return 0;
	}
	v->count++;
	if (!t)
		return 0;
	/* the items of a variable-size object (int's digits, a tuple's slots,
	 * bytes' text), as object.__sizeof__ counts them: its type's
	 * itemsize times |ob_size|, which the allocator set before this hook */
	if (t->itemsize > 0 && !bpf_probe_read_user(&items, sizeof(items), (void *)(obj + PY_OB_SIZE)))
		v->bytes += (__u64)t->itemsize * (__u64)(items < 0 ? -items : items);
	v->bytes += t->bytes;
	return 0;
}

static __always_inline void count_val(struct vt_py_func_val *v, enum vt_got got, bool entry)
{
	if (!v) {
		if (got == VT_GOT_REFUSED)
			add(VT_PY_L_MAP_FULL, 1);
		return;
	}
	if (entry)
		v->entries++;
	else
		v->returns++;
}

/* One entry or return of a function by its code object: one hash lookup of
 * 24 bytes per hit; the code is named once, when its row is made. */
static __always_inline void count_code(__u64 code, bool entry)
{
	struct vt_py_code_id key = {};
	struct vt_py_func_val init = {}, *v;
	enum vt_got got;

	code_id(&key, code);
	if (targ_all && key.code && !all_qualify(&key.code, NULL))
		return;
	v = vt_get_or_insert(&funcs, &key, &init, &got);
	if (got == VT_GOT_NEW)
		learn_code(&key, NULL, NULL);
	count_val(v, got, entry);
}

/* One entry or return of a function by the probe's strings. */
static __always_inline void count_named(const char *file, const char *func, bool entry)
{
	__u32 zero = 0;
	struct vt_py_func_key *key = bpf_map_lookup_elem(&scratch, &zero);
	struct vt_py_func_val init = {}, *v;
	enum vt_got got;

	if (!key)
		return;
	__builtin_memset(key, 0, sizeof(*key));
	copy_str(key->file, sizeof(key->file), file);
	copy_str(key->func, sizeof(key->func), func);
	v = vt_get_or_insert(&funcs_named, key, &init, &got);
	count_val(v, got, entry);
}

static __always_inline void enter(void)
{
	__u32 tid = vt_tid();
	__s64 one = 1, *d;

	add(VT_PY_C_ENTRIES, 1);
	d = bpf_map_lookup_elem(&depths, &tid);
	if (d)
		(*d)++;
	else
		bpf_map_update_elem(&depths, &tid, &one, BPF_ANY);
}

static __always_inline void leave(void)
{
	__u32 tid = vt_tid();
	__s64 *d;

	add(VT_PY_C_RETURNS, 1);
	d = bpf_map_lookup_elem(&depths, &tid);
	if (d && *d > 0)
		(*d)--;
	else
		add(VT_PY_C_UNMATCHED, 1);
}

/* The probes' own helpers, dtrace_function_entry/return(frame), probed at
 * their first instruction (runtime_python.c finds them around the USDT
 * sites): the frame they are given is the one the probe reports, whatever
 * the interpreter has stored of its current frame by then. */
SEC("uprobe")
int py_frame_entry(struct pt_regs *ctx)
{
	enter();
	count_code(read_ptr(PT_REGS_PARM1(ctx) + PY_FRAME_F_CODE), true);
	return 0;
}

SEC("uprobe")
int py_frame_return(struct pt_regs *ctx)
{
	leave();
	count_code(read_ptr(PT_REGS_PARM1(ctx) + PY_FRAME_F_CODE), false);
	return 0;
}

/* Without those (not CPython 3.11, or code of another shape): the USDT
 * probes, keyed by their strings. */
SEC("usdt")
int BPF_USDT(py_function_entry, const char *file, const char *func)
{
	enter();
	count_named(file, func, true);
	return 0;
}

SEC("usdt")
int BPF_USDT(py_function_return, const char *file, const char *func)
{
	leave();
	count_named(file, func, false);
	return 0;
}

SEC("usdt")
int BPF_USDT(py_gc_start, int generation)
{
	__u32 tid = vt_tid();
	struct vt_py_gc_start s = {
		.start = bpf_ktime_get_ns(),
		.generation = generation,
	};

	if (bpf_map_update_elem(&gc_start, &tid, &s, BPF_ANY))
		add(VT_PY_L_GC_UNPAIRED, 1);
	return 0;
}

SEC("usdt")
int BPF_USDT(py_gc_done, long collected)
{
	__u32 tid = vt_tid();
	__u64 now = bpf_ktime_get_ns();
	struct vt_py_gc_start *s = bpf_map_lookup_elem(&gc_start, &tid);
	struct vt_py_gc_event *e;
	__u32 gen;

	if (!s || !s->start) {
		add(VT_PY_L_GC_UNPAIRED, 1);
		return 0;
	}
	gen = s->generation;
	if (gen >= VT_PY_GENS)
		gen = VT_PY_GENS - 1;
	add(VT_PY_C_GC0 + gen, 1);
	vt_pause_counted(gen, now - s->start);
	if (collected > 0)
		add(VT_PY_C_COLLECTED, collected);
	e = bpf_ringbuf_reserve(&gc_events, sizeof(*e), 0);
	if (e) {
		e->generation = gen;
		e->tid = tid;
		e->duration_ns = now - s->start;
		e->collected = collected > 0 ? collected : 0;
		e->end_ns = now;
		/* no wakeup: poll() drains the buffer on its own clock */
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	} else {
		add(VT_PY_L_GC_BUF_FULL, 1);
	}
	s->start = 0;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
