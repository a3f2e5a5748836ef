/*
 * primitives.c: the gates and their semaphore symbols, the per-thread id
 * cache, and the USDT sites the library fires itself (primitives.h).
 *
 * The generated VMTRACE_<PROBE>() macros are used here and in probes.c
 * only: the host's sites there, the library's own sites here, so that the
 * bus can fire its sites without depending on the host's entry points.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "vmtrace_probes.h"
#include "primitives.h"

/* The library reads its gates through a hidden name, so its reads bind to
 * this storage (where the kernel writes) even if a host made a copy. */
__attribute__((section(".probes"), aligned(64)))
vmtrace_gate vmtrace__gate_store[VMTRACE_PROBE__COUNT];
extern vmtrace_gate vmtrace_gates[VMTRACE_PROBE__COUNT]
	__attribute__((alias("vmtrace__gate_store")));

/* vmtrace_<name>_semaphore = low half of gate IDX. */
#define SEMAPHORE_AT(name, ENUM, idx)                                          \
	_Static_assert(VMTRACE_PROBE_##ENUM == (idx), "gate index of " #name); \
	__asm__(".globl vmtrace_" #name "_semaphore\n\t"                        \
		".type vmtrace_" #name "_semaphore, @object\n\t"                \
		".set vmtrace_" #name "_semaphore, vmtrace__gate_store + 4 * " #idx "\n")

SEMAPHORE_AT(object__alloc, OBJECT_ALLOC, 0);
SEMAPHORE_AT(object__free, OBJECT_FREE, 1);
SEMAPHORE_AT(method__entry, METHOD_ENTRY, 2);
SEMAPHORE_AT(method__return, METHOD_RETURN, 3);
SEMAPHORE_AT(method__cache__reset, METHOD_CACHE_RESET, 4);
SEMAPHORE_AT(constant__cache__reset, CONSTANT_CACHE_RESET, 5);
SEMAPHORE_AT(global__serial__inc, GLOBAL_SERIAL_INC, 6);
SEMAPHORE_AT(gc__begin, GC_BEGIN, 7);
SEMAPHORE_AT(gc__end, GC_END, 8);
SEMAPHORE_AT(signal__received, SIGNAL_RECEIVED, 9);
SEMAPHORE_AT(signal__handled, SIGNAL_HANDLED, 10);
SEMAPHORE_AT(bus__dropped, BUS_DROPPED, 11);
SEMAPHORE_AT(sample__armed, SAMPLE_ARMED, 12);
SEMAPHORE_AT(alloc__batch, ALLOC_BATCH, 13);
SEMAPHORE_AT(free__batch, FREE_BATCH, 14);
SEMAPHORE_AT(stacks__armed, STACKS_ARMED, 15);
SEMAPHORE_AT(live__batch, LIVE_BATCH, 16);
_Static_assert(VMTRACE_PROBE__COUNT == 17, "a probe without a semaphore");
/* the host's inline check reads an event's gate and its batch gate: one
 * line. The gates after free__batch are read out of line only. */
_Static_assert((VMTRACE_PROBE_FREE_BATCH + 1) * sizeof(vmtrace_gate) <= 64,
	       "inline-read gates beyond one cache line");

#define SEMAPHORE(P) (vmtrace__gate_store[VMTRACE_PROBE_##P].part.semaphore)

__thread uint32_t vmtrace__tid_cache __attribute__((tls_model("initial-exec")));

/* A fork child runs on a new thread id: forget the parent's. */
static void forget_tid(void)
{
	vmtrace__tid_cache = 0;
}

__attribute__((constructor)) static void register_fork_hook(void)
{
	pthread_atfork(NULL, NULL, forget_tid);
}

/* ---- sites the library fires itself ---- */

void vmtrace__fire_signal_received(int signo)
{
	if (SEMAPHORE(SIGNAL_RECEIVED))
		VMTRACE_SIGNAL_RECEIVED(signo);
}

void vmtrace__fire_signal_handled(int signo, uint64_t latency_ns)
{
	if (SEMAPHORE(SIGNAL_HANDLED))
		VMTRACE_SIGNAL_HANDLED(signo, latency_ns);
}

void vmtrace__fire_bus_dropped(int event_kind, uint64_t total_dropped)
{
	if (SEMAPHORE(BUS_DROPPED))
		VMTRACE_BUS_DROPPED(event_kind, total_dropped);
}

void vmtrace__fire_stacks_armed(uint64_t max_depth, const void *current, const void *frames)
{
	if (SEMAPHORE(STACKS_ARMED))
		VMTRACE_STACKS_ARMED(max_depth, current, frames);
}

/* ---- batched counts (batch.c) ---- */

int vmtrace__batch_on(int kind)
{
	return kind == VMTRACE_BATCH_ALLOC ? SEMAPHORE(ALLOC_BATCH) != 0
	       : kind == VMTRACE_BATCH_FREE ? SEMAPHORE(FREE_BATCH) != 0
	       : kind == VMTRACE_BATCH_LIVE ? SEMAPHORE(LIVE_BATCH) != 0 : 0;
}

/* A unit test may watch the batches (tests/provider); NULL otherwise. */
VMTRACE_HIDDEN void (*vmtrace__batch_observer)(const void *batch, uint64_t bytes);

void vmtrace__fire_batch(int kind, const void *batch, uint64_t bytes)
{
	void (*watch)(const void *, uint64_t) = vmtrace__batch_observer;

	if (watch)
		watch(batch, bytes);
	if (kind == VMTRACE_BATCH_ALLOC && SEMAPHORE(ALLOC_BATCH))
		VMTRACE_ALLOC_BATCH(batch, bytes);
	else if (kind == VMTRACE_BATCH_FREE && SEMAPHORE(FREE_BATCH))
		VMTRACE_FREE_BATCH(batch, bytes);
	else if (kind == VMTRACE_BATCH_LIVE && SEMAPHORE(LIVE_BATCH))
		VMTRACE_LIVE_BATCH(batch, bytes);
}

int vmtrace__env_u64(const char *name, uint64_t *out)
{
	const char *s = getenv(name);
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return 0;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return 0;
	*out = v;
	return 1;
}
