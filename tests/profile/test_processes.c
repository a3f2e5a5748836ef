/*
 * test_processes.c: a profile of several processes (profile_merge.c): rows
 * kept apart per process through the record file, grouping by pid and
 * cgroup, damaged process lines refused, container ids from paths, and
 * the runtimes that counted a process, each named once through merges.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "process/cgroup.h"
#include "profile/profile.h"
#include "report/report_model.h"

static void two_processes(struct vt_profile *p)
{
	struct vt_profile a, b;
	uint32_t pa, pb;

	vt_profile_init(p);
	vt_profile_init(&a);
	vt_profile_init(&b);
	assert_int_equal(vt_profile_set_meta(p, "vmtrace", "", "t", 10), 0);
	assert_int_equal(vt_profile_add_alloc(&a, "String", "m", "", 3, 30, 3), 0);
	assert_int_equal(vt_profile_add_alloc(&b, "String", "m", "", 5, 50, 5), 0);
	assert_int_equal(vt_profile_add_free(&b, "String", 2, 20), 0);
	assert_int_equal(vt_profile_add_process(p, 10, "a", "/x/docker-" "0123456789abcdef0123456789abcdef"
						"0123456789abcdef0123456789abcdef.scope", &pa), 0);
	assert_int_equal(vt_profile_add_process(p, 11, "b", "/", &pb), 0);
	assert_int_equal(vt_profile_merge(p, &a, pa), 0);
	assert_int_equal(vt_profile_merge(p, &b, pb), 0);
	vt_profile_free(&a);
	vt_profile_free(&b);
}

static void test_rows_per_process(void **state)
{
	struct vt_report_opts o = { 0 };
	struct vt_alloc_table t;
	struct vt_profile p, q;
	char path[] = "/tmp/vmtrace-procs-XXXXXX";
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	two_processes(&p);
	assert_int_equal(p.allocs.n, 2);
	assert_int_equal(p.frees.v[0].count, 2);
	assert_int_equal(vt_profile_write(&p, path, true), 0);
	assert_int_equal(vt_profile_read(&q, path), 0);
	unlink(path);
	assert_int_equal(q.procs.n, 2);
	assert_string_equal(q.procs.v[1].comm, "b");
	/* two processes: per pid by default */
	assert_int_equal(vt_alloc_table_build(&q, &o, &t), 0);
	assert_int_equal(t.total_rows, 2);
	assert_int_equal(t.rows[0].pid, 11);
	assert_int_equal(t.rows[0].count, 5);
	assert_null(t.rows[0].cgroup);
	vt_alloc_table_free(&t);
	o.per = VT_PER_CGROUP;
	assert_int_equal(vt_alloc_table_build(&q, &o, &t), 0);
	assert_string_equal(t.rows[1].cgroup, q.procs.v[0].cgroup);
	vt_alloc_table_free(&t);
	vt_profile_free(&p);
	vt_profile_free(&q);
}

static void test_process_runtimes(void **state)
{
	struct vt_profile p, dst;
	uint32_t id, did;

	(void)state;
	vt_profile_init(&p);
	vt_profile_init(&dst);
	assert_int_equal(vt_profile_add_process(&p, 10, "a", "/", &id), 0);
	assert_int_equal(vt_profile_process_runtime(&p, id, "ruby"), 0);
	assert_int_equal(vt_profile_process_runtime(&p, id, "vmtrace"), 0);
	assert_int_equal(vt_profile_process_runtime(&p, id, "ruby"), 0);
	assert_string_equal(p.procs.v[0].runtime, "ruby,vmtrace");
	/* a merged list adds only the items not there yet */
	assert_int_equal(vt_profile_add_process(&dst, 10, "a", "/", &did), 0);
	assert_int_equal(vt_profile_process_runtime(&dst, did, "vmtrace"), 0);
	assert_int_equal(vt_profile_process_runtime(&dst, did, p.procs.v[0].runtime), 0);
	assert_string_equal(dst.procs.v[0].runtime, "vmtrace,ruby");
	/* an item is matched whole, not as a prefix */
	assert_int_equal(vt_profile_process_runtime(&dst, did, "rub"), 0);
	assert_string_equal(dst.procs.v[0].runtime, "vmtrace,ruby,rub");
	vt_profile_free(&p);
	vt_profile_free(&dst);
}

static int read_items(const char *items)
{
	char buf[1024];
	struct vt_profile p;
	struct vt_record_error e;
	int lines = 10, r;

	for (const char *c = items; *c; c++)
		lines += *c == '\n';
	snprintf(buf, sizeof(buf),
		 "vmtrace-record 2\nruntime =vmtrace\nprobes =\ntarget =t\npid 1\nduration_s 1\n"
		 "start_unix_ns 0\nsample_period 0\nhas_allocations 1\nlast_serial 0\n"
		 "gc_collections 3 0 0 0\n%send %d\n", items, lines);
	FILE *f = fmemopen(buf, strlen(buf), "r");

	assert_non_null(f);
	r = vt_profile_read_stream(&p, f, &e);
	fclose(f);
	if (!r) {
		assert_int_equal(p.procs.n, 1);
		assert_int_equal(p.allocs.v[0].proc, 1);
	}
	vt_profile_free(&p);
	return r;
}

static void test_damaged_process_lines(void **state)
{
	static const char *const bad[] = {
		"process 0 =a =/\n", "process 5 =a\n", "process 5 =a =/\nprocess 5 =b =/\n",
		"alloc_process 1 0 =S =m = 1 1 1\n",
		"process 5 =a =/\nalloc_process 2 0 =S =m = 1 1 1\n",
		"process 5 =a =/\nalloc_process 1 1 =S =m = 1 1 1\n",
	};

	(void)state;
	assert_int_equal(read_items("process 5 =a =/\nalloc_process 1 0 =S =m = 1 1 1\n"), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_not_equal(read_items(bad[i]), 0);
}

static void test_container_ids(void **state)
{
	char id[128];
	const char *hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	char path[256];

	(void)state;
	snprintf(path, sizeof(path), "/system.slice/docker-%s.scope", hex64);
	vt_container_id(path, id, sizeof(id));
	assert_string_equal(id, hex64);
	snprintf(path, sizeof(path), "/docker/%s", hex64);
	vt_container_id(path, id, sizeof(id));
	assert_string_equal(id, hex64);
	snprintf(path, sizeof(path), "/kubepods/pod1/cri-containerd-%s.scope", hex64);
	vt_container_id(path, id, sizeof(id));
	assert_string_equal(id, hex64);
	vt_container_id("/user.slice/user-1000.slice", id, sizeof(id));
	assert_string_equal(id, "");
	vt_container_id("/", id, sizeof(id));
	assert_string_equal(id, "");
	vt_container_id("/docker-abc.scope", id, sizeof(id));
	assert_string_equal(id, "");
	/* a container's own cgroups below it, as systemd in a container makes */
	snprintf(path, sizeof(path), "/system.slice/docker-%s.scope/system.slice/cron.service", hex64);
	vt_container_id(path, id, sizeof(id));
	assert_string_equal(id, hex64);
	snprintf(path, sizeof(path), "/machine.slice/libpod-%s.scope/container", hex64);
	vt_container_id(path, id, sizeof(id));
	assert_string_equal(id, hex64);
	snprintf(path, sizeof(path), "/kubepods.slice/kubepods-burstable.slice/"
		 "kubepods-burstable-pod0f1e2d3c_4b5a.slice/crio-%s.scope", hex64);
	vt_container_id(path, id, sizeof(id));
	assert_string_equal(id, hex64);
	/* not what any runtime makes: 32 hex digits (a machine id), podman's
	 * conmon, an id with a tail */
	vt_container_id("/machine.slice/0123456789abcdef0123456789abcdef", id, sizeof(id));
	assert_string_equal(id, "");
	snprintf(path, sizeof(path), "/machine.slice/libpod-conmon-%s.scope", hex64);
	vt_container_id(path, id, sizeof(id));
	assert_string_equal(id, "");
	snprintf(path, sizeof(path), "/docker/%s0", hex64);
	vt_container_id(path, id, sizeof(id));
	assert_string_equal(id, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_per_process),
		cmocka_unit_test(test_damaged_process_lines),
		cmocka_unit_test(test_container_ids),
		cmocka_unit_test(test_process_runtimes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
