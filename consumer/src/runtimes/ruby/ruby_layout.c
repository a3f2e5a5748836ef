/*
 * ruby_layout.c: Ruby's frame layout per version (ruby_layout.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "process/elf_code.h"
#include "runtimes/ruby/ruby_layout.h"
#include "process/usdt_notes.h"

/* Offsets on x86-64, from Ruby's vm_core.h and iseq.h of that version,
 * and checked against a running ruby (the walk verifies, per event, that
 * the frame's iseq is an imemo_iseq, and counts a loss otherwise). */
static const struct {
	int major, minor;
	struct vt_rb_frame_layout l;
} layouts[] = {
	{ 3, 1, {
		.ec_vm_stack = 0, .ec_vm_stack_size = 8, .ec_cfp = 16,
		/* pc, sp, iseq, self, ep, block_code, __bp__, jit_return */
		.cfp_size = 64, .cfp_pc = 0, .cfp_iseq = 16, .cfp_ep = 32,
		.iseq_body = 16,
		/* type, iseq_size, iseq_encoded, param (48 bytes), location
		 * { pathobj, base_label, label, first_lineno, node_id,
		 * code_location }, insns_info { body, positions, size,
		 * succ_index_table } */
		.body_encoded = 8, .body_path = 64, .body_base_label = 72, .body_label = 80,
		.body_insns = 120, .body_insns_size = 136, .body_succ = 144,
		/* { int line_no; int node_id; rb_event_flag_t events; } */
		.insn_entry_size = 12,
		.frame_cframe = 0x80, .env_local = 0x02,
		/* rb_method_entry_t { flags, defined_class, def, called_id, owner } */
		.me_owner = 32,
	} },
};

int vt_rb_frame_layout(const char *path, struct vt_rb_frame_layout *out, uint64_t *ec_tls_index,
		       char *why, size_t whylen)
{
	int32_t api[3] = { 0 };
	uint64_t addr, off;
	uint8_t code[256];
	size_t i;

	/* ruby_api_version: { major, minor, teeny } */
	if (vt_elf_symbol(path, "ruby_api_version", &addr, &off) ||
	    vt_elf_code_at(path, addr, (uint8_t *)api, sizeof(api), &off)) {
		snprintf(why, whylen, "no ruby_api_version in %s", path);
		return -ENOTSUP;
	}
	for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].major == api[0] && layouts[i].minor == api[1])
			break;
	if (i == sizeof(layouts) / sizeof(layouts[0])) {
		snprintf(why, whylen, "no frame layout known for Ruby %d.%d", api[0], api[1]);
		return -ENOTSUP;
	}
	/* the allocation code reads ruby_current_ec through __tls_get_addr:
	 * data16 lea tls_index(%rip),%rdi (66 48 8d 3d disp32) */
	if (vt_elf_symbol(path, "rb_wb_protected_newobj_of", &addr, &off) ||
	    vt_elf_code_at(path, addr, code, sizeof(code), &off)) {
		snprintf(why, whylen, "no rb_wb_protected_newobj_of in %s", path);
		return -ENOEXEC;
	}
	for (size_t at = 0; at + 8 <= sizeof(code); at++) {
		if (code[at] == 0x66 && code[at + 1] == 0x48 && code[at + 2] == 0x8d && code[at + 3] == 0x3d) {
			int32_t rel;

			memcpy(&rel, code + at + 4, 4);
			*ec_tls_index = addr + at + 8 + (uint64_t)(int64_t)rel;
			*out = layouts[i].l;
			return 0;
		}
	}
	snprintf(why, whylen, "no TLS access of ruby_current_ec found in %s", path);
	return -ENOEXEC;
}
