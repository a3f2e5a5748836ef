/*
 * test_python_lines.c: a CPython 3.11 line table read as CPython reads it
 * (python_lines.c). The table and the lines are python3.11's own, for
 *
 *   1 def f(x):
 *   2     y = (x +
 *   3          1)
 *   4     for i in range(3):
 *   5         y += i
 *   6     if y > 2:
 *   7         return [
 *   8             i for i in range(y)
 *   9         ]
 *  10     return (y,
 *  11             x)
 *
 * (f.__code__.co_linetable, and [p[0] for p in f.__code__.co_positions()]):
 * lines going back as well as forward, short, one-line and long entries.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "runtimes/python/python_lines.h"

static const uint8_t table[] = {
	0x80, 0x00, 0xd8, 0x09, 0x0a, 0xd8, 0x09, 0x0a, 0xf1, 0x03, 0x01, 0x0a, 0x0b, 0x80, 0x41,
	0xe5, 0x0d, 0x12, 0x90, 0x31, 0x89, 0x58, 0x8c, 0x58, 0xf0, 0x00, 0x01, 0x05, 0x0f, 0xf0,
	0x00, 0x01, 0x05, 0x0f, 0x88, 0x01, 0xd8, 0x08, 0x09, 0x88, 0x51, 0x89, 0x06, 0x88, 0x01,
	0x88, 0x01, 0xd8, 0x07, 0x08, 0x88, 0x31, 0x82, 0x75, 0x80, 0x75, 0xf0, 0x02, 0x02, 0x10,
	0x0a, 0xf0, 0x00, 0x02, 0x10, 0x0a, 0xdd, 0x17, 0x1c, 0x98, 0x51, 0x91, 0x78, 0x94, 0x78,
	0xf0, 0x03, 0x02, 0x10, 0x0a, 0xf1, 0x00, 0x02, 0x10, 0x0a, 0xf4, 0x00, 0x02, 0x10, 0x0a,
	0xf0, 0x00, 0x02, 0x09, 0x0a, 0xf0, 0x06, 0x00, 0x0d, 0x0e, 0xd8, 0x0c, 0x0d, 0xf0, 0x03,
	0x01, 0x0c, 0x0f, 0xf0, 0x00, 0x01, 0x05, 0x0f,
};

static const uint32_t lines[64] = {
	1, 2, 3, 2, 2, 2, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
	4, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 7, 7, 8, 8, 8, 8, 8, 8, 8,
	8, 8, 8, 8, 8, 8, 8, 7, 7, 7, 7, 7, 7, 7, 7, 7, 10, 11, 10, 10,
};

static void test_every_instruction(void **state)
{
	(void)state;
	for (uint32_t i = 0; i < 64; i++)
		assert_int_equal(vt_py_line_of(table, sizeof(table), 1, i), lines[i]);
}

/* past the table, a cut table, an empty one, or bytes that start no entry:
 * the first line, and no read outside the table (ASan runs this too) */
static void test_not_covered(void **state)
{
	static const uint8_t no_entry[] = { 0x01, 0x02 };
	static const uint8_t cut_varint[] = { 0xf0, 0x7f }; /* a long entry, its varint cut */
	(void)state;
	assert_int_equal(vt_py_line_of(table, sizeof(table), 1, 64), 1);
	assert_int_equal(vt_py_line_of(table, 20, 1, 40), 1);
	assert_int_equal(vt_py_line_of(table, 0, 7, 0), 7);
	assert_int_equal(vt_py_line_of(no_entry, sizeof(no_entry), 7, 0), 7);
	assert_int_equal(vt_py_line_of(cut_varint, sizeof(cut_varint), 7, 0), 7);
}

/* an entry with no line (code 15) gives the first line, not its neighbour's */
static void test_no_line(void **state)
{
	static const uint8_t t[] = { 0xd8, 0x00, 0x01, 0xf8, 0xd8, 0x00, 0x01 }; /* +1, none, +1 */
	(void)state;
	assert_int_equal(vt_py_line_of(t, sizeof(t), 10, 0), 11);
	assert_int_equal(vt_py_line_of(t, sizeof(t), 10, 1), 10);
	assert_int_equal(vt_py_line_of(t, sizeof(t), 10, 2), 12);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_instruction),
		cmocka_unit_test(test_not_covered),
		cmocka_unit_test(test_no_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
