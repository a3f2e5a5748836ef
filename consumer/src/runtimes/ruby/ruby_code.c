/*
 * ruby_code.c: libruby's allocation functions and the place to probe each
 * (ruby_code.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "process/elf_code.h"
#include "runtimes/ruby/ruby_code.h"
#include "process/usdt_notes.h"
#include "runtimes/ruby/ruby_maps.h"

/* The functions of gc.c that make objects, with the argument (0-based)
 * holding the class and the flags, -1 for none, and the type when the
 * flags do not say it. Every other way to an object calls one of them
 * through the PLT (rb_data_*_zalloc call the _wrap ones, which are probed
 * instead); rb_imemo_new's klass slot holds data (v0), not a class. */
static const struct {
	const char *func;
	int klass_arg, flags_arg;
	uint8_t type;
} alloc_funcs[VT_RB_ALLOC_FUNCS - 1] = {
	{ "rb_wb_protected_newobj_of", 0, 1, VT_RB_CK_TYPE_FROM_FLAGS },
	{ "rb_wb_unprotected_newobj_of", 0, 1, VT_RB_CK_TYPE_FROM_FLAGS },
	{ "rb_ec_wb_protected_newobj_of", 1, 2, VT_RB_CK_TYPE_FROM_FLAGS },
	{ "rb_newobj_of", 0, 1, VT_RB_CK_TYPE_FROM_FLAGS },
	{ "rb_newobj", -1, -1, 0 /* T_NONE: the class is set later */ },
	{ "rb_data_object_wrap", 0, -1, VT_RB_T_DATA },
	{ "rb_data_typed_object_wrap", 0, -1, VT_RB_T_DATA },
	{ "rb_imemo_new", -1, -1, VT_RB_T_IMEMO },
	{ "rb_alloc_tmp_buffer_with_count", -1, -1, VT_RB_T_IMEMO },
};

/* The probe for a function at link-time address addr: its first emulated
 * instruction when the argument registers are known there, else its entry
 * (single-stepped: correct, one trap more). */
static int place(const char *path, const char *func, uint64_t addr, int klass_arg, int flags_arg,
		 uint8_t type, uint64_t ivars, bool at_entry, struct vt_rb_alloc_site *out)
{
	uint8_t code[96];
	uint64_t at = addr, off;
	int8_t regs[VT_X86_ARGS], entry[VT_X86_ARGS] = { 7 /* %rdi */, 6 /* %rsi */, 2 /* %rdx */ };
	int err = vt_elf_code_at(path, addr, code, sizeof(code), &off);

	if (err)
		return err;
	out->emulated = !at_entry && !vt_x86_first_emulated(code, sizeof(code), addr, &at, regs) &&
			(klass_arg < 0 || regs[klass_arg] >= 0) && (flags_arg < 0 || regs[flags_arg] >= 0);
	if (!out->emulated) {
		/* (at the entry a push is emulated too) */
		out->emulated = (code[0] & 0xf8) == 0x50 || (code[0] == 0x41 && (code[1] & 0xf8) == 0x50);
		at = addr;
		memcpy(regs, entry, sizeof(regs));
	}
	out->func = func;
	out->file_offset = off + (at - addr);
	out->cookie = vt_rb_newobj_cookie(type, klass_arg < 0 ? VT_RB_CK_NOREG : (uint8_t)regs[klass_arg],
					  flags_arg < 0 ? VT_RB_CK_NOREG : (uint8_t)regs[flags_arg]) |
		      ivars | at << VT_RB_CK_VADDR_SHIFT;
	return 0;
}

int vt_rb_find_alloc_sites(const char *path, bool at_entry,
			   struct vt_rb_alloc_site out[VT_RB_ALLOC_FUNCS], char *why, size_t whylen)
{
	uint64_t addr, off, alloc_instance;
	uint8_t code[512];
	size_t n = 0;
	int err;

	for (; n < VT_RB_ALLOC_FUNCS - 1; n++) {
		err = vt_elf_symbol(path, alloc_funcs[n].func, &addr, &off);
		if (!err)
			err = place(path, alloc_funcs[n].func, addr, alloc_funcs[n].klass_arg,
				    alloc_funcs[n].flags_arg, alloc_funcs[n].type, 0, at_entry, &out[n]);
		if (err) {
			snprintf(why, whylen, "ruby: no %s in %s (not Ruby 3.1?)", alloc_funcs[n].func, path);
			return err;
		}
	}
	/* rb_class_allocate_instance: rb_data_typed_object_wrap undefines the
	 * allocator of a class whose allocator it is (`if (rb_get_alloc_func(
	 * klass) == rb_class_allocate_instance)`): the function it compares with */
	err = vt_elf_symbol(path, "rb_data_typed_object_wrap", &addr, &off);
	if (!err)
		err = vt_elf_code_at(path, addr, code, sizeof(code), &off);
	if (!err)
		err = vt_x86_lea_after_call(code, sizeof(code), addr, &alloc_instance);
	if (!err)
		err = place(path, "rb_class_allocate_instance", alloc_instance, 0, -1, VT_RB_T_OBJECT,
			    VT_RB_CK_IVARS, at_entry, &out[n]);
	if (err) {
		snprintf(why, whylen, "ruby: rb_class_allocate_instance not found in %s (not Ruby 3.1 "
			 "on x86-64?): cannot see instances of plain classes", path);
		return err < 0 ? err : -ENOEXEC;
	}
	return 0;
}
