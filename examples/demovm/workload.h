/*
 * workload.h: demovm's program: the classes it defines, the bodies of its
 * methods, and one workload iteration (an "op").
 *
 * Each op is a fixed function of the thread's RNG state: which method runs,
 * how much it allocates, and every K ops the maintenance events (method
 * redefinitions, module inclusions, constant reassignments, a SIGUSR2
 * raised at itself). So a thread's counts depend on its seed alone.
 */
#ifndef DEMOVM_WORKLOAD_H
#define DEMOVM_WORKLOAD_H

#include <signal.h>

#include "vm.h"

enum workload_kind {
	WORKLOAD_MIXED, /* every method, every kind of event */
	WORKLOAD_ALLOC, /* allocation-heavy churn for benchmarks, with GC and
	                   maintenance events at a busy production runtime's
	                   rates: a 4 MiB young generation, events 64x rarer */
};

/* Signal the workload raises at itself every WORKLOAD_SIGNAL_EVERY ops. */
#define WORKLOAD_SIGNAL SIGUSR2
#define WORKLOAD_SIGNAL_EVERY 64

/* Define the classes and methods; once, before any thread runs. */
void workload_boot(void);

/* Prepare thread index for a run of kind seeded with seed. */
void workload_thread_init(struct vm_thread *t, unsigned index, uint64_t seed,
			  enum workload_kind kind);
/* Run one op. */
void workload_op(struct vm_thread *t, enum workload_kind kind);
/* Release the thread's heap (unreported: the process is ending). */
void workload_thread_fini(struct vm_thread *t);

#endif /* DEMOVM_WORKLOAD_H */
