/*
 * ruby_stacks.c: Ruby stacks from the BPF maps of ruby.bpf.c (ruby_stacks.h).
 */
#include <stdio.h>

#include "runtimes/adapter.h"
#include "runtimes/ruby/ruby_stacks.h"
#include "runtimes/ruby/ruby_maps.h"

int vt_rb_stack_of(const struct vt_rb_stack_maps *m, uint64_t id, struct vt_profile *out,
		   uint64_t samples, uint32_t *sid, uint64_t *missing)
{
	static struct vt_rb_stack st;                        /* 3 KiB: not on the stack */
	static char names[VT_RB_STACK_SLOTS][2 * VT_RB_NAME + 24];
	static char files[VT_RB_STACK_SLOTS][VT_RB_FILE];
	struct vt_frame frames[VT_RB_STACK_SLOTS];
	__u64 key = id;

	if (bpf_map__lookup_elem(m->stacks, &key, sizeof(key), &st, sizeof(st), 0) || !st.depth ||
	    st.depth > VT_RB_STACK_MAX) {
		struct vt_frame lost = { "[stack lost]", "", 0 };

		*missing += samples;
		return vt_profile_add_stack(out, &lost, 1, false, sid);
	}
	for (uint32_t i = 0; i < st.depth; i++) {
		const struct vt_rb_stack_frame *f = &st.f[st.depth - 1 - i]; /* root first */
		struct vt_rb_frame_key fk = { f->code, f->owner };
		struct vt_rb_frame_name fn = { "", "" };
		struct vt_rb_class_name cn = { { 0 } };
		char label[VT_RB_NAME], owner[VT_RB_NAME];

		if (bpf_map__lookup_elem(m->frames, &fk, sizeof(fk), &fn, sizeof(fn), 0))
			snprintf(fn.label, sizeof(fn.label), "?"); /* counted: frame-name map full */
		vt_key_string(label, sizeof(label), fn.label, sizeof(fn.label));
		vt_key_string(files[i], sizeof(files[i]), fn.file, sizeof(fn.file));
		if (!f->owner) {
			snprintf(names[i], sizeof(names[i]), "%s", label);
		} else {
			__u64 k = f->owner;

			bpf_map__lookup_elem(m->classes, &k, sizeof(k), &cn, sizeof(cn), 0);
			vt_key_string(owner, sizeof(owner), cn.name, sizeof(cn.name));
			if (owner[0])
				snprintf(names[i], sizeof(names[i]), "%s#%s", owner, label);
			else
				snprintf(names[i], sizeof(names[i]), "#<Class:0x%016llx>#%s",
					 (unsigned long long)k, label);
		}
		frames[i].name = names[i];
		frames[i].file = files[i];
		frames[i].line = f->line;
	}
	return vt_profile_add_stack(out, frames, st.depth, (st.flags & VT_RB_STACK_CUT) != 0, sid);
}
