/*
 * early_host.c: a tiny host of libvmtrace for the end-to-end tests, with
 * what demovm does not have:
 *  - allocations fired from a constructor, before main: `vmtrace record --
 *    early_host` must count them (probes live before the first instruction);
 *  - with --far: a class name in a page the process never touches (the
 *    kernel cannot read it from a uprobe; vmtrace must read it from /proc),
 *    and a class pointer nobody can read (named "<unreadable 0x...>",
 *    counted). Then it waits for a signal, so the names can still be read.
 *
 * Usage: early_host [N] [--far]   N allocations of Host from main (default 10)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vmtrace/vmtrace.h>

#define EARLY_ALLOCS 3

static const char early_class[] = "Early", early_method[] = "Host#constructor";

static void early(void) __attribute__((constructor));
static void early(void)
{
	/* Read the names first. A literal in a page the process never touched
	 * cannot be read from a uprobe, and this process may exit before
	 * vmtrace reads it from /proc (the `names` case tests that path). */
	for (const volatile char *c = early_class; *c; c++)
		;
	for (const volatile char *c = early_method; *c; c++)
		;
	for (int i = 0; i < EARLY_ALLOCS; i++)
		vmtrace_alloc(early_class, early_method, 16, NULL);
}

/* "Faraway" in a mapping the process never touches: no page table entry
 * exists until someone faults it in, so a uprobe cannot read it (-EFAULT)
 * while /proc/PID/mem can. */
static const char *far_away_name(void)
{
	static const char name[] = "Faraway";
	int fd = memfd_create("early_host", MFD_CLOEXEC);
	void *p;

	if (fd < 0 || write(fd, name, sizeof(name)) != (ssize_t)sizeof(name))
		return NULL;
	p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

int main(int argc, char **argv)
{
	long n = 10;
	int far = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--far") == 0)
			far = 1;
		else
			n = strtol(argv[i], NULL, 10);
	}
	for (long i = 0; i < n; i++)
		vmtrace_alloc("Host", "Host#main", 24, NULL);
	if (!far)
		return 0;

	const char *far_name = far_away_name();

	if (!far_name) {
		perror("early_host: memfd");
		return 1;
	}
	vmtrace_alloc(far_name, "Host#far", 32, NULL);
	vmtrace_alloc((const char *)(uintptr_t)0x10, "Host#bad", 8, NULL);
	printf("fired\n");
	fflush(stdout);
	pause(); /* until vmtrace ends the run (SIGTERM) */
	return 0;
}
