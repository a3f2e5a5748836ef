/*
 * primitives.h: the pieces every part of libvmtrace uses (probes, bus,
 * profiler, statsd): the clock, the thread id, the futex, the gates and
 * the USDT sites the library fires itself. A leaf: it depends on nothing
 * else in provider/core/src, so the parts above it depend downward only.
 * Nothing here is public.
 */
#ifndef VMTRACE_PRIMITIVES_H
#define VMTRACE_PRIMITIVES_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>

#include "vmtrace/vmtrace.h"

/* Shared between files of the library, never exported from it. */
#define VMTRACE_HIDDEN __attribute__((visibility("hidden")))

/* Async-signal-safe: a raw syscall and a vDSO read. */
static inline uint64_t vmtrace__now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The calling thread's kernel id, cached per thread (a syscall per event
 * would dominate the publish cost). Async-signal-safe: initial-exec TLS
 * needs no allocation, and a fork child clears the cache (primitives.c). */
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

/* The gates (vmtrace.h): the kernel writes each low half (the semaphore),
 * the bus each high half (its subscribers). The library reads them through
 * this hidden name, so its reads bind to the storage the kernel writes. */
extern vmtrace_gate vmtrace__gate_store[VMTRACE_PROBE__COUNT] VMTRACE_HIDDEN;

/* The USDT sites the library fires itself (signal routing, the bus).
 * Async-signal-safe: only the site, no other work. */
void vmtrace__fire_signal_received(int signo);
void vmtrace__fire_signal_handled(int signo, uint64_t latency_ns);
void vmtrace__fire_bus_dropped(int event_kind, uint64_t total_dropped);

/* The decimal value of environment variable name: 1 and *out, or 0 when
 * it is unset or not a number (for what a consumer passes a command it
 * starts, before its libvmtrace is mapped). */
int vmtrace__env_u64(const char *name, uint64_t *out);

/* Is a tracer batching events of kind (enum vmtrace_batch_kind)? */
int vmtrace__batch_on(int kind);
/* stacks__armed: a thread starts counting allocations per VM stack. */
void vmtrace__fire_stacks_armed(uint64_t max_depth, const void *current, const void *frames);
/* Fire kind's batch probe (alloc__batch, free__batch) with a batch. */
void vmtrace__fire_batch(int kind, const void *batch, uint64_t bytes);

#endif /* VMTRACE_PRIMITIVES_H */
