/*
 * test_profiler.c: the SIGPROF sampling profiler: every sample taken is
 * counted or dropped, identical stacks merge, and the built-in
 * frame-pointer walk finds this file's own functions.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <vmtrace/vmtrace.h>

#define WANT_SAMPLES 60
#define GIVE_UP_SPINS (1ull << 36) /* a broken timer fails, never hangs */

/* Two fixed stacks, chosen by phase: the handler copies one of them. */
static _Atomic int phase;
static const uintptr_t stack_a[] = { 0x1000, 0x2000, 0x3000 };
static const uintptr_t stack_b[] = { 0x1000, 0x2000, 0x3000, 0x4000, 0x5000 };

static int fixed_backtrace(uintptr_t *frames, int max, void *ucontext, void *user)
{
	(void)ucontext;
	const uintptr_t *src = atomic_load(&phase) ? stack_b : stack_a;
	int n = atomic_load(&phase) ? 5 : 3;
	if (n > max)
		n = max;
	memcpy(frames, src, (size_t)n * sizeof(*frames));
	return user == &phase ? n : 0; /* a wrong user makes a third stack */
}

static volatile uint64_t sink;

static uint64_t samples_taken(void)
{
	struct vmtrace_profile_snapshot snap;
	assert_int_equal(vmtrace_profile_snapshot(&snap), 0);
	vmtrace_profile_snapshot_free(&snap);
	return snap.samples;
}

/* Burn CPU until the profiler has taken n samples in total. */
static void burn_until(uint64_t n)
{
	for (uint64_t spins = 0; samples_taken() < n; spins++) {
		for (int i = 0; i < 100000; i++)
			sink = sink * 31 + (uint64_t)i;
		assert_true(spins * 100000 < GIVE_UP_SPINS);
	}
}

static void check_snapshot_sums(const struct vmtrace_profile_snapshot *snap)
{
	uint64_t counted = 0;
	for (size_t i = 0; i < snap->nstacks; i++) {
		counted += snap->stacks[i].count;
		if (i)
			assert_true(snap->stacks[i - 1].count >= snap->stacks[i].count);
	}
	assert_int_equal(counted + snap->dropped, snap->samples);
}

static void test_counts_equal_samples_and_merge(void **state)
{
	(void)state;
	struct vmtrace_profile_snapshot snap;

	assert_int_equal(vmtrace_profile_start(0, NULL, NULL), -EINVAL);
	assert_int_equal(vmtrace_profile_stop(), -EAGAIN);
	/* drained by the dispatcher while it runs */
	assert_int_equal(vmtrace_bus_start(), 0);
	atomic_store(&phase, 0);
	assert_int_equal(vmtrace_profile_start(1000, fixed_backtrace, (void *)&phase), 0);
	assert_int_equal(vmtrace_profile_start(1000, fixed_backtrace, (void *)&phase), -EBUSY);
	burn_until(WANT_SAMPLES / 2);
	atomic_store(&phase, 1);
	burn_until(WANT_SAMPLES);
	assert_int_equal(vmtrace_profile_stop(), 0);
	vmtrace_bus_stop();

	assert_int_equal(vmtrace_profile_snapshot(&snap), 0);
	assert_true(snap.samples >= WANT_SAMPLES);
	check_snapshot_sums(&snap);
	/* two distinct stacks, however many samples */
	assert_int_equal(snap.nstacks, 2);
	for (size_t i = 0; i < snap.nstacks; i++) {
		const struct vmtrace_profile_stack *st = &snap.stacks[i];
		if (st->depth == 3)
			assert_memory_equal(st->frames, stack_a, sizeof(stack_a));
		else if (st->depth == 5)
			assert_memory_equal(st->frames, stack_b, sizeof(stack_b));
		else
			fail_msg("unexpected depth %u", st->depth);
	}
	print_message("samples %llu, dropped %llu, top count %llu\n", (unsigned long long)snap.samples,
		      (unsigned long long)snap.dropped, (unsigned long long)snap.stacks[0].count);
	vmtrace_profile_snapshot_free(&snap);
	vmtrace_profile_snapshot_free(NULL);
}

/* ---- the built-in walk ---- */

/* gcc leaves frameless leaf functions without a frame even with
 * -fno-omit-frame-pointer, and a walk then skips the leaf's caller: the
 * work is one call deeper so the functions the test looks for have frames. */
/* The walk is checked by these names: keep GCC from cloning the functions
 * under other names (profiled_leaf.constprop.0 at -O3). */
#if defined(__GNUC__) && !defined(__clang__)
#define KEEP_NAME __attribute__((noinline, noclone))
#else
#define KEEP_NAME __attribute__((noinline))
#endif

KEEP_NAME void profiled_step(uint64_t i)
{
	sink = sink * 31 + i;
}

KEEP_NAME void profiled_leaf(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		profiled_step(i);
	__asm__ volatile("" ::: "memory");
}

KEEP_NAME void profiled_outer(uint64_t n)
{
	profiled_leaf(n);
	__asm__ volatile("" ::: "memory");
}

KEEP_NAME void walk_from_here(uint64_t n)
{
	profiled_outer(n);
	__asm__ volatile("" ::: "memory");
}

static int names(const struct vmtrace_profile_stack *st, const char *prefix)
{
	char buf[256];
	for (uint32_t i = 0; i < st->depth; i++)
		if (strncmp(vmtrace_profile_symbolize(st->frames[i], buf, sizeof(buf)), prefix,
			    strlen(prefix)) == 0)
			return 1;
	return 0;
}

static void test_frame_pointer_walk(void **state)
{
	(void)state;
	struct vmtrace_profile_snapshot snap;

	/* no dispatcher: the snapshot drains */
	assert_int_equal(vmtrace_profile_start(1000, NULL, NULL), 0);
	for (uint64_t spins = 0; samples_taken() < WANT_SAMPLES; spins++) {
		walk_from_here(1000000);
		assert_true(spins * 1000000 < GIVE_UP_SPINS);
	}
	assert_int_equal(vmtrace_profile_stop(), 0);
	assert_int_equal(vmtrace_profile_snapshot(&snap), 0);
	check_snapshot_sums(&snap);

	uint64_t in_leaf = 0, through_outer = 0;
	for (size_t i = 0; i < snap.nstacks; i++) {
		const struct vmtrace_profile_stack *st = &snap.stacks[i];
		assert_true(st->depth >= 1 && st->depth <= VMTRACE_PROFILE_MAX_FRAMES);
		if (names(st, "profiled_")) {
			in_leaf += st->count;
			if (names(st, "profiled_outer+") && names(st, "walk_from_here+"))
				through_outer += st->count;
		}
	}
	print_message("samples %llu, stacks %zu, in leaf %llu, walked to the test %llu\n",
		      (unsigned long long)snap.samples, snap.nstacks, (unsigned long long)in_leaf,
		      (unsigned long long)through_outer);
	assert_true(in_leaf > 0);
#ifndef __SANITIZE_THREAD__
	/* ThreadSanitizer delivers signals late, with a context that no longer
	 * matches the stack: only the counts are checked there. */
	assert_true(through_outer > 0);
#endif
	vmtrace_profile_snapshot_free(&snap);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts_equal_samples_and_merge),
		cmocka_unit_test(test_frame_pointer_walk),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
