/*
 * sample_state PID [PERIOD]: what decides whether libvmtrace in PID samples, read
 * from the process's memory: the period variable, the sample__armed
 * semaphore, and the object__alloc semaphore. One line:
 *   period=524288 armed=1 alloc=1
 * The tests poll it to see a consumer attach, detach or die. With PERIOD it
 * first writes the period, as `vmtrace record --sample` does (the bench uses
 * it to time the provider's sampling under a plain bpftrace script).
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "process/proc_info.h"
#include "runtimes/vmtrace/sampling.h"
#include "process/usdt_notes.h"

static const char *vmtrace_module(const struct vt_usdt_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].provider, "vmtrace") && !strcmp(l->v[i].name, "sample__armed"))
			return l->v[i].path;
	return NULL;
}

int main(int argc, char **argv)
{
	struct vt_usdt_list probes = { 0 };
	char *end;
	uint64_t period, alloc_addr;
	uint16_t armed, alloc;
	int err;

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: sample_state PID [PERIOD]\n");
		return 2;
	}
	long pid = strtol(argv[1], &end, 10);
	if (*end || end == argv[1] || pid <= 0) {
		fprintf(stderr, "sample_state: invalid pid '%s'\n", argv[1]);
		return 2;
	}
	err = vt_usdt_read_pid((pid_t)pid, &probes);
	const char *module = err ? NULL : vmtrace_module(&probes);
	if (!err && !module)
		err = -ENOENT;
	if (!err && argc == 3) {
		unsigned long long set = strtoull(argv[2], &end, 10);
		if (*end || end == argv[2]) {
			fprintf(stderr, "sample_state: invalid period '%s'\n", argv[2]);
			return 2;
		}
		err = vt_sample_set_period((pid_t)pid, &probes, set);
	}
	if (!err)
		err = vt_sample_get_period((pid_t)pid, &probes, &period);
	if (!err)
		err = vt_sample_armed_count((pid_t)pid, &probes, &armed);
	if (!err)
		err = vt_proc_symbol_address((pid_t)pid, module, "vmtrace_object__alloc_semaphore", &alloc_addr);
	if (!err) {
		char mem[64];
		snprintf(mem, sizeof(mem), "/proc/%ld/mem", pid);
		int fd = open(mem, O_RDONLY);
		if (fd < 0 || pread(fd, &alloc, sizeof(alloc), (off_t)alloc_addr) != sizeof(alloc))
			err = -EIO;
		if (fd >= 0)
			close(fd);
	}
	vt_usdt_list_free(&probes);
	if (err) {
		fprintf(stderr, "sample_state: pid %ld: %s\n", pid, strerror(-err));
		return 1;
	}
	printf("period=%llu armed=%u alloc=%u\n", (unsigned long long)period, armed, alloc);
	return 0;
}
