/*
 * bus_internal.h: what the bus's parts (bus.c, signal.c, profile.c,
 * statsd.c) share inside libvmtrace. Nothing here is public.
 */
#ifndef VMTRACE_BUS_INTERNAL_H
#define VMTRACE_BUS_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>

#include "vmtrace/vmtrace.h"

/* Async-signal-safe: a raw syscall and a vDSO read. */
static inline uint64_t vmtrace__now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The calling thread's kernel id, cached per thread (a syscall per event
 * would dominate the publish cost). Async-signal-safe: initial-exec TLS
 * needs no allocation, and a fork child clears the cache (bus.c). */
extern __thread uint32_t vmtrace__tid_cache __attribute__((tls_model("initial-exec")));
static inline uint32_t vmtrace__gettid(void)
{
	uint32_t tid = vmtrace__tid_cache;
	if (tid == 0)
		vmtrace__tid_cache = tid = (uint32_t)syscall(SYS_gettid);
	return tid;
}

/* Sleep while *word == expected, at most timeout_ns (0: no limit). */
static inline void vmtrace__futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns)
{
	struct timespec ts = { (time_t)(timeout_ns / 1000000000u), (long)(timeout_ns % 1000000000u) };
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, timeout_ns ? &ts : NULL, NULL, 0);
}

static inline void vmtrace__futex_wake(_Atomic uint32_t *word, int waiters)
{
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, waiters, NULL, NULL, 0);
}

/* Wake the dispatcher if it sleeps: after a sample commit. Async-signal-safe. */
void vmtrace__bus_wake(void);
/* True on the dispatcher thread (subscribers run there). */
int vmtrace__bus_on_dispatcher(void);
/* True while the dispatcher thread runs. */
int vmtrace__bus_running(void);

/* Profiler side, driven by the dispatcher: is a sample waiting; count every
 * waiting sample into the table. */
int vmtrace__profile_pending(void);
void vmtrace__profile_drain(void);

/* statsd side: send what is due at now_ns (everything if force); returns when the next batch is
 * due (CLOCK_MONOTONIC ns), or 0 when statsd is off. Dispatcher only. */
uint64_t vmtrace__statsd_tick(uint64_t now_ns, int force);

#endif /* VMTRACE_BUS_INTERNAL_H */
