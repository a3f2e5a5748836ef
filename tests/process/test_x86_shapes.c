/*
 * test_x86_shapes.c: the x86-64 code shapes the runtime adapters look for
 * (consumer/src/process/elf_code.c), on hand-made code and on Debian's libruby:
 * where each allocation uprobe goes and which registers hold what there.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "process/elf_code.h"
#include "runtimes/ruby/ruby_code.h"
#include "runtimes/ruby/ruby_maps.h"

/* rb_ec_wb_protected_newobj_of's prologue: args moved, then the first je */
static void ec_prologue_moves_args(void **state)
{
	static const uint8_t code[] = {
		0x48, 0x89, 0xf8,       /* mov %rdi,%rax */
		0x48, 0x89, 0xf7,       /* mov %rsi,%rdi */
		0x48, 0x89, 0xd6,       /* mov %rdx,%rsi */
		0x4c, 0x8b, 0x40, 0x30, /* mov 0x30(%rax),%r8 */
		0x4d, 0x85, 0xc0,       /* test %r8,%r8 */
		0x74, 0x04,             /* je */
	};
	uint64_t at = 0;
	int8_t regs[VT_X86_ARGS];

	(void)state;
	assert_int_equal(vt_x86_first_emulated(code, sizeof(code), 0x1000, &at, regs), 0);
	assert_int_equal(at, 0x1000 + 16);
	assert_int_equal(regs[0], 0); /* the ec, first argument: %rax */
	assert_int_equal(regs[1], 7); /* the class: %rdi */
	assert_int_equal(regs[2], 6); /* the flags: %rsi */
}

static void push_first_and_clobbers(void **state)
{
	static const uint8_t push[] = { 0x55, 0x48, 0x89, 0xf5 };
	static const uint8_t clobber[] = {
		0x48, 0x83, 0xec, 0x18,                         /* sub $0x18,%rsp */
		0x48, 0x8b, 0x3d, 0x01, 0x02, 0x03, 0x04,       /* mov disp32(%rip),%rdi */
		0x41, 0x54,                                     /* push %r12 */
	};
	static const uint8_t unknown[] = { 0x0f, 0x1f, 0x44, 0x00, 0x00, 0x55 }; /* nopl: not listed */
	uint64_t at = 0;
	int8_t regs[VT_X86_ARGS];

	(void)state;
	assert_int_equal(vt_x86_first_emulated(push, sizeof(push), 0x10, &at, regs), 0);
	assert_int_equal(at, 0x10);
	assert_int_equal(regs[0], 7);
	assert_int_equal(vt_x86_first_emulated(clobber, sizeof(clobber), 0x10, &at, regs), 0);
	assert_int_equal(at, 0x10 + 11);
	assert_int_equal(regs[0], -1); /* %rdi overwritten */
	assert_int_equal(regs[1], 6);
	assert_int_equal(vt_x86_first_emulated(unknown, sizeof(unknown), 0, &at, regs), -ENOEXEC);
}

static void lea_after_call(void **state)
{
	static const uint8_t code[] = {
		0x90,
		0xe8, 0x00, 0x00, 0x00, 0x00,                   /* call */
		0x48, 0x8d, 0x15, 0x10, 0x00, 0x00, 0x00,       /* lea 0x10(%rip),%rdx */
		0x48, 0x39, 0xc2,                               /* cmp %rax,%rdx */
	};
	static const uint8_t other_reg[] = {
		0xe8, 0x00, 0x00, 0x00, 0x00,
		0x48, 0x8d, 0x15, 0x10, 0x00, 0x00, 0x00,       /* lea ...,%rdx */
		0x48, 0x39, 0xc1,                               /* cmp %rax,%rcx: not the lea's */
	};
	uint64_t target = 0;

	(void)state;
	assert_int_equal(vt_x86_lea_after_call(code, sizeof(code), 0x2000, &target), 0);
	assert_int_equal(target, 0x2000 + 13 + 0x10);
	assert_int_equal(vt_x86_lea_after_call(other_reg, sizeof(other_reg), 0, &target), -ENOEXEC);
}

/* Debian's libruby 3.1: all ten functions found, each at an emulated
 * instruction, rb_class_allocate_instance at a push */
static void libruby_sites(void **state)
{
	struct vt_rb_alloc_site s[VT_RB_ALLOC_FUNCS];
	char why[256] = "";
	uint8_t first;
	uint64_t off;

	(void)state;
	assert_int_equal(vt_rb_find_alloc_sites(LIBRUBY, false, s, why, sizeof(why)), 0);
	for (int i = 0; i < VT_RB_ALLOC_FUNCS; i++) {
		assert_non_null(s[i].func);
		assert_int_equal(s[i].emulated, 1);
		assert_int_equal((s[i].cookie >> VT_RB_CK_VADDR_SHIFT) != 0, 1);
	}
	assert_string_equal(s[VT_RB_ALLOC_FUNCS - 1].func, "rb_class_allocate_instance");
	assert_int_equal(vt_elf_code_at(LIBRUBY, s[VT_RB_ALLOC_FUNCS - 1].cookie >> VT_RB_CK_VADDR_SHIFT,
				       &first, 1, &off), 0);
	assert_int_equal(first & 0xf8, 0x50);
	assert_int_equal(s[VT_RB_ALLOC_FUNCS - 1].cookie & VT_RB_CK_IVARS, VT_RB_CK_IVARS);
	/* not libruby: a clear reason */
	assert_int_not_equal(vt_rb_find_alloc_sites("/bin/true", false, s, why, sizeof(why)), 0);
	assert_non_null(strstr(why, "/bin/true"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ec_prologue_moves_args),
		cmocka_unit_test(push_first_and_clobbers),
		cmocka_unit_test(lea_after_call),
		cmocka_unit_test(libruby_sites),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
