/*
 * host_armed.c: waiting for a host to arm (host_armed.h).
 */
#include <errno.h>
#include <time.h>

#include "vmtrace/vmtrace.h"
#include "runtimes/vmtrace/host_armed.h"
#include "runtimes/vmtrace/sampling.h"

#define ARMINGS_SYMBOL "vmtrace_host_armings"
#define WAIT_MS 2000
#define LOOK_NS 1000000L

uint64_t vt_host_armings(pid_t pid, const struct vt_usdt_list *probes)
{
	uint64_t v = 0;

	return vt_provider_read(pid, probes, ARMINGS_SYMBOL, &v, sizeof(v)) ? 0 : v;
}

int vt_host_wait_armed(pid_t pid, const struct vt_usdt_list *probes, uint64_t before)
{
	struct timespec look = { 0, LOOK_NS };
	uint64_t addr;

	if (!(before & VMTRACE_HOST_ARMS_LATER) || (before & VMTRACE_HOST_ARMED_NOW) ||
	    vt_provider_locate(pid, probes, ARMINGS_SYMBOL, &addr))
		return 0;
	for (long waited = 0; waited < WAIT_MS * 1000000L; waited += LOOK_NS) {
		uint64_t v = 0;

		/* gone, or the variable unreadable: nothing left to wait for */
		if (vt_provider_read_at(pid, addr, &v, sizeof(v)) || (v & VMTRACE_HOST_ARMED_NOW))
			return 0;
		nanosleep(&look, NULL);
	}
	return -ETIMEDOUT;
}
