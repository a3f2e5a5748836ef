/*
 * The consumer's side of sampling, in a process that links libvmtrace
 * (shared or static, one build each): vt_sample_set_period must write the
 * very variable the provider reads, and the armed semaphore reader must
 * read the very semaphore the provider tests. The test plays the kernel's
 * part of holding sample__armed by writing the semaphore through
 * /proc/self/mem, then asks the provider what period is in force.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "process/proc_info.h"
#include "runtimes/vmtrace/sampling.h"
#include "process/usdt_notes.h"
#include "vmtrace/vmtrace.h"

static struct vt_usdt_list probes;

/* .bss that runs past the executable's last file page: its tail lives in
 * anonymous memory, where the address must still be found. */
char test_bss_big[1 << 20];
__asm__(".globl test_bss_tail\n\t.type test_bss_tail, @object\n\t"
	".set test_bss_tail, test_bss_big + 1040000\n");
extern char test_bss_tail[];

static int setup(void **state)
{
	(void)state;
	return vt_usdt_read_pid(getpid(), &probes);
}

static int teardown(void **state)
{
	(void)state;
	vt_usdt_list_free(&probes);
	return 0;
}

static const char *module(void)
{
	for (size_t i = 0; i < probes.n; i++)
		if (!strcmp(probes.v[i].provider, "vmtrace") && !strcmp(probes.v[i].name, "sample__armed"))
			return probes.v[i].path;
	return NULL;
}

static void write_self(uint64_t addr, const void *v, size_t len)
{
	int fd = open("/proc/self/mem", O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, v, len, (off_t)addr), (ssize_t)len);
	close(fd);
}

static void test_module_found(void **state)
{
	(void)state;
	assert_non_null(module());
#ifdef STATIC_HOST
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	assert_string_equal(module(), exe); /* the probes live in the executable */
#else
	assert_non_null(strstr(module(), "libvmtrace.so"));
#endif
}

static void test_period_reaches_provider(void **state)
{
	(void)state;
	uint64_t period = 0, sem_addr;
	uint16_t armed = 99;

	assert_int_equal(vt_sample_armed_count(getpid(), &probes, &armed), 0);
	assert_int_equal(armed, 0);
	assert_int_equal(vt_sample_set_period(getpid(), &probes, 524288), 0);
	assert_int_equal(vt_sample_get_period(getpid(), &probes, &period), 0);
	assert_int_equal(period, 524288);
	/* nobody holds sample__armed: the provider stays exact */
	assert_int_equal(vmtrace_sample_period_effective(), 0);

	/* hold the semaphore as the kernel would for an attached uprobe */
	assert_int_equal(vt_proc_symbol_address(getpid(), module(), "vmtrace_sample__armed_semaphore",
						&sem_addr), 0);
	uint16_t one = 1, zero = 0;
	write_self(sem_addr, &one, sizeof(one));
	assert_int_equal(vt_sample_armed_count(getpid(), &probes, &armed), 0);
	assert_int_equal(armed, 1);
	assert_int_equal(vmtrace_sample_period_effective(), 524288);
	assert_int_equal(vt_sample_set_period(getpid(), &probes, 4096), 0);
	assert_int_equal(vmtrace_sample_period_effective(), 4096);

	/* the semaphore back at 0 (consumer gone): exact again, whatever the variable says */
	write_self(sem_addr, &zero, sizeof(zero));
	assert_int_equal(vmtrace_sample_period_effective(), 0);
	assert_int_equal(vt_sample_get_period(getpid(), &probes, &period), 0);
	assert_int_equal(period, 4096);
	assert_int_equal(vt_sample_set_period(getpid(), &probes, 0), 0);
}

/* A period near 2^64 (anyone may write the variable): every gap drawn is a
 * positive countdown of at most 2^62 bytes, never the undefined result of
 * converting a double past INT64_MAX. */
static void test_huge_period_gap(void **state)
{
	(void)state;
	uint64_t sem_addr, alloc_sem;
	uint16_t one = 1, zero = 0;

	/* as if a consumer held object__alloc and sample__armed */
	assert_int_equal(vt_proc_symbol_address(getpid(), module(), "vmtrace_sample__armed_semaphore",
						&sem_addr), 0);
	assert_int_equal(vt_proc_symbol_address(getpid(), module(), "vmtrace_object__alloc_semaphore",
						&alloc_sem), 0);
	write_self(sem_addr, &one, sizeof(one));
	write_self(alloc_sem, &one, sizeof(one));
	for (int i = 0; i < 200; i++) {
		/* a new period makes the provider draw a fresh gap */
		uint64_t period = i % 2 ? UINT64_MAX : UINT64_MAX - 4096 - (uint64_t)i;

		assert_int_equal(vt_sample_set_period(getpid(), &probes, period), 0);
		vmtrace_alloc("Huge", "Period#draw", 1, NULL);
		assert_true(vmtrace__sample_left > 0);
		assert_true(vmtrace__sample_left <= (INT64_C(1) << 62));
	}
	write_self(alloc_sem, &zero, sizeof(zero));
	write_self(sem_addr, &zero, sizeof(zero));
	assert_int_equal(vt_sample_set_period(getpid(), &probes, 0), 0);
}

/* Another process: the child waits, the parent writes its period. */
static void test_other_process(void **state)
{
	(void)state;
	int ready[2], go[2];
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(go), 0);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		char c = 0;
		uint64_t addr;
		if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(2);
		/* the child holds its own semaphore and reports the period in force */
		if (vt_proc_symbol_address(getpid(), module(), "vmtrace_sample__armed_semaphore", &addr))
			_exit(3);
		uint16_t one = 1;
		int fd = open("/proc/self/mem", O_RDWR);
		if (fd < 0 || pwrite(fd, &one, 2, (off_t)addr) != 2)
			_exit(4);
		_exit(vmtrace_sample_period_effective() == 777777 ? 0 : 5);
	}
	char c;
	assert_int_equal(read(ready[0], &c, 1), 1);
	assert_int_equal(vt_sample_set_period(child, &probes, 777777), 0);
	assert_int_equal(write(go[1], &c, 1), 1);
	int status;
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* gone: a clear error */
	uint64_t period;
	assert_int_equal(vt_sample_get_period(child, &probes, &period), -ESRCH);
	assert_int_equal(vt_sample_set_period(child, &probes, 1), -ESRCH);
	close(ready[0]), close(ready[1]), close(go[0]), close(go[1]);
}

static void test_bss_past_file_end(void **state)
{
	(void)state;
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	uint64_t big, tail, tail_off, ignored;
	assert_int_equal(vt_proc_symbol_address(getpid(), exe, "test_bss_big", &big), 0);
	assert_int_equal(vt_proc_symbol_address(getpid(), exe, "test_bss_tail", &tail), 0);
	assert_int_equal(big, (uintptr_t)test_bss_big);
	assert_int_equal(tail, (uintptr_t)test_bss_tail);
	/* the tail's offset lies past the end of the file: no file page maps it */
	assert_int_equal(vt_elf_symbol(exe, "test_bss_tail", &ignored, &tail_off), 0);
	FILE *f = fopen(exe, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	uint64_t size = (uint64_t)ftell(f);
	fclose(f);
	assert_true(tail_off > size + 4096);
	test_bss_big[0] = 1; /* keep it */
}

static void test_no_vmtrace_module(void **state)
{
	(void)state;
	struct vt_usdt_list none = { 0 };
	uint64_t period;
	assert_int_equal(vt_sample_set_period(getpid(), &none, 1), -ENOENT);
	assert_int_equal(vt_sample_get_period(getpid(), &none, &period), -ENOENT);
	assert_int_equal(vt_proc_symbol_address(getpid(), module(), "vmtrace_no_such", &period), -ENOENT);
	assert_int_equal(vt_proc_symbol_address(getpid(), "/no/such/module", "vmtrace_sample_period", &period),
			 -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_module_found),
		cmocka_unit_test(test_period_reaches_provider),
		cmocka_unit_test(test_huge_period_gap),
		cmocka_unit_test(test_other_process),
		cmocka_unit_test(test_bss_past_file_end),
		cmocka_unit_test(test_no_vmtrace_module),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
