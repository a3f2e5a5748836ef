/*
 * python_stacks.c: CPython stacks from the BPF maps of python.bpf.c
 * (python_stacks.h).
 */
#include <inttypes.h>
#include <stdio.h>

#include "runtimes/adapter.h"
#include "runtimes/python/python_lines.h"
#include "runtimes/python/python_stacks.h"
#include "runtimes/python/python_maps.h"

/* The line frame f runs at instruction instr (+1; 0: unknown), from its
 * code's line table; its first line when the table was not read. */
static uint32_t line_of(const struct vt_py_stack_maps *m, const struct vt_py_code_id *f,
			uint32_t instr)
{
	static struct vt_py_lines lines; /* 1 KiB: not on the stack */

	if (!instr || !m->lines ||
	    bpf_map__lookup_elem(m->lines, f, sizeof(*f), &lines, sizeof(lines), 0) ||
	    lines.len > sizeof(lines.table))
		return f->firstlineno;
	return vt_py_line_of(lines.table, lines.len, f->firstlineno, instr - 1);
}

int vt_py_stack_of(const struct vt_py_stack_maps *m, uint64_t id, struct vt_profile *out,
		   uint64_t samples, uint32_t *sid, uint64_t *missing)
{
	static struct vt_py_stack st;                       /* 3 KiB: not on the stack */
	static char names[VT_PY_STACK_SLOTS][VT_PY_NAME];
	static char files[VT_PY_STACK_SLOTS][VT_PY_FILE];
	struct vt_frame frames[VT_PY_STACK_SLOTS];
	__u64 key = id;

	if (bpf_map__lookup_elem(m->stacks, &key, sizeof(key), &st, sizeof(st), 0) || !st.depth ||
	    st.depth > VT_PY_STACK_MAX) {
		struct vt_frame lost = { "[stack lost]", "", 0 };

		*missing += samples;
		return vt_profile_add_stack(out, &lost, 1, false, sid);
	}
	for (uint32_t i = 0; i < st.depth; i++) {
		struct vt_py_code_id f = st.f[st.depth - 1 - i]; /* root first */
		uint32_t instr = f.instr;
		struct vt_py_code c;

		f.instr = 0; /* codes is keyed by the code alone */
		if (bpf_map__lookup_elem(m->codes, &f, sizeof(f), &c, sizeof(c), 0)) {
			/* counted: code map full */
			snprintf(names[i], sizeof(names[i]), "<code 0x%" PRIx64 ">", (uint64_t)f.code);
			files[i][0] = '\0';
		} else {
			vt_key_string(names[i], sizeof(names[i]), c.qualname, sizeof(c.qualname));
			vt_key_string(files[i], sizeof(files[i]), c.file, sizeof(c.file));
		}
		frames[i].name = names[i];
		frames[i].file = files[i];
		frames[i].line = line_of(m, &f, instr);
	}
	return vt_profile_add_stack(out, frames, st.depth, (st.flags & VT_PY_STACK_CUT) != 0, sid);
}
