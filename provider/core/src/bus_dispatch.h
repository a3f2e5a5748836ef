/*
 * bus_dispatch.h: what the parts above the bus (profile.c, statsd.c) ask
 * of its dispatcher. Nothing here is public.
 */
#ifndef VMTRACE_BUS_DISPATCH_H
#define VMTRACE_BUS_DISPATCH_H

#include <stdint.h>

/* True on the dispatcher thread (subscribers run there). */
int vmtrace__bus_on_dispatcher(void);
/* True while the dispatcher thread runs. */
int vmtrace__bus_running(void);

/* Work the dispatcher does between batches. The profiler registers: is a
 * sample waiting; count every waiting sample into its table. statsd
 * registers: send what is due at now_ns (everything if force) and return
 * when the next send is due (CLOCK_MONOTONIC ns), 0 when statsd is off.
 * Each stays registered once set; its functions answer "nothing to do"
 * while their part is stopped. */
typedef int (*vmtrace__pending_fn)(void);
typedef void (*vmtrace__drain_fn)(void);
typedef uint64_t (*vmtrace__tick_fn)(uint64_t now_ns, int force);
void vmtrace__bus_set_profile_work(vmtrace__pending_fn pending, vmtrace__drain_fn drain);
void vmtrace__bus_set_statsd_tick(vmtrace__tick_fn tick);

#endif /* VMTRACE_BUS_DISPATCH_H */
