/*
 * python_stack.bpf.h: --stack vm for stock CPython 3.11: the whole chain
 * of Python frames of the thread making an object, walked in BPF (bpf_loop,
 * one frame an iteration) from its thread state's cframe->current_frame
 * along each _PyInterpreterFrame's previous link, as py-spy and the
 * OpenTelemetry eBPF profiler do. Each frame's f_code is checked to be a
 * code object (its ob_type is PyCode_Type) before it is used; a frame that
 * fails the check or cannot be read ends the stack, counted. The stack is
 * interned by a hash of its code objects and the instruction each frame
 * runs (prev_instr) in py_stacks; each code object is named once into
 * codes, its line table read once into py_lines, so userspace turns a
 * frame's instruction into its line. Included by python.bpf.c after
 * read_ptr(), code_id() and learn_code().
 */
#ifndef VMTRACE_PYTHON_STACK_BPF_H
#define VMTRACE_PYTHON_STACK_BPF_H

/* Set before load: --stack vm, and PyCode_Type's link-time address */
const volatile bool walk_stacks = false;
const volatile __u64 code_type_link = 0;

#define PY_FRAME_PREVIOUS 48     /* _PyInterpreterFrame.previous (3.11) */
#define PY_FRAME_PREV_INSTR 56   /* _PyInterpreterFrame.prev_instr */
#define PY_CODE_LINETABLE 136    /* PyCodeObject.co_linetable (a bytes) */
#define PY_CODE_ADAPTIVE 184     /* PyCodeObject.co_code_adaptive: the instructions */
#define PY_BYTES_SIZE 16         /* PyBytesObject.ob_size */
#define PY_BYTES_DATA 32         /* PyBytesObject.ob_sval */
#define PY_INSTR_MAX (1u << 24)  /* instructions in a code object, at most */
#define PY_STACK_SCAN 256        /* frames looked at */
#define PY_HASH_MUL 0x100000001b3ULL

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* 3 KiB a stack: only for stacks seen */
	__type(key, __u64);
	__type(value, struct vt_py_stack);
} py_stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* 1 KiB a code object in a stack */
	__type(key, struct vt_py_code_id); /* as codes: a code's memory is reused */
	__type(value, struct vt_py_lines);
} py_lines SEC(".maps");

/* The walk's state and the stack it builds, per CPU: off the BPF stack. */
struct py_stack_walk {
	__u64 frame, hash;
	__u32 done, pad;
	struct vt_py_stack st;
	struct vt_py_lines lines; /* a code object's table on its way to py_lines */
};

VT_MAP(py_stack_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct py_stack_walk, 1);

/* One frame (bpf_loop's callback): 0 on to the caller, 1 done. */
static long py_stack_step(__u64 i, void *ctx)
{
	/* f_code, frame_obj, previous, prev_instr in one read */
	__u64 link[(PY_FRAME_PREV_INSTR + 8 - PY_FRAME_F_CODE) / 8];
	struct py_stack_walk *w;
	struct vt_py_code_id *f;
	__u32 zero = 0, d;
	__u64 code, instr;

	w = bpf_map_lookup_elem(&py_stack_scratch, &zero);
	if (!w)
		return 1;
	if (!w->frame) {
		w->done = 1;
		return 1;
	}
	if (bpf_probe_read_user(link, sizeof(link), (void *)(w->frame + PY_FRAME_F_CODE))) {
		w->st.flags |= VT_PY_STACK_BAD;
		return 1;
	}
	code = link[0];
	if (!code || read_ptr(code + PY_OB_TYPE) != code_type_link + bias) {
		w->st.flags |= VT_PY_STACK_BAD;
		return 1;
	}
	d = w->st.depth;
	if (d >= VT_PY_STACK_MAX) {
		w->st.flags |= VT_PY_STACK_CUT;
		return 1;
	}
	f = &w->st.f[d & (VT_PY_STACK_SLOTS - 1)];
	code_id(f, code);
	/* a frame not yet started points one before its first instruction */
	instr = (link[(PY_FRAME_PREV_INSTR - PY_FRAME_F_CODE) / 8] - (code + PY_CODE_ADAPTIVE)) / 2;
	f->instr = instr < PY_INSTR_MAX ? (__u32)instr + 1 : 0;
	w->st.depth = d + 1;
	w->hash = ((((w->hash ^ f->code) * PY_HASH_MUL ^ f->qualname) * PY_HASH_MUL ^ f->filename) *
			   PY_HASH_MUL ^
		   ((__u64)f->firstlineno << 32 | f->instr)) * PY_HASH_MUL;
	w->frame = link[(PY_FRAME_PREVIOUS - PY_FRAME_F_CODE) / 8];
	return 0;
}

/* code's line table into py_lines, once; a table the process cannot give
 * leaves its frames at their first line. */
static __always_inline void learn_lines(struct py_stack_walk *w, const struct vt_py_code_id *id)
{
	__u64 table, len = 0;
	long err;

	if (!id->code || bpf_map_lookup_elem(&py_lines, id))
		return;
	table = read_ptr(id->code + PY_CODE_LINETABLE);
	if (!table || bpf_probe_read_user(&len, sizeof(len), (void *)(table + PY_BYTES_SIZE)) ||
	    !len)
		return;
	if (len > VT_PY_LINETABLE)
		len = VT_PY_LINETABLE; /* cut: later instructions show the first line */
	if (bpf_probe_read_user(w->lines.table, (__u32)len, (void *)(table + PY_BYTES_DATA)))
		return;
	w->lines.len = (__u32)len;
	err = bpf_map_update_elem(&py_lines, id, &w->lines, BPF_NOEXIST);
	if (err && err != -EEXIST)
		add(VT_PY_L_LINES_FULL, 1);
}

/* bpf_loop's callback over a newly interned stack: name frame i's code and
 * read its line table. */
static long py_stack_name(__u64 i, void *ctx)
{
	struct py_stack_walk *w;
	struct vt_py_code_id id;
	__u32 zero = 0;

	w = bpf_map_lookup_elem(&py_stack_scratch, &zero);
	if (!w || i >= w->st.depth)
		return 1;
	id = w->st.f[i & (VT_PY_STACK_SLOTS - 1)];
	id.instr = 0; /* codes is keyed by the code alone */
	learn_code(&id, NULL, NULL);
	learn_lines(w, &id);
	return 0;
}

/* The id of the Python stack whose innermost frame is frame, interned in
 * py_stacks; 0 when there is none. Losses are counted. */
static __always_inline __u64 py_stack_id(__u64 frame)
{
	struct py_stack_walk *w;
	__u32 zero = 0;
	__u64 id;
	long err;

	w = bpf_map_lookup_elem(&py_stack_scratch, &zero);
	if (!w || !frame)
		return 0;
	w->frame = frame;
	w->hash = 0xcbf29ce484222325ULL;
	w->done = 0;
	w->st.depth = 0;
	w->st.flags = 0;
	bpf_loop(PY_STACK_SCAN, py_stack_step, NULL, 0);
	if (!w->done && !(w->st.flags & (VT_PY_STACK_BAD | VT_PY_STACK_CUT)))
		w->st.flags |= VT_PY_STACK_CUT;
	if (w->st.flags & VT_PY_STACK_CUT)
		add(VT_PY_L_STACK_CUT, 1);
	if (w->st.flags & VT_PY_STACK_BAD)
		add(VT_PY_L_STACK_BAD, 1);
	if (!w->st.depth)
		return 0;
	id = (w->hash ^ w->st.flags) | 1;
	if (bpf_map_lookup_elem(&py_stacks, &id))
		return id;
	bpf_loop(w->st.depth, py_stack_name, NULL, 0);
	err = bpf_map_update_elem(&py_stacks, &id, &w->st, BPF_NOEXIST);
	if (err && err != -EEXIST)
		add(VT_PY_L_STACKS_FULL, 1);
	return id;
}

#endif /* VMTRACE_PYTHON_STACK_BPF_H */
