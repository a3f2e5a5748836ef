/*
 * host_armed.h: waiting, after attaching to a running process, until a
 * host that turns its counting on from a thread of its own (the Ruby
 * extension's watcher, the JVM agent's) has done so, so that what the
 * program makes after "recording" is all counted (vmtrace_host_armings,
 * vmtrace/vmtrace.h).
 */
#ifndef VT_HOST_ARMED_H
#define VT_HOST_ARMED_H

#include <stdint.h>
#include <sys/types.h>

#include "process/usdt_notes.h"

/* The host's vmtrace_host_armings before the probes are attached; 0 when
 * it has none (a host that counts from the first event). */
uint64_t vt_host_armings(pid_t pid, const struct vt_usdt_list *probes);

/* Wait (2 s at most) until a host whose armings were `before` has turned
 * its counting on; at once when it arms by itself or was on already. 0, or
 * -ETIMEDOUT. */
int vt_host_wait_armed(pid_t pid, const struct vt_usdt_list *probes, uint64_t before);

#endif /* VT_HOST_ARMED_H */
