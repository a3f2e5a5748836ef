/*
 * USDT argument strings as uprobe_multi attachment reads them
 * (consumer/src/runtimes/uprobe_multi.c): every form the notes of real
 * binaries use (libvmtrace, libruby, python3.11, libjvm, php) parses, each
 * to the register, offset, size and sign it names; forms the BPF side
 * cannot read are refused, never guessed.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <asm/ptrace.h>
#include <cmocka.h>

#include "process/usdt_notes.h"
#include "runtimes/uprobe_multi.h"

static void test_forms(void **state)
{
	struct vt_usdt_spec s;

	(void)state;
	assert_int_equal(vt_usdt_parse_args("8@%rdi -4@$-3 8@-16(%rbp) 2@(%rax) -1@%sil 4@%r13d",
					    77, &s), 0);
	assert_int_equal(s.arg_cnt, 6);
	assert_int_equal(s.usdt_cookie, 77);
	assert_int_equal(s.args[0].arg_type, VT_USDT_ARG_REG);
	assert_int_equal(s.args[0].reg_off, offsetof(struct pt_regs, rdi));
	assert_false(s.args[0].arg_signed);
	assert_int_equal(s.args[0].arg_bitshift, 0);
	assert_int_equal(s.args[1].arg_type, VT_USDT_ARG_CONST);
	assert_int_equal((int64_t)s.args[1].val_off, -3);
	assert_true(s.args[1].arg_signed);
	assert_int_equal(s.args[1].arg_bitshift, 32);
	assert_int_equal(s.args[2].arg_type, VT_USDT_ARG_REG_DEREF);
	assert_int_equal(s.args[2].reg_off, offsetof(struct pt_regs, rbp));
	assert_int_equal((int64_t)s.args[2].val_off, -16);
	assert_int_equal(s.args[3].arg_type, VT_USDT_ARG_REG_DEREF);
	assert_int_equal(s.args[3].reg_off, offsetof(struct pt_regs, rax));
	assert_int_equal(s.args[3].val_off, 0);
	assert_int_equal(s.args[3].arg_bitshift, 48);
	assert_int_equal(s.args[4].reg_off, offsetof(struct pt_regs, rsi));
	assert_true(s.args[4].arg_signed);
	assert_int_equal(s.args[4].arg_bitshift, 56);
	assert_int_equal(s.args[5].reg_off, offsetof(struct pt_regs, r13));
	assert_int_equal(vt_usdt_parse_args("", 0, &s), 0);
	assert_int_equal(s.arg_cnt, 0);
	assert_int_equal(vt_usdt_parse_args(NULL, 0, &s), 0);
}

static void test_refused(void **state)
{
	static const char *const bad[] = {
		"8@8(%rax,%rbx,4)", "8@%xmm0", "3@%rax", "8@", "@%rax", "8%rax", "8@$x",
		"8@16(%rbp", "8@sym(%rip)", "8@%rax 8@%rax 8@%rax 8@%rax 8@%rax 8@%rax 8@%rax "
		"8@%rax 8@%rax 8@%rax 8@%rax 8@%rax 8@%rax",
	};
	struct vt_usdt_spec s;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (vt_usdt_parse_args(bad[i], 0, &s) != -EINVAL)
			fail_msg("'%s' was not refused", bad[i]);
}

/* Every note of each binary that is here parses, with as many arguments
 * as the note says. */
static void test_real_binaries(void **state)
{
	static const char *const files[] = {
		LIBVMTRACE, "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1", "/usr/bin/python3.11",
		"/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so", "/usr/bin/php8.2",
	};
	size_t seen = 0;

	(void)state;
	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		struct vt_usdt_list l = { 0 };

		if (access(files[f], R_OK))
			continue;
		assert_int_equal(vt_usdt_read_file(files[f], &l), 0);
		for (size_t i = 0; i < l.n; i++) {
			struct vt_usdt_spec s;

			if (vt_usdt_parse_args(l.v[i].args, 0, &s))
				fail_msg("%s: %s:%s: '%s' refused", files[f], l.v[i].provider,
					 l.v[i].name, l.v[i].args);
			assert_int_equal(s.arg_cnt, l.v[i].nargs);
			seen++;
		}
		vt_usdt_list_free(&l);
	}
	assert_true(seen > 50);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forms),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_real_binaries),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
