/*
 * test_provider: the host-facing half of libvmtrace.
 *
 * Linked statically, like demovm, so a system-wide tracer of libvmtrace.so
 * elsewhere on the machine cannot raise these gates under the test.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <vmtrace/vmtrace.h>

/* The semaphores named by the probes' ELF notes (defined in probes.c). */
#define X_SEMAPHORE(e, n) extern unsigned short vmtrace_##n##_semaphore;
VMTRACE_PROBE_LIST(X_SEMAPHORE)
#undef X_SEMAPHORE

static int evaluations;

/* An argument with a side effect: counts how often a macro evaluates it. */
static const char *counted(const char *s)
{
	evaluations++;
	return s;
}

static uint64_t counted_u64(uint64_t v)
{
	evaluations++;
	return v;
}

static void test_gates_closed_when_untraced(void **state)
{
	(void)state;
	for (int p = 0; p < VMTRACE_PROBE__COUNT; p++) {
		assert_int_equal(vmtrace__gate_table()[p].any, 0);
		assert_int_equal(vmtrace__gate_table()[p].part.semaphore, 0);
		assert_int_equal(vmtrace__gate_table()[p].part.subscribers, 0);
	}
	assert_false(VMTRACE_ENABLED(OBJECT_ALLOC));
	assert_false(VMTRACE_ENABLED(GC_BEGIN));
	assert_false(VMTRACE_ENABLED(SAMPLE_ARMED));
}

/* The semaphore half of gate P is exactly the symbol its ELF note names, so
 * the kernel's increments land where the host's inline check looks. */
static void test_semaphores_are_gate_low_halves(void **state)
{
	(void)state;
	const volatile void *semaphores[] = {
#define X_ADDR(e, n) &vmtrace_##n##_semaphore,
		VMTRACE_PROBE_LIST(X_ADDR)
#undef X_ADDR
	};
	assert_int_equal(sizeof(semaphores) / sizeof(semaphores[0]), VMTRACE_PROBE__COUNT);
	for (int p = 0; p < VMTRACE_PROBE__COUNT; p++)
		assert_ptr_equal(semaphores[p], &vmtrace__gate_table()[p].part.semaphore);
	/* statically linked, the GOT load resolves to the library's table */
	assert_ptr_equal(vmtrace__gate_table(), vmtrace_gates);
}

static void test_disabled_macros_do_not_evaluate_arguments(void **state)
{
	(void)state;
	evaluations = 0;
	vmtrace_alloc(counted("Point"), counted("Geometry#translate"), counted_u64(32), counted("a.c:1"));
	vmtrace_free(counted("Point"), counted_u64(32));
	vmtrace_method_entry(counted("Geometry"), counted("translate"), counted("a.c"), (int)counted_u64(3));
	vmtrace_method_return(counted("Geometry"), counted("translate"), counted("a.c"), (int)counted_u64(3));
	vmtrace_method_cache_reset(counted("Geometry"), counted("translate"), counted_u64(7));
	vmtrace_constant_cache_reset(counted("LIMIT"), counted_u64(8));
	vmtrace_global_serial_inc(counted_u64(9), counted("method redefined"));
	vmtrace_gc_begin((int)counted_u64(VMTRACE_GC_MINOR), counted_u64(4096));
	vmtrace_gc_end((int)counted_u64(VMTRACE_GC_MAJOR), counted_u64(1024));
	assert_int_equal(evaluations, 0);
}

static void test_sample_period_needs_armed_consumer(void **state)
{
	(void)state;
	assert_int_equal(vmtrace_sample_period_effective(), 0);
	vmtrace_sample_period = 4096;
	/* nobody holds sample__armed: the process stays exact */
	assert_int_equal(vmtrace_sample_period_effective(), 0);
	vmtrace_sample_period = 0;
	assert_int_equal(vmtrace_sample_period_effective(), 0);
}

/* ---- enabled through an in-process subscriber ---- */

#define MAX_SEEN 16
static struct vmtrace_event seen[MAX_SEEN];
static int nseen;

static void record(const struct vmtrace_event *ev, void *user)
{
	(void)user;
	if (nseen < MAX_SEEN)
		seen[nseen] = *ev;
	nseen++;
}

static int bus_setup(void **state)
{
	(void)state;
	nseen = 0;
	return vmtrace_bus_start() == 0 ? 0 : -1;
}

static int bus_teardown(void **state)
{
	(void)state;
	vmtrace_bus_stop();
	return 0;
}

static void test_subscriber_opens_only_its_gate(void **state)
{
	(void)state;
	int id = vmtrace_bus_subscribe(VMTRACE_EV_ALLOC, record, NULL);
	assert_true(id > 0);
	assert_true(VMTRACE_ENABLED(OBJECT_ALLOC));
	assert_int_equal(vmtrace__gate_table()[VMTRACE_PROBE_OBJECT_ALLOC].part.subscribers, 1);
	assert_int_equal(vmtrace__gate_table()[VMTRACE_PROBE_OBJECT_ALLOC].part.semaphore, 0);
	for (int p = 0; p < VMTRACE_PROBE__COUNT; p++)
		if (p != VMTRACE_PROBE_OBJECT_ALLOC)
			assert_int_equal(vmtrace__gate_table()[p].any, 0);
	assert_int_equal(vmtrace_bus_unsubscribe(id), 0);
	assert_false(VMTRACE_ENABLED(OBJECT_ALLOC));
	assert_int_equal(vmtrace_bus_unsubscribe(id), -ENOENT);
}

static void test_enabled_alloc_evaluates_once_and_publishes(void **state)
{
	(void)state;
	static const char klass[] = "String", method[] = "Parser#tokenize", site[] = "parser.c:42";
	int id = vmtrace_bus_subscribe(VMTRACE_EV_ALLOC, record, NULL);
	assert_true(id > 0);

	evaluations = 0;
	vmtrace_alloc(counted(klass), counted(method), counted_u64(57), counted(site));
	assert_int_equal(evaluations, 4);
	/* a disabled neighbour still costs nothing */
	vmtrace_free(counted(klass), counted_u64(57));
	assert_int_equal(evaluations, 4);

	assert_int_equal(vmtrace_bus_flush(), 0);
	assert_int_equal(nseen, 1);
	assert_int_equal(seen[0].kind, VMTRACE_EV_ALLOC);
	assert_ptr_equal(seen[0].u.alloc.klass, klass);
	assert_ptr_equal(seen[0].u.alloc.method, method);
	assert_int_equal(seen[0].u.alloc.size, 57);
	assert_ptr_equal(seen[0].u.alloc.site, site);
	assert_int_equal(seen[0].u.alloc.weight, 1);
	assert_int_not_equal(seen[0].time_ns, 0);
	assert_int_equal(vmtrace_bus_unsubscribe(id), 0);
}

static void test_every_macro_reaches_its_kind(void **state)
{
	(void)state;
	static const enum vmtrace_event_kind kinds[] = {
		VMTRACE_EV_FREE, VMTRACE_EV_METHOD_ENTRY, VMTRACE_EV_METHOD_RETURN,
		VMTRACE_EV_METHOD_CACHE_RESET, VMTRACE_EV_CONSTANT_CACHE_RESET,
		VMTRACE_EV_GLOBAL_SERIAL_INC, VMTRACE_EV_GC_BEGIN, VMTRACE_EV_GC_END,
	};
	int ids[sizeof(kinds) / sizeof(kinds[0])];
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		ids[i] = vmtrace_bus_subscribe(kinds[i], record, NULL);
		assert_true(ids[i] > 0);
	}

	vmtrace_free("Point", 32);
	vmtrace_method_entry("Geometry", "translate", "geometry.c", 10);
	vmtrace_method_return("Geometry", "translate", "geometry.c", 10);
	vmtrace_method_cache_reset("Shape", NULL, 5);
	vmtrace_constant_cache_reset("LIMIT", 6);
	vmtrace_global_serial_inc(7, "method redefined");
	vmtrace_gc_begin(VMTRACE_GC_MAJOR, 8192);
	vmtrace_gc_end(VMTRACE_GC_MAJOR, 2048);
	assert_int_equal(vmtrace_bus_flush(), 0);

	/* one producer thread: delivered in publish order */
	assert_int_equal(nseen, 8);
	for (int i = 0; i < 8; i++)
		assert_int_equal(seen[i].kind, kinds[i]);
	assert_string_equal(seen[0].u.free.klass, "Point");
	assert_int_equal(seen[0].u.free.size, 32);
	assert_string_equal(seen[1].u.method.method, "translate");
	assert_int_equal(seen[2].u.method.line, 10);
	assert_null(seen[3].u.method_cache_reset.method);
	assert_int_equal(seen[3].u.method_cache_reset.serial, 5);
	assert_string_equal(seen[4].u.constant_cache_reset.name, "LIMIT");
	assert_int_equal(seen[5].u.global_serial_inc.serial, 7);
	assert_int_equal(seen[6].u.gc.kind, VMTRACE_GC_MAJOR);
	assert_int_equal(seen[6].u.gc.heap_bytes, 8192);
	assert_int_equal(seen[7].u.gc.heap_bytes, 2048);

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		assert_int_equal(vmtrace_bus_unsubscribe(ids[i]), 0);
	for (int p = 0; p < VMTRACE_PROBE__COUNT; p++)
		assert_int_equal(vmtrace__gate_table()[p].any, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gates_closed_when_untraced),
		cmocka_unit_test(test_semaphores_are_gate_low_halves),
		cmocka_unit_test(test_disabled_macros_do_not_evaluate_arguments),
		cmocka_unit_test(test_sample_period_needs_armed_consumer),
		cmocka_unit_test_setup_teardown(test_subscriber_opens_only_its_gate, bus_setup, bus_teardown),
		cmocka_unit_test_setup_teardown(test_enabled_alloc_evaluates_once_and_publishes, bus_setup, bus_teardown),
		cmocka_unit_test_setup_teardown(test_every_macro_reaches_its_kind, bus_setup, bus_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
