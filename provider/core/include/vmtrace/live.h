/*
 * live.h: the live heap by a word in each object (docs/live.md), for hosts
 * that keep one uint64_t in each object for vmtrace. Included by
 * <vmtrace/vmtrace.h>, whose gates and cached keys it builds on.
 */
#ifndef VMTRACE_LIVE_H
#define VMTRACE_LIVE_H

#include <stdint.h>

#include <vmtrace/vmtrace.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the live heap by a word in each object (docs/live.md) ----
 *
 * vmtrace_alloc_live() is vmtrace_alloc_cached() for hosts that keep one
 * uint64_t in each object for vmtrace: it stores there a word, 0 while no
 * tracer follows the live heap; vmtrace_free_live() takes that word back.
 * While the batch alone follows the heap (`vmtrace record --live`), the
 * word holds the allocation's key id and the tick it was born in, so an
 * allocation and its free are a few adds to the calling thread's counts by
 * key and by tick: no address, no lookup, no call. Otherwise both fall
 * back to the address path of vmtrace_alloc_at() and vmtrace_free_at().
 *                                                                  (public) */

/* The live heap's clock and recording. A consumer writes temp_ns, then a
 * new nonzero session (top bit clear), before it attaches live__batch
 * (through /proc/PID/mem; a command it starts gets VMTRACE_LIVE_TEMP_NS in
 * its environment instead); the rest is libvmtrace's. (public layout) */
struct vmtrace_live_clock {
	volatile uint64_t session;      /* the consumer's recording; 0: none */
	volatile uint64_t temp_ns;      /* freed younger than this: temporary */
	/* libvmtrace's */
	volatile uint64_t tick;         /* CLOCK_MONOTONIC >> VMTRACE__TICK_SHIFT, kept by the flush thread */
	volatile uint64_t since;        /* the session's first tick: older objects are not its */
	volatile uint64_t temp_ticks;   /* temp_ns in ticks, rounded up */
	volatile uint64_t seen;         /* the session since and temp_ticks are for */
};
extern struct vmtrace_live_clock vmtrace_live;

/* ---- the word's parts: call the macros below, not these ---- */
#define VMTRACE__TICK_SHIFT 20        /* a tick: 2^20 ns, about a millisecond */
#define VMTRACE__ID_BITS 14           /* a word: tick << ID_BITS | key id */
#define VMTRACE__AGE_SLOTS 65536u     /* ticks a thread's ring of births spans */

/* A thread's live heap by key and by tick; only the owner adds (one
 * instruction an add, as the counts by key), a flush reads. */
struct vmtrace__live_thread {
	uint64_t session;                       /* the recording these counts are for */
	int64_t net, rise;                      /* bytes allocated less freed; the highest since the last flush */
	uint64_t rise_tick;
	uint64_t spare[4];
	int64_t born[VMTRACE__AGE_SLOTS];       /* objects alive by tick of birth, tick % slots */
	int64_t keys[VMTRACE__KEYS_MAX][4];     /* per allocation key: objects, bytes; temporaries, bytes */
};
/* the calling thread's; NULL until its first event with a word while a
 * recording wants them, at its exit and in a fork child */
extern __thread struct vmtrace__live_thread *vmtrace__live_self __attribute__((tls_model("initial-exec")));
uint64_t vmtrace__alloc_live(struct vmtrace_key_cache *cache, const char *klass, const char *method,
			     uint64_t size, const char *site, const void *addr);
void vmtrace__free_live(struct vmtrace_key_cache *cache, const char *klass, uint64_t size, const void *addr,
			uint64_t word);
void vmtrace__free_live_born(struct vmtrace_key_cache *cache, const char *klass, uint64_t size,
			     uint64_t born_size, const void *addr, uint64_t word);

/* through the GOT, as the gates: the flush thread moves the tick the host reads */
VMTRACE__THROUGH_GOT(vmtrace__live_clock, const struct vmtrace_live_clock, vmtrace_live)

/* the live heap's shared words: plain moves on x86-64, and seen as what
 * they are by race detectors */
#define VMTRACE__LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define VMTRACE__STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

/* *p += v in one instruction (a signal handler never splits it) */
static inline __attribute__((always_inline)) void vmtrace__add(int64_t *p, int64_t v)
{
#if defined(__x86_64__)
	__asm__ volatile("addq %1, %0" : "+m"(*p) : "r"(v));
#else
	__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
#endif
}

/* The calling thread's live counts for the recording in force, or NULL. */
static inline __attribute__((always_inline)) struct vmtrace__live_thread *
vmtrace__live_ready(const struct vmtrace_live_clock *c)
{
	struct vmtrace__live_thread *l = vmtrace__live_self;
	uint64_t s = VMTRACE__LOAD(c->session);

	return l && s && VMTRACE__LOAD(l->session) == s ? l : (struct vmtrace__live_thread *)0;
}

/* An allocation of key id born now: its counts, and its word. */
static inline __attribute__((always_inline)) uint64_t vmtrace__live_born(struct vmtrace__live_thread *l,
								     uint64_t now, uint32_t id, uint64_t size)
{
	vmtrace__add(&l->keys[id][0], 1);
	vmtrace__add(&l->keys[id][1], (int64_t)size);
	vmtrace__add(&l->born[now % VMTRACE__AGE_SLOTS], 1);
	vmtrace__add(&l->net, (int64_t)size);
	if (VMTRACE__LOAD(l->net) > VMTRACE__LOAD(l->rise)) {
		VMTRACE__STORE(l->rise, VMTRACE__LOAD(l->net));
		VMTRACE__STORE(l->rise_tick, now);
	}
	return now << VMTRACE__ID_BITS | id;
}

/* The free of an object born at tick `born` (within the ring) with key id. */
static inline __attribute__((always_inline)) void vmtrace__live_died(struct vmtrace__live_thread *l,
								 const struct vmtrace_live_clock *c,
								 uint64_t now, uint64_t born, uint32_t id,
								 uint64_t size)
{
	vmtrace__add(&l->keys[id][0], -1);
	vmtrace__add(&l->keys[id][1], -(int64_t)size);
	vmtrace__add(&l->born[born % VMTRACE__AGE_SLOTS], -1);
	vmtrace__add(&l->net, -(int64_t)size);
	if (now - born < VMTRACE__LOAD(c->temp_ticks)) {
		vmtrace__add(&l->keys[id][2], 1);
		vmtrace__add(&l->keys[id][3], (int64_t)size);
	}
}

/* 1 when the allocation was counted by its cached key (and, while the
 * live heap is followed, its word made in *word). */
static inline __attribute__((always_inline)) int vmtrace__alloc_keyed(struct vmtrace_key_cache *cache,
								   const char *klass, const char *method,
								   const char *site, uint64_t size,
								   uint64_t *word)
{
	uint32_t id;

	if (VMTRACE_UNLIKELY(!vmtrace__cache_hit(cache, klass, method, site, &id)))
		return 0;
	if (vmtrace__gate_table()[VMTRACE_PROBE_LIVE_BATCH].part.semaphore) {
		const struct vmtrace_live_clock *c = vmtrace__live_clock();
		struct vmtrace__live_thread *l = vmtrace__live_ready(c);

		if (VMTRACE_UNLIKELY(!l))
			return 0;
		*word = vmtrace__live_born(l, VMTRACE__LOAD(c->tick), id, size);
	}
	vmtrace__keyed_add(vmtrace__keyed, id, size);
	return 1;
}

/* 1 when the free was counted by its cached key (and, while the live heap
 * is followed, its object's death by its word: born_size bytes, what its
 * allocation added). An object with no word, or born too long ago for the
 * ring, takes the out-of-line path. */
static inline __attribute__((always_inline)) int vmtrace__free_keyed(struct vmtrace_key_cache *cache,
								  const char *klass, uint64_t size,
								  uint64_t born_size, uint64_t word)
{
	uint32_t id;

	if (VMTRACE_UNLIKELY(!vmtrace__cache_hit(cache, klass, (const char *)0, VMTRACE__FREE_SITE, &id)))
		return 0;
	if (vmtrace__gate_table()[VMTRACE_PROBE_LIVE_BATCH].part.semaphore) {
		const struct vmtrace_live_clock *c = vmtrace__live_clock();
		struct vmtrace__live_thread *l = vmtrace__live_ready(c);
		uint64_t born = word >> VMTRACE__ID_BITS, now = VMTRACE__LOAD(c->tick);

		if (VMTRACE_UNLIKELY(!l || !(word % VMTRACE__KEYS_MAX) || now - born >= VMTRACE__AGE_SLOTS / 2))
			return 0;
		if (born >= VMTRACE__LOAD(c->since))
			vmtrace__live_died(l, c, now, born, (uint32_t)(word % VMTRACE__KEYS_MAX), born_size);
	}
	vmtrace__keyed_add(vmtrace__keyed, id, size);
	return 1;
}

/* What the word path needs: no per-event tracer or subscriber (a), no
 * sampling, no stacks. */
#define VMTRACE__ALLOC_LIVE_OK(a)                                              \
	((a) == 0 &&                                                           \
	 (vmtrace__gate_table()[VMTRACE_PROBE_SAMPLE_ARMED].part.semaphore |   \
	  vmtrace__gate_table()[VMTRACE_PROBE_STACKS_ARMED].part.semaphore) == 0)

/* vmtrace_alloc_cached() that also stores the object's word in *(word), a
 * uint64_t the host keeps with the object until its free */
#define vmtrace_alloc_live(word, cache, klass, method, size, site, addr)      \
	do {                                                                   \
		uint32_t vmtrace__a =                                          \
			vmtrace__gate_table()[VMTRACE_PROBE_OBJECT_ALLOC].any; \
		uint32_t vmtrace__g = vmtrace__a |                             \
			vmtrace__gate_table()[VMTRACE_PROBE_ALLOC_BATCH].part.semaphore; \
		uint64_t vmtrace__w = 0;                                       \
		if (VMTRACE_UNLIKELY(vmtrace__g)) {                            \
			uint64_t vmtrace__size = (size);                       \
			if (VMTRACE_UNLIKELY(!(VMTRACE__ALLOC_LIVE_OK(vmtrace__a) && \
					       vmtrace__alloc_keyed((cache), (klass), (method), \
								    (site), vmtrace__size, \
								    &vmtrace__w)) && \
					     !vmtrace__sample_skip(vmtrace__g, vmtrace__size))) \
				vmtrace__w = vmtrace__alloc_live((cache), (klass), (method), \
								 vmtrace__size, (site), (addr)); \
		}                                                              \
		*(word) = vmtrace__w;                                          \
	} while (0)
/* vmtrace_free_cached() of an object whose word is `word` */
#define vmtrace_free_live(word, cache, klass, size, addr)                      \
	vmtrace__free_live_as(word, cache, klass, (size), vmtrace__size, addr)
/* ... of an object whose bytes changed since its allocation (a buffer it
 * grew): size is what the free counts, born_size what its allocation
 * counted, which the live heap gives back */
#define vmtrace_free_live_born(word, cache, klass, size, born_size, addr)      \
	vmtrace__free_live_as(word, cache, klass, (size), (born_size), addr)
#define vmtrace__free_live_as(word, cache, klass, size, born_size, addr)       \
	do {                                                                   \
		uint32_t vmtrace__a =                                          \
			vmtrace__gate_table()[VMTRACE_PROBE_OBJECT_FREE].any;  \
		if (VMTRACE_UNLIKELY(vmtrace__a |                              \
				     vmtrace__gate_table()[VMTRACE_PROBE_FREE_BATCH].part.semaphore)) { \
			uint64_t vmtrace__size = size, vmtrace__born = born_size, \
				 vmtrace__w = (word);                          \
			if (VMTRACE_UNLIKELY(!(vmtrace__a == 0 &&              \
					       vmtrace__free_keyed((cache), (klass), vmtrace__size, \
								   vmtrace__born, vmtrace__w)))) \
				vmtrace__free_live_born((cache), (klass), vmtrace__size, \
							vmtrace__born, (addr), vmtrace__w); \
		}                                                              \
	} while (0)
/* the same for hosts that do not give addresses (the probes carry NULL) */
#define vmtrace_alloc(klass, method, size, site) vmtrace_alloc_at(klass, method, size, site, NULL)
#define vmtrace_free(klass, size) vmtrace_free_at(klass, size, NULL)
#define vmtrace_method_entry(klass, method, file, line)                        \
	do {                                                                   \
		if (VMTRACE_ENABLED(METHOD_ENTRY))                             \
			vmtrace__method_entry((klass), (method), (file), (line)); \
	} while (0)
#define vmtrace_method_return(klass, method, file, line)                       \
	do {                                                                   \
		if (VMTRACE_ENABLED(METHOD_RETURN))                            \
			vmtrace__method_return((klass), (method), (file), (line)); \
	} while (0)
/* method NULL: every method cache of the class */
#define vmtrace_method_cache_reset(klass, method, serial)                      \
	do {                                                                   \
		if (VMTRACE_ENABLED(METHOD_CACHE_RESET))                       \
			vmtrace__method_cache_reset((klass), (method), (serial)); \
	} while (0)
#define vmtrace_constant_cache_reset(name, serial)                             \
	do {                                                                   \
		if (VMTRACE_ENABLED(CONSTANT_CACHE_RESET))                     \
			vmtrace__constant_cache_reset((name), (serial));       \
	} while (0)
#define vmtrace_global_serial_inc(serial, reason)                              \
	do {                                                                   \
		if (VMTRACE_ENABLED(GLOBAL_SERIAL_INC))                        \
			vmtrace__global_serial_inc((serial), (reason));        \
	} while (0)
#define vmtrace_gc_begin(kind, heap_bytes)                                     \
	do {                                                                   \
		if (VMTRACE_ENABLED(GC_BEGIN))                                 \
			vmtrace__gc_begin((kind), (heap_bytes));               \
	} while (0)
#define vmtrace_gc_end(kind, heap_bytes)                                       \
	do {                                                                   \
		if (VMTRACE_ENABLED(GC_END))                                   \
			vmtrace__gc_end((kind), (heap_bytes));                 \
	} while (0)

#ifdef __cplusplus
}
#endif

#endif /* VMTRACE_LIVE_H */
