/*
 * hold.c: a module vmtrace starts its runtime with, held until vmtrace has
 * attached (vmtrace_hold_until_attached, vmtrace.h).
 *
 * `vmtrace record -- CMD` may let a runtime boot while it loads and attaches
 * its probes (consumer/src/session/target.c): CMD then runs with the read
 * end of a pipe named in VMTRACE_HOLD_FD, and the module that counts reads
 * one byte from it before it turns anything on.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "vmtrace/vmtrace.h"

void vmtrace_hold_until_attached(void)
{
	const char *v = getenv("VMTRACE_HOLD_FD");
	char *end, c;
	long fd;
	ssize_t n;

	if (!v)
		return;
	errno = 0;
	fd = strtol(v, &end, 10);
	if (errno || end == v || *end || fd < 0 || fd > INT_MAX)
		fd = -1;
	unsetenv("VMTRACE_HOLD_FD"); /* not for the commands this one runs */
	if (fd < 0)
		return;
	do
		n = read((int)fd, &c, 1);
	while (n < 0 && errno == EINTR);
	close((int)fd);
	/* EOF without the byte: vmtrace is gone before attaching; end rather
	 * than run untraced, as a command held before its exec does. A
	 * descriptor that cannot be read holds nothing. */
	if (n == 0) {
		fprintf(stderr, "vmtrace: the recording that started this command ended before it "
				"attached; not running untraced\n");
		_exit(127);
	}
}
