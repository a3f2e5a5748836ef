/*
 * vmtrace.h: the host runtime's interface to libvmtrace.
 *
 * A runtime calls the vmtrace_*() macros below at its allocation, cache
 * reset, GC and signal sites. Each macro reads one 32-bit gate and takes a
 * not-taken branch when nobody listens; only when a tracer is attached to the
 * probe (the USDT semaphore half of the gate) or an in-process subscriber
 * wants the event (the bus half) does it evaluate its arguments and call out
 * of line into libvmtrace, where the USDT site lives. Keeping every site in
 * libvmtrace puts them in one ELF module whether the host links it shared or
 * static, so one bpftrace path serves both.
 *
 * Thread safety: every macro may be called from any thread.
 * Signal safety: vmtrace_signal_received() and the bus publish path are
 * async-signal-safe; the others are not meant for signal handlers.
 */
#ifndef VMTRACE_VMTRACE_H
#define VMTRACE_VMTRACE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One entry per probe of probes/vmtrace.d, in its order: (ENUM, probe name). */
#define VMTRACE_PROBE_LIST(X)                                                  \
	X(OBJECT_ALLOC, object__alloc)                                         \
	X(OBJECT_FREE, object__free)                                           \
	X(METHOD_ENTRY, method__entry)                                         \
	X(METHOD_RETURN, method__return)                                       \
	X(METHOD_CACHE_RESET, method__cache__reset)                            \
	X(CONSTANT_CACHE_RESET, constant__cache__reset)                        \
	X(GLOBAL_SERIAL_INC, global__serial__inc)                              \
	X(GC_BEGIN, gc__begin)                                                 \
	X(GC_END, gc__end)                                                     \
	X(SIGNAL_RECEIVED, signal__received)                                   \
	X(SIGNAL_HANDLED, signal__handled)                                     \
	X(BUS_DROPPED, bus__dropped)                                           \
	X(SAMPLE_ARMED, sample__armed)                                         \
	X(ALLOC_BATCH, alloc__batch)                                           \
	X(FREE_BATCH, free__batch)                                             \
	X(STACKS_ARMED, stacks__armed)                                         \
	X(LIVE_BATCH, live__batch)

enum vmtrace_probe {
#define VMTRACE_X_ENUM(e, n) VMTRACE_PROBE_##e,
	VMTRACE_PROBE_LIST(VMTRACE_X_ENUM)
#undef VMTRACE_X_ENUM
	VMTRACE_PROBE__COUNT
};

/*
 * A probe's gate. The low half is the USDT semaphore named in the probe's
 * ELF note (the kernel adds one per attached uprobe and removes it when the
 * tracer detaches or dies); the high half counts in-process subscribers.
 * Reading `any` tests both with one load.                     (read-only)
 */
typedef union vmtrace_gate {
	struct {
		volatile uint16_t semaphore;
		volatile uint16_t subscribers;
	} part;
	volatile uint32_t any;
} vmtrace_gate;

extern vmtrace_gate vmtrace_gates[VMTRACE_PROBE__COUNT];

/*
 * The host must read the library's own gates, where the kernel updates the
 * semaphores, never a copy: a PIE host that read vmtrace_gates directly
 * would get a copy relocation, a private copy the kernel never touches. So
 * the address comes through the GOT (the linker turns this into one `lea`
 * when libvmtrace is linked statically). The asm has no side effects, so the
 * compiler hoists it out of loops.
 */
#if defined(__x86_64__)
#define VMTRACE__THROUGH_GOT(name, type, sym)                                  \
	static inline type *name(void)                                         \
	{                                                                      \
		type *p;                                                       \
		__asm__("movq " #sym "@GOTPCREL(%%rip), %0" : "=r"(p));        \
		return p;                                                      \
	}
#else
#define VMTRACE__THROUGH_GOT(name, type, sym)                                  \
	static inline type *name(void)                                         \
	{                                                                      \
		return (type *)&sym;                                           \
	}
#endif
VMTRACE__THROUGH_GOT(vmtrace__gate_table, vmtrace_gate, vmtrace_gates)

/* GC kinds, the `kind` argument of gc__begin / gc__end. */
/* PAUSE: a stop of the world whose kind the host cannot tell (a JVM's, as
 * JVMTI reports it) */
enum vmtrace_gc_kind { VMTRACE_GC_MINOR = 0, VMTRACE_GC_MAJOR = 1, VMTRACE_GC_PAUSE = 2 };

#define VMTRACE_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* True while a tracer or a subscriber wants probe P (e.g. OBJECT_ALLOC).
 * Guard costly argument computations with it, as PostgreSQL does. */
#define VMTRACE_ENABLED(P) VMTRACE_UNLIKELY(vmtrace__gate_table()[VMTRACE_PROBE_##P].any)

/* ---- out-of-line halves: call the macros below, not these ---- */
void vmtrace__alloc_at(const char *klass, const char *method, uint64_t size, const char *site,
		       const void *addr);
void vmtrace__free_at(const char *klass, uint64_t size, const void *addr);
/* the same with addr NULL: kept for hosts built before addresses existed */
void vmtrace__alloc(const char *klass, const char *method, uint64_t size, const char *site);
void vmtrace__free(const char *klass, uint64_t size);
void vmtrace__method_entry(const char *klass, const char *method, const char *file, int line);
void vmtrace__method_return(const char *klass, const char *method, const char *file, int line);
void vmtrace__method_cache_reset(const char *klass, const char *method, uint64_t serial);
void vmtrace__constant_cache_reset(const char *name, uint64_t serial);
void vmtrace__global_serial_inc(uint64_t serial, const char *reason);
void vmtrace__gc_begin(int kind, uint64_t heap_bytes);
void vmtrace__gc_end(int kind, uint64_t heap_bytes);

/*
 * The host's calls. Statement macros: arguments are evaluated only when the
 * probe is enabled. Strings must be NUL-terminated names that stay valid for
 * the life of the process (interned): tracers and subscribers read them later.
 */
/* Bytes this thread may still allocate before its next sample; only the
 * provider draws it.                                            (private) */
extern __thread int64_t vmtrace__sample_left __attribute__((tls_model("initial-exec")));

/* 1 when an allocation of size bytes is not sampled, counted down inline:
 * only while a consumer holds sample__armed and no bus subscriber wants
 * every allocation (gate: the object__alloc gate already loaded). Else 0,
 * and the out-of-line half decides. */
static inline int vmtrace__sample_skip(uint32_t gate, uint64_t size)
{
	int64_t left = vmtrace__sample_left - (int64_t)size;

	if ((gate >> 16) != 0 || left <= 0 ||
	    !vmtrace__gate_table()[VMTRACE_PROBE_SAMPLE_ARMED].part.semaphore)
		return 0;
	vmtrace__sample_left = left;
	return 1;
}

/* An event's gate, opened also by a tracer of its batch probe (batched
 * counting, <vmtrace/batch.h>): two loads from one cache line, one branch.
 * live__batch needs the batch probes held too: its gate is not read here.
 * The high half still counts only the event's own subscribers. */
#define VMTRACE__GATE_OR_BATCH(P, B)                                           \
	(vmtrace__gate_table()[VMTRACE_PROBE_##P].any |                        \
	 vmtrace__gate_table()[VMTRACE_PROBE_##B].part.semaphore)

/* True while anything wants allocations (frees): their own probe, a
 * subscriber, or a tracer of the batch probe. VMTRACE_ENABLED(OBJECT_ALLOC)
 * tests the first two only. */
#define VMTRACE_ALLOC_ENABLED() VMTRACE_UNLIKELY(VMTRACE__GATE_OR_BATCH(OBJECT_ALLOC, ALLOC_BATCH))
#define VMTRACE_FREE_ENABLED() VMTRACE_UNLIKELY(VMTRACE__GATE_OR_BATCH(OBJECT_FREE, FREE_BATCH))

/* True when byte sampling leaves out an allocation of `size` bytes, its
 * countdown taken: a host whose key is dear to make (a frame to read, a
 * name to look up) tests this first and makes nothing for the others. The
 * allocation macros do not count an allocation it let through down again. */
static inline int vmtrace_alloc_skipped(uint64_t size)
{
	uint32_t g = VMTRACE__GATE_OR_BATCH(OBJECT_ALLOC, ALLOC_BATCH);

	return VMTRACE_UNLIKELY(g) && vmtrace__sample_skip(g, size);
}

/* an allocation of `size` bytes of `klass` while running `method`; site is
 * "file:line" or NULL; addr is the new object's address, which the matching
 * vmtrace_free_at() gives again (live heap: docs/live.md). With sampling on
 * (docs/sampling.md), only sampled allocations reach the probe (or the
 * batch), carrying their weight; the others cost a decrement and a branch
 * here. */
#define vmtrace_alloc_at(klass, method, size, site, addr)                      \
	do {                                                                   \
		uint32_t vmtrace__g =                                          \
			VMTRACE__GATE_OR_BATCH(OBJECT_ALLOC, ALLOC_BATCH);     \
		if (VMTRACE_UNLIKELY(vmtrace__g)) {                            \
			uint64_t vmtrace__size = (size);                       \
			if (!vmtrace__sample_skip(vmtrace__g, vmtrace__size))  \
				vmtrace__alloc_at((klass), (method), vmtrace__size, (site), \
						  (addr));                     \
		}                                                              \
	} while (0)
/* an object of `klass` and `size` bytes is freed; addr as at its allocation */
#define vmtrace_free_at(klass, size, addr)                                     \
	do {                                                                   \
		if (VMTRACE_FREE_ENABLED())                                    \
			vmtrace__free_at((klass), (size), (addr));             \
	} while (0)

/* ---- allocation sites with a cached key (docs/probes.md, "Cached keys") ----
 *
 * The same events as vmtrace_alloc_at() and vmtrace_free_at(), for hosts
 * that can keep one small cache per allocation site (a static at the call
 * site, a slot in an inline cache, one per class for frees). While only
 * the batched exact path is on, the cache holds the interned id of the
 * site's key, and the event is two adds to the calling thread's counts by
 * that id: no call, no table lookup. The id is checked against its key on
 * every use, so a cache shared by several keys, or a stale one, costs a
 * slower event, never a wrong count. Zero-initialise a cache; nothing else
 * in it is the host's.                                            (public) */
struct vmtrace_key_cache {
	uint32_t id;
};

/* ---- the cached path's parts: call the macros below, not these ---- */
#define VMTRACE__KEYS_MAX 16384u
/* the site word of a free's key: no allocation has it */
#define VMTRACE__FREE_SITE ((const char *)1)
/* interned keys; entry id is written once, before any cache holds id. The
 * class is kept inverted, so an entry not interned yet (all zero, as id 0
 * always is) matches no event: an id from a zeroed or stale cache is never
 * counted under a key it was not interned for. */
struct vmtrace__key {
	uintptr_t not_klass;            /* ~klass */
	const char *method, *site;
	uint64_t spare;
};
extern struct vmtrace__key vmtrace__keys[VMTRACE__KEYS_MAX];
/* through the GOT, as the gates: a direct reference from a PIE host would
 * copy the whole table into the host at start-up (a copy relocation) */
VMTRACE__THROUGH_GOT(vmtrace__key_table, const struct vmtrace__key, vmtrace__keys)
/* the calling thread's counts by key id (count, bytes), VMTRACE__KEYS_MAX
 * of them; NULL until the thread's first cached event, at its exit and in
 * a fork child, so those events take the out-of-line path */
extern __thread uint64_t (*vmtrace__keyed)[2] __attribute__((tls_model("initial-exec")));
void vmtrace__alloc_cached(struct vmtrace_key_cache *cache, const char *klass, const char *method,
			   uint64_t size, const char *site, const void *addr);
void vmtrace__free_cached(struct vmtrace_key_cache *cache, const char *klass, uint64_t size,
			  const void *addr);

/* One event of key id: two adds, each one instruction on x86-64, so a
 * signal handler's event never splits one (no lock prefix: only this
 * thread writes its counts). */
static inline __attribute__((always_inline)) void vmtrace__keyed_add(uint64_t (*counts)[2], uint32_t id,
								 uint64_t size)
{
	uint64_t *c = counts[id];
#if defined(__x86_64__)
	__asm__ volatile("addq $1, %0\n\taddq %2, %1" : "+m"(c[0]), "+m"(c[1]) : "r"(size));
#else
	__atomic_fetch_add(&c[0], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&c[1], size, __ATOMIC_RELAXED);
#endif
}

/* The cache's id (in *id) when the thread has counts and the id names
 * exactly this key, else 0 (an id out of range, from a cache the host did
 * not zero, is taken modulo the table and checked). */
static inline __attribute__((always_inline)) int vmtrace__cache_hit(struct vmtrace_key_cache *cache,
								const char *klass, const char *method,
								const char *site, uint32_t *id)
{
	const struct vmtrace__key *key;

	*id = __atomic_load_n(&cache->id, __ATOMIC_ACQUIRE) % VMTRACE__KEYS_MAX;
	key = &vmtrace__key_table()[*id];
	return vmtrace__keyed && key->not_klass == ~(uintptr_t)klass && key->method == method &&
	       key->site == site;
}

/* 1 when the event was counted by its cached key. */
static inline __attribute__((always_inline)) int vmtrace__keyed_count(struct vmtrace_key_cache *cache,
								 const char *klass, const char *method,
								 const char *site, uint64_t size)
{
	uint32_t id;

	if (VMTRACE_UNLIKELY(!vmtrace__cache_hit(cache, klass, method, site, &id)))
		return 0;
	vmtrace__keyed_add(vmtrace__keyed, id, size);
	return 1;
}

/* vmtrace__keyed_count() for a cache that serves one key all its life (a
 * host that never passes it another class, method or site): an id there
 * was interned for that key, so it is trusted with no look at the key
 * table, one cache line fewer an event. 1 when counted. */
static inline __attribute__((always_inline)) int vmtrace__owned_count(struct vmtrace_key_cache *cache,
								 uint64_t size)
{
	uint32_t id = __atomic_load_n(&cache->id, __ATOMIC_ACQUIRE);

	if (VMTRACE_UNLIKELY(!id || id >= VMTRACE__KEYS_MAX || !vmtrace__keyed))
		return 0;
	vmtrace__keyed_add(vmtrace__keyed, id, size);
	return 1;
}

/* The cached path is for the batch alone: no per-event tracer or
 * subscriber (a, the event's own gate, loaded by the caller), and for
 * allocations no sampling, no stacks, no live heap. */
#define VMTRACE__ALLOC_KEYED_OK(a)                                             \
	((a) == 0 &&                                                           \
	 (vmtrace__gate_table()[VMTRACE_PROBE_SAMPLE_ARMED].part.semaphore |   \
	  vmtrace__gate_table()[VMTRACE_PROBE_STACKS_ARMED].part.semaphore |   \
	  vmtrace__gate_table()[VMTRACE_PROBE_LIVE_BATCH].part.semaphore) == 0)
#define VMTRACE__FREE_KEYED_OK(a)                                              \
	((a) == 0 && vmtrace__gate_table()[VMTRACE_PROBE_LIVE_BATCH].part.semaphore == 0)

/* vmtrace_alloc_at() through cache, a struct vmtrace_key_cache * */
#define vmtrace_alloc_cached(cache, klass, method, size, site, addr)          \
	do {                                                                   \
		uint32_t vmtrace__a =                                          \
			vmtrace__gate_table()[VMTRACE_PROBE_OBJECT_ALLOC].any; \
		uint32_t vmtrace__g = vmtrace__a |                             \
			vmtrace__gate_table()[VMTRACE_PROBE_ALLOC_BATCH].part.semaphore; \
		if (VMTRACE_UNLIKELY(vmtrace__g)) {                            \
			uint64_t vmtrace__size = (size);                       \
			if (VMTRACE_UNLIKELY(!(VMTRACE__ALLOC_KEYED_OK(vmtrace__a) && \
					       vmtrace__keyed_count((cache), (klass), (method), \
								    (site), vmtrace__size)) && \
					     !vmtrace__sample_skip(vmtrace__g, vmtrace__size))) \
				vmtrace__alloc_cached((cache), (klass), (method), \
						      vmtrace__size, (site), (addr)); \
		}                                                              \
	} while (0)
/* vmtrace_free_at() through cache: one per class serves all its frees */
#define vmtrace_free_cached(cache, klass, size, addr)                          \
	do {                                                                   \
		uint32_t vmtrace__a =                                          \
			vmtrace__gate_table()[VMTRACE_PROBE_OBJECT_FREE].any;  \
		if (VMTRACE_UNLIKELY(vmtrace__a |                              \
				     vmtrace__gate_table()[VMTRACE_PROBE_FREE_BATCH].part.semaphore)) { \
			uint64_t vmtrace__size = (size);                       \
			if (VMTRACE_UNLIKELY(!(VMTRACE__FREE_KEYED_OK(vmtrace__a) && \
					       vmtrace__keyed_count((cache), (klass), NULL, \
								    VMTRACE__FREE_SITE, \
								    vmtrace__size)))) \
				vmtrace__free_cached((cache), (klass), vmtrace__size, (addr)); \
		}                                                              \
	} while (0)
/* ---- a host that arms from a thread of its own ---- */

/*
 * A host whose allocation counting a thread of its own turns on after a
 * tracer's gates rise (the Ruby extension, the JVM agent) says so once
 * (vmtrace_host_arms_later) and each time that counting goes on or off
 * (vmtrace_host_armed): a tracer attaching to the running process waits
 * until it is on before it says it records, so nothing after that line
 * goes uncounted. vmtrace_host_armings: bit 63 such a host, bit 62 on
 * now, below them the times it went on.                          (public)
 */
#define VMTRACE_HOST_ARMS_LATER (1ull << 63)
#define VMTRACE_HOST_ARMED_NOW (1ull << 62)
extern volatile uint64_t vmtrace_host_armings;
void vmtrace_host_arms_later(void);
void vmtrace_host_armed(int on);

/* ---- allocation sampling (docs/sampling.md) ---- */

/* Mean bytes between sampled allocations; 0 = every allocation (exact).
 * Written by a consumer in the running process; it takes effect only while
 * that consumer is attached to sample__armed, so a consumer that dies leaves
 * the process exact again.                                       (public) */
extern volatile uint64_t vmtrace_sample_period;

/* The period in force for this process right now: vmtrace_sample_period if a
 * consumer holds sample__armed, else 0. */
uint64_t vmtrace_sample_period_effective(void);

/* An allocation a host that samples by itself (a JVM's JVMTI allocation
 * sampling) picked, at a mean of `period` bytes between samples, drawn as a
 * Poisson process over the bytes allocated (docs/sampling.md): counted with
 * the weight that makes the sums unbiased, 1/(1 - exp(-size/period)); period
 * 0, every allocation, with weight 1. libvmtrace's own countdown is not
 * applied. Call it while VMTRACE_ALLOC_ENABLED().                (public) */
void vmtrace_alloc_sampled(const char *klass, const char *method, uint64_t size, const char *site,
			   const void *addr, uint64_t period);

/* A host that samples by itself on a clock of objects, not bytes (Ruby's
 * count of the objects it made): each object takes `unit` bytes of the
 * clock, so every object has the same chance, 1 - exp(-unit/period), of
 * being sampled, whatever its size. vmtrace_sample_gap_objects() draws the
 * objects from one sampled object to the next (at least 1);
 * vmtrace_alloc_sampled_unit() counts a sampled object of `size` bytes
 * with the weight of that chance (period 0: weight 1).          (public) */
uint64_t vmtrace_sample_gap_objects(uint64_t period, uint64_t unit);
void vmtrace_alloc_sampled_unit(const char *klass, const char *method, uint64_t size, const char *site,
				const void *addr, uint64_t period, uint64_t unit);

/* ---- a runtime's module that vmtrace starts held ----
 *
 * `vmtrace record -- CMD` may start a runtime before its probes are
 * attached, so the runtime boots meanwhile, when the module that counts in
 * it calls this first, before it turns any hook on: with VMTRACE_HOLD_FD in
 * the environment (a pipe vmtrace writes one byte to once attached) it
 * waits for that byte, then removes the variable and closes the pipe; a
 * pipe closed without it (vmtrace gone) ends the process with status 127
 * rather than let it run untraced. Without the variable it returns at once.
 * Call it once, before the module starts threads of its own. A runtime
 * that copies the environment at its start (CPython's os.environ) drops
 * the variable from its copy too.                                (public) */
void vmtrace_hold_until_attached(void);

#ifdef __cplusplus
}
#endif

#include <vmtrace/batch.h>
#include <vmtrace/bus.h>
#include <vmtrace/frames.h>
#include <vmtrace/live.h>

#endif /* VMTRACE_VMTRACE_H */
