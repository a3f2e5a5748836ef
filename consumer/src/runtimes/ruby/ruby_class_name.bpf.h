/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ruby_class_name.bpf.h: the name of a Ruby class, read by ruby.bpf.c from
 * the class object the first time it allocates, into class_names.
 */
/* ---- class names, read from the class the first time it allocates ----
 *
 * Ruby 3.1 keeps a named class's path as a String in its instance-variable
 * table under the internal ID __classpath__ (variable.c: classname()):
 *   struct RClass { RBasic basic; VALUE super; rb_classext_t *ptr; ... }
 *   rb_classext_t { st_table *iv_index_tbl; st_table *iv_tbl; ... }
 *   st_table { ...; st_index_t entries_start@32, entries_bound@40;
 *              st_table_entry *entries@48 }, entry { hash, key, record }
 * The ivars of the class object itself (@x, ID scope "instance") share the
 * table; the path is the one String under an ID of local scope. */
#define RB_CLASS_EXT 24
#define RB_EXT_IV_TBL 8
#define ST_ENTRIES_START 32
#define ST_ENTRIES_BOUND 40
#define ST_ENTRIES 48
#define ST_ENTRY_SIZE 24
#define ST_DELETED (~0ULL)
#define RB_ID_SCOPE_MASK 0x0e
#define RB_IV_SCAN 8                     /* table entries looked at */

static __always_inline int read_rstring(char *dst, __u64 str)
{
	__u64 flags = 0, len = 0, ptr = 0;

	if (bpf_probe_read_user(&flags, sizeof(flags), (void *)str) ||
	    (flags & VT_RB_T_MASK) != RB_T_STRING)
		return -1;
	if (flags & RB_STR_NOEMBED) {
		if (bpf_probe_read_user(&len, sizeof(len), (void *)(str + 16)) ||
		    bpf_probe_read_user(&ptr, sizeof(ptr), (void *)(str + 24)))
			return -1;
	} else {
		len = (flags >> RB_STR_EMBED_LEN_SHIFT) & 0x1f;
		ptr = str + 16;
	}
	if (len >= VT_RB_NAME) {
		len = VT_RB_NAME - 1;
		add(VT_RB_L_TRUNCATED, 1);
	}
	if (len && bpf_probe_read_user(dst, len & (VT_RB_NAME - 1), (void *)ptr))
		return -1;
	dst[len & (VT_RB_NAME - 1)] = '\0';
	return 0;
}

VT_MAP(class_name_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct vt_rb_class_name, 1); /* off the BPF stack, which the stack walk needs */

/* klass: qualified by its process's slot under record --all (procs_maps.h),
 * the key of class_names; its memory is read at the raw pointer. */
static __always_inline void learn_class_name(__u64 qklass)
{
	struct vt_rb_class_name *np;
	__u64 ext = 0, tbl = 0, start = 0, bound = 0, entries = 0, klass = vt_proc_raw(qklass);
	__u32 zero = 0;

	if (!klass || bpf_map_lookup_elem(&class_names, &qklass))
		return;
	np = bpf_map_lookup_elem(&class_name_scratch, &zero);
	if (!np)
		return;
	np->name[0] = '\0';
	if (!bpf_probe_read_user(&ext, sizeof(ext), (void *)(klass + RB_CLASS_EXT)) && ext &&
	    !bpf_probe_read_user(&tbl, sizeof(tbl), (void *)(ext + RB_EXT_IV_TBL)) && tbl &&
	    !bpf_probe_read_user(&start, sizeof(start), (void *)(tbl + ST_ENTRIES_START)) &&
	    !bpf_probe_read_user(&bound, sizeof(bound), (void *)(tbl + ST_ENTRIES_BOUND)) &&
	    !bpf_probe_read_user(&entries, sizeof(entries), (void *)(tbl + ST_ENTRIES)) && entries) {
		for (int i = 0; i < RB_IV_SCAN; i++) {
			__u64 e[3];

			if (start + i >= bound)
				break;
			if (bpf_probe_read_user(e, sizeof(e), (void *)(entries + (start + i) * ST_ENTRY_SIZE)))
				break;
			if (e[0] == ST_DELETED || (e[1] & RB_ID_SCOPE_MASK))
				continue;
			if (!read_rstring(np->name, e[2]))
				break;
			np->name[0] = '\0';
		}
	}
	/* an empty name is kept too: userspace reads it from /proc/PID/mem */
	if (bpf_map_update_elem(&class_names, &qklass, np, BPF_NOEXIST) == -E2BIG)
		add(VT_RB_L_NAMES_FULL, 1);
}
