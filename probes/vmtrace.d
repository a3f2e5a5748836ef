/*
 * vmtrace: the provider definition and the project's public probe ABI.
 *
 * The build turns this file into provider/.../vmtrace_probes.h with
 * `dtrace -h` (systemtap-sdt-dev). Argument order puts the most useful
 * argument first (class, then method) so one-liners stay short. Every string
 * is a NUL-terminated name the runtime keeps alive for its whole life.
 *
 * Changing a probe's arguments breaks users' scripts: add probes instead,
 * and keep docs/probes.md in step.
 */
provider vmtrace {
	/* an object was allocated; weight is 1, or the sampling weight; addr
	 * is the object's address (NULL when the host does not say), appended
	 * last so scripts written before it keep working */
	probe object__alloc(const char *klass, const char *method, uint64_t size,
	                    const char *site, uint64_t weight, const void *addr);
	/* an object was freed (swept); addr as at its object__alloc */
	probe object__free(const char *klass, uint64_t size, const void *addr);
	/* a runtime-level method was entered / returned from */
	probe method__entry(const char *klass, const char *method, const char *file, int line);
	probe method__return(const char *klass, const char *method, const char *file, int line);
	/* method caches of one method (or of the whole class: method NULL) were reset */
	probe method__cache__reset(const char *klass, const char *method, uint64_t serial);
	/* the constant cache for name was reset */
	probe constant__cache__reset(const char *name, uint64_t serial);
	/* the global method serial was bumped */
	probe global__serial__inc(uint64_t serial, const char *reason);
	/* a collection starts / ends; kind 0 = minor, 1 = major */
	probe gc__begin(int kind, uint64_t heap_bytes);
	probe gc__end(int kind, uint64_t heap_bytes);
	/* fired inside the signal handler */
	probe signal__received(int signo);
	/* fired once every subscriber has run; latency from the handler */
	probe signal__handled(int signo, uint64_t latency_ns);
	/* the in-process bus dropped an event of event_kind (ring full) */
	probe bus__dropped(int event_kind, uint64_t total_dropped);
	/* a consumer that asked for sampled allocations is attached here
	 * (never fires; only its semaphore matters, see docs/sampling.md) */
	probe sample__armed(uint64_t period_bytes);
	/* counts of object__alloc / object__free gathered in the process since
	 * the last batch (struct vmtrace_batch, <vmtrace/batch.h>). A tracer
	 * holding this probe's semaphore turns batched counting of that event
	 * on: those events then cost no trap (see docs/probes.md) */
	probe alloc__batch(const void *batch, uint64_t bytes);
	probe free__batch(const void *batch, uint64_t bytes);
	/* a consumer that wants allocations per VM stack is attached here:
	 * its semaphore turns the walk on; it fires when a thread starts
	 * counting per VM stack, and, for a consumer of object__alloc, once
	 * per thread and consumer before that thread's next object__alloc,
	 * with where the thread's innermost-frame pointer lives and the frame
	 * descriptor (struct vmtrace_frames_desc), so BPF can walk the chain
	 * (docs/stacks.md) */
	probe stacks__armed(uint64_t max_depth, const void *current, const void *frames);
	/* the addresses of objects allocated and freed since the last batch,
	 * in the order each thread made them (struct vmtrace_batch of kind
	 * VMTRACE_BATCH_LIVE). A tracer holding its semaphore turns the
	 * per-thread address buffers on: the live heap without a trap per event */
	probe live__batch(const void *batch, uint64_t bytes);
};
