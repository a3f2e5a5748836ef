/*
 * vt_gates.c: prints the USDT semaphore of every vmtrace probe of a running
 * process, read from its memory: "probe count" per line. The kernel raises
 * a semaphore while a uprobe is attached to the probe and lowers it when the
 * tracer detaches or dies; the end-to-end tests read them to see that a
 * SIGKILLed vmtrace leaves the target untraced.
 *
 * Usage: vt_gates PID     exit 0, or 1 with a one-line error
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/proc_info.h"
#include "runtimes/vmtrace/sampling.h"
#include "session/target.h"
#include "process/usdt_notes.h"

int main(int argc, char **argv)
{
	struct vt_usdt_list probes = { 0 };
	char mem[64], sym[128];
	pid_t pid;
	int fd, err, shown = 0;

	if (argc != 2 || vt_parse_pid(argv[1], &pid)) {
		fprintf(stderr, "usage: vt_gates PID\n");
		return 2;
	}
	err = vt_usdt_read_pid(pid, &probes);
	if (err) {
		fprintf(stderr, "vt_gates: pid %d: %s\n", (int)pid, strerror(-err));
		return 1;
	}
	snprintf(mem, sizeof(mem), "/proc/%d/mem", (int)pid);
	fd = open(mem, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "vt_gates: %s: %s\n", mem, strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < probes.n; i++) {
		const struct vt_usdt_probe *p = &probes.v[i];
		uint64_t addr;
		uint16_t sema;
		int dup = 0;

		if (strcmp(p->provider, "vmtrace") || !p->semaphore)
			continue;
		for (size_t j = 0; j < i; j++)
			dup |= !strcmp(probes.v[j].provider, "vmtrace") &&
			       !strcmp(probes.v[j].name, p->name) && !strcmp(probes.v[j].path, p->path);
		if (dup)
			continue;
		snprintf(sym, sizeof(sym), "vmtrace_%s_semaphore", p->name);
		err = vt_proc_symbol_address(pid, p->path, sym, &addr);
		if (err || pread(fd, &sema, sizeof(sema), (off_t)addr) != (ssize_t)sizeof(sema)) {
			fprintf(stderr, "vt_gates: %s in %s: %s\n", sym, p->path,
				strerror(err ? -err : errno));
			return 1;
		}
		printf("%s %u\n", p->name, (unsigned)sema);
		shown++;
	}
	close(fd);
	vt_usdt_list_free(&probes);
	if (!shown) {
		fprintf(stderr, "vt_gates: pid %d has no vmtrace semaphores\n", (int)pid);
		return 1;
	}
	return 0;
}
