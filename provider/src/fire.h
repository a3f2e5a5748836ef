/*
 * fire.h: libvmtrace's internal entry points to the USDT sites of
 * probes.c, for the parts of the library that fire probes themselves
 * (the bus and its signal routing). The generated VMTRACE_<PROBE>() macros
 * stay private to probes.c.
 */
#ifndef VMTRACE_FIRE_H
#define VMTRACE_FIRE_H

#include <stdint.h>

/* Async-signal-safe: only the USDT site, no other work. */
void vmtrace__fire_signal_received(int signo);
void vmtrace__fire_signal_handled(int signo, uint64_t latency_ns);
void vmtrace__fire_bus_dropped(int event_kind, uint64_t total_dropped);

#endif /* VMTRACE_FIRE_H */
