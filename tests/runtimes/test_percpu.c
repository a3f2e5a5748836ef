/*
 * test_percpu.c: merging per-CPU map values (consumer/src/runtimes/percpu.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "runtimes/percpu.h"

struct three { uint64_t count, bytes, samples; };
struct with_max { uint64_t total, max, n; };

static void test_stride(void **state)
{
	(void)state;
	assert_int_equal(vt_percpu_stride(8), 8);
	assert_int_equal(vt_percpu_stride(12), 16);
	assert_int_equal(vt_percpu_stride(24), 24);
	assert_int_equal(vt_percpu_stride(1), 8);
}

static void test_sums_every_field(void **state)
{
	struct three cpus[4] = {
		{ 1, 10, 1 }, { 2, 20, 2 }, { 0, 0, 0 }, { 40, 400, 4 },
	};
	struct three out;

	(void)state;
	memset(&out, 0xff, sizeof(out));
	vt_percpu_merge(cpus, sizeof(struct three), 4, &out, NULL, 0);
	assert_int_equal(out.count, 43);
	assert_int_equal(out.bytes, 430);
	assert_int_equal(out.samples, 7);
}

static void test_one_cpu_is_a_copy(void **state)
{
	struct three one = { 5, 6, 7 }, out;

	(void)state;
	vt_percpu_merge(&one, sizeof(one), 1, &out, NULL, 0);
	assert_memory_equal(&one, &out, sizeof(one));
}

static void test_max_fields(void **state)
{
	struct with_max cpus[3] = { { 10, 7, 1 }, { 20, 3, 1 }, { 5, 9, 1 } };
	const size_t max_off[] = { offsetof(struct with_max, max) };
	struct with_max out;

	(void)state;
	vt_percpu_merge(cpus, sizeof(struct with_max), 3, &out, max_off, 1);
	assert_int_equal(out.total, 35);
	assert_int_equal(out.max, 9);
	assert_int_equal(out.n, 3);
}

/* The kernel pads each CPU's copy to 8 bytes: a 12-byte value sits at a
 * 16-byte stride. Only whole uint64_t fields are merged. */
static void test_padded_stride(void **state)
{
	uint64_t raw[4] = { 1, 0xdead, 10, 0xbeef }; /* 2 CPUs: field, padding */
	uint64_t out = 0;

	(void)state;
	vt_percpu_merge(raw, 12, 2, &out, NULL, 0);
	assert_int_equal(out, 11);
}

static void test_no_overflow_check_wraps_like_the_kernel(void **state)
{
	uint64_t cpus[2] = { UINT64_MAX, 2 }, out;

	(void)state;
	vt_percpu_merge(cpus, 8, 2, &out, NULL, 0);
	assert_int_equal(out, 1);
}

static void test_many_cpus(void **state)
{
	enum { N = 256 };
	static struct three cpus[N];
	struct three out;

	(void)state;
	for (int i = 0; i < N; i++)
		cpus[i] = (struct three){ (uint64_t)i, 2 * (uint64_t)i, 1 };
	vt_percpu_merge(cpus, sizeof(struct three), N, &out, NULL, 0);
	assert_int_equal(out.count, N * (N - 1) / 2);
	assert_int_equal(out.bytes, N * (N - 1));
	assert_int_equal(out.samples, N);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stride),
		cmocka_unit_test(test_sums_every_field),
		cmocka_unit_test(test_one_cpu_is_a_copy),
		cmocka_unit_test(test_max_fields),
		cmocka_unit_test(test_padded_stride),
		cmocka_unit_test(test_no_overflow_check_wraps_like_the_kernel),
		cmocka_unit_test(test_many_cpus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
