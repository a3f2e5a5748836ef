/*
 * probes.c: the USDT sites the host's calls reach (vmtrace.h), each also
 * publishing onto the bus when it has subscribers, and byte-sampling of
 * allocations. The gates that guard them and the sites the library fires
 * itself are in primitives.c.
 *
 * The gates. dtrace -h declares one semaphore per probe
 * (vmtrace_<probe>_semaphore, an unsigned short the kernel increments for
 * every attached uprobe). Instead of letting `dtrace -G` scatter them, we
 * place each semaphore as the low half of a 32-bit gate whose high half counts
 * bus subscribers, so the host's inline check is one load and one branch for
 * both. primitives.c places the gates and names the semaphore symbols the
 * ELF notes refer to.
 *
 * Sampling. With a period R set (and a consumer holding sample__armed), each
 * thread counts bytes down from an exponentially distributed start; only the
 * allocation that crosses zero fires object__alloc. The countdown of the
 * allocations that do not cross it happens inline in the host (vmtrace.h),
 * so they cost a decrement and a branch, without a call. An allocation of size s is
 * then sampled with probability p = 1 - exp(-s/R), and its weight 1/p is
 * rounded up or down at random so that weights stay integers (the probe ABI)
 * and the estimate stays unbiased.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "vmtrace/vmtrace.h"
#include "vmtrace_probes.h"
#include "primitives.h"
#include "batch.h"
#include "live_batch.h"
#include "stacks.h"

__attribute__((visibility("hidden"))) volatile uint64_t vmtrace__sample_period_store;
extern volatile uint64_t vmtrace_sample_period __attribute__((alias("vmtrace__sample_period_store")));
__attribute__((visibility("hidden"))) volatile uint64_t vmtrace__host_armings_store;
extern volatile uint64_t vmtrace_host_armings __attribute__((alias("vmtrace__host_armings_store")));

void vmtrace_host_arms_later(void)
{
	__atomic_fetch_or(&vmtrace__host_armings_store, VMTRACE_HOST_ARMS_LATER, __ATOMIC_RELEASE);
}

void vmtrace_host_armed(int on)
{
	/* only the host's one arming thread writes it: no lost update */
	uint64_t v = vmtrace__host_armings_store;
	uint64_t count = v & ~(VMTRACE_HOST_ARMS_LATER | VMTRACE_HOST_ARMED_NOW);

	v = (v & VMTRACE_HOST_ARMS_LATER) | (on ? VMTRACE_HOST_ARMED_NOW | (count + 1) : count);
	__atomic_store_n(&vmtrace__host_armings_store, v, __ATOMIC_RELEASE);
}

#define SEMAPHORE(P) (vmtrace__gate_store[VMTRACE_PROBE_##P].part.semaphore)
#define SUBSCRIBED(P) (vmtrace__gate_store[VMTRACE_PROBE_##P].part.subscribers)

static void publish(uint32_t kind, struct vmtrace_event *ev)
{
	ev->kind = kind;
	ev->producer = vmtrace__gettid();
	ev->time_ns = vmtrace__now_ns();
	vmtrace_bus_publish(ev);
}

/* ---- sampling ---- */

struct sampler {
	uint64_t rng;      /* xorshift64* state, 0 = not seeded yet */
	uint64_t period;   /* the period the countdown was drawn for */
};
/* initial-exec: no __tls_get_addr call on the allocation path */
static __thread struct sampler sampler __attribute__((tls_model("initial-exec")));

/* Bytes until this thread's next sample; the host's inline check counts it
 * down (vmtrace.h), this file draws it. */
__thread int64_t vmtrace__sample_left __attribute__((tls_model("initial-exec")));

static double uniform01(struct sampler *s)
{
	if (s->rng == 0)
		s->rng = (vmtrace__now_ns() ^ ((uint64_t)vmtrace__gettid() << 32)) | 1;
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	uint64_t r = s->rng * 0x2545F4914F6CDD1DULL;
	return ((double)(r >> 11) + 0.5) / 9007199254740992.0; /* (0,1) */
}

#define VMTRACE_SAMPLE_GAP_MAX 4611686018427387904.0 /* 2^62: the longest gap drawn */

/* Bytes to the next sample: an exponential gap, rounded up, because an
 * allocation is sampled when the bytes counted reach the gap; rounding down
 * would sample slightly too often. */
static int64_t draw_gap(struct sampler *s, uint64_t period)
{
	double gap = ceil(-log(uniform01(s)) * (double)period);

	/* -ln(U) reaches 36.7, so a period beyond 2^57 could draw a gap past
	 * INT64_MAX, and converting that is undefined; a countdown of 2^62
	 * bytes is never reached anyway, and leaves room to subtract sizes */
	if (!(gap < VMTRACE_SAMPLE_GAP_MAX))
		return (int64_t)VMTRACE_SAMPLE_GAP_MAX;
	return gap < 1.0 ? 1 : (int64_t)gap;
}

/* A command vmtrace starts cannot have its period written into memory
 * before it runs (its libvmtrace is not mapped yet), so the consumer passes
 * it in the environment; it still counts only while sample__armed is held.
 * Priority 101: before a host's own constructors, which may allocate. */
__attribute__((constructor(101))) static void sample_period_from_env(void)
{
	uint64_t v;

	if (vmtrace__env_u64("VMTRACE_SAMPLE_PERIOD", &v))
		vmtrace__sample_period_store = v;
	unsetenv("VMTRACE_SAMPLE_PERIOD"); /* the program's environment is its own */
}

static inline uint64_t period_in_force(void)
{
	return SEMAPHORE(SAMPLE_ARMED) ? vmtrace__sample_period_store : 0;
}

uint64_t vmtrace_sample_period_effective(void)
{
	return period_in_force();
}

/* The sampled allocation's weight: 1/p for p = 1 - exp(-size/period),
 * rounded to a neighbouring integer at random so its mean stays 1/p. */
static uint64_t weight_of(struct sampler *s, uint64_t size, uint64_t period)
{
	double p = -expm1(-(double)size / (double)period);
	double w = p > 0 ? 1.0 / p : (double)period;
	uint64_t whole = (uint64_t)w;
	return whole + (uniform01(s) < w - (double)whole ? 1 : 0);
}

static __attribute__((noinline)) uint64_t sampled_weight(struct sampler *s, uint64_t size,
							 uint64_t period)
{
	vmtrace__sample_left = draw_gap(s, period);
	return weight_of(s, size, period);
}

/* The thread samples at a new period: its countdown drawn afresh, and
 * sample__armed fired (its one site). */
static __attribute__((noinline)) void new_period(struct sampler *s, uint64_t period)
{
	s->period = period;
	vmtrace__sample_left = draw_gap(s, period);
	VMTRACE_SAMPLE_ARMED(period);
}

/* Weight of an allocation of `size` bytes that the countdown sampled, or 0
 * when it was not sampled. Exact mode: 1 for every allocation. Unsampled
 * allocations, nearly all of them, take only the inline countdown. */
static inline uint64_t sample_weight(uint64_t size)
{
	uint64_t period = period_in_force();
	struct sampler *s = &sampler;

	if (period == 0)
		return 1;
	if (VMTRACE_UNLIKELY(s->period != period))
		new_period(s, period);
	vmtrace__sample_left -= (int64_t)size;
	if (vmtrace__sample_left > 0)
		return 0;
	return sampled_weight(s, size, period);
}

/* ---- the out-of-line halves of the host's macros ---- */

/* A batching tracer and a per-event one (bpftrace) may both be attached:
 * each gets every event, with the same weight (0: not sampled). The only
 * frame with the probe's site: native stacks show it as alloc_general. */
static __attribute__((noinline)) void alloc_general(const char *klass, const char *method, uint64_t size,
						    const char *site, const void *addr, uint64_t weight)
{
	if (SEMAPHORE(OBJECT_ALLOC) | SEMAPHORE(ALLOC_BATCH) | SEMAPHORE(LIVE_BATCH)) {
		if (weight && addr && SEMAPHORE(LIVE_BATCH))
			vmtrace__live_add(VMTRACE_LIVE_ALLOC, (uint64_t)addr, (uint64_t)klass,
					  (uint64_t)method, (uint64_t)site, size, weight);
		if (weight && SEMAPHORE(ALLOC_BATCH) && SEMAPHORE(STACKS_ARMED))
			vmtrace__batch_count_stack((uint64_t)klass, (uint64_t)method, (uint64_t)site, size,
						   weight);
		else if (weight && SEMAPHORE(ALLOC_BATCH))
			vmtrace__batch_count(VMTRACE_BATCH_ALLOC, (uint64_t)klass, (uint64_t)method,
					     (uint64_t)site, size, weight);
		if (weight && SEMAPHORE(OBJECT_ALLOC)) {
			/* --stack both: BPF walks the chain from the thread's pointer */
			if (SEMAPHORE(STACKS_ARMED))
				vt_stacks_announce();
			VMTRACE_OBJECT_ALLOC(klass, method, size, site, weight, addr);
		}
	}
	if (SUBSCRIBED(OBJECT_ALLOC)) {
		struct vmtrace_event ev = { .u.alloc = { klass, method, size, site, 1 } };
		publish(VMTRACE_EV_ALLOC, &ev);
	}
}

void vmtrace_alloc_sampled(const char *klass, const char *method, uint64_t size, const char *site,
			   const void *addr, uint64_t period)
{
	struct sampler *s = &sampler;
	uint64_t weight = 1;

	if (period) {
		if (VMTRACE_UNLIKELY(s->period != period))
			new_period(s, period); /* the countdown is not this host's: unused */
		weight = weight_of(s, size, period);
	}
	alloc_general(klass, method, size, site, addr, weight);
}

uint64_t vmtrace_sample_gap_objects(uint64_t period, uint64_t unit)
{
	/* the first object whose `unit` bytes on the clock reach a gap drawn
	 * by bytes: P(gap > k objects) = exp(-k * unit / period), the
	 * geometric law of objects each sampled with 1 - exp(-unit/period) */
	uint64_t bytes = (uint64_t)draw_gap(&sampler, period);

	return unit ? (bytes + unit - 1) / unit : bytes;
}

void vmtrace_alloc_sampled_unit(const char *klass, const char *method, uint64_t size, const char *site,
				const void *addr, uint64_t period, uint64_t unit)
{
	alloc_general(klass, method, size, site, addr, period ? weight_of(&sampler, unit, period) : 1);
}

/* The batched exact case first, a leaf with a small frame: only the batch
 * probe's tracer, no sampling, no VM stacks (their walk is in
 * alloc_general's path), no live heap, no per-event probe, no subscriber. */
void vmtrace__alloc_at(const char *klass, const char *method, uint64_t size, const char *site,
		       const void *addr)
{
	if (__builtin_expect(SEMAPHORE(ALLOC_BATCH) && !vmtrace__gate_store[VMTRACE_PROBE_OBJECT_ALLOC].any &&
				     !SEMAPHORE(SAMPLE_ARMED) && !SEMAPHORE(STACKS_ARMED) &&
				     !SEMAPHORE(LIVE_BATCH),
			     1)) {
		vmtrace__batch_count(VMTRACE_BATCH_ALLOC, (uint64_t)klass, (uint64_t)method, (uint64_t)site,
				     size, 1);
		return;
	}
	/* --live: the address, then the count, as alloc_general does them */
	if (SEMAPHORE(ALLOC_BATCH) && SEMAPHORE(LIVE_BATCH) && addr &&
	    !vmtrace__gate_store[VMTRACE_PROBE_OBJECT_ALLOC].any && !SEMAPHORE(SAMPLE_ARMED) &&
	    !SEMAPHORE(STACKS_ARMED)) {
		vmtrace__live_add(VMTRACE_LIVE_ALLOC, (uint64_t)addr, (uint64_t)klass, (uint64_t)method,
				  (uint64_t)site, size, 1);
		vmtrace__batch_count(VMTRACE_BATCH_ALLOC, (uint64_t)klass, (uint64_t)method, (uint64_t)site,
				     size, 1);
		return;
	}
	/* --stack vm alone: straight to the stacked count (a tail call) */
	if (SEMAPHORE(ALLOC_BATCH) && SEMAPHORE(STACKS_ARMED) &&
	    !vmtrace__gate_store[VMTRACE_PROBE_OBJECT_ALLOC].any && !SEMAPHORE(SAMPLE_ARMED) &&
	    !SEMAPHORE(LIVE_BATCH)) {
		vmtrace__batch_count_stack((uint64_t)klass, (uint64_t)method, (uint64_t)site, size, 1);
		return;
	}
	alloc_general(klass, method, size, site, addr,
		      SEMAPHORE(OBJECT_ALLOC) | SEMAPHORE(ALLOC_BATCH) | SEMAPHORE(LIVE_BATCH) ? sample_weight(size) : 0);
}

static __attribute__((noinline)) void free_general(const char *klass, uint64_t size, const void *addr)
{
	if (addr && SEMAPHORE(LIVE_BATCH))
		vmtrace__live_add(VMTRACE_LIVE_FREE, (uint64_t)addr, (uint64_t)klass, 0, 0, size, 0);
	if (SEMAPHORE(FREE_BATCH))
		vmtrace__batch_count(VMTRACE_BATCH_FREE, (uint64_t)klass, 0, 0, size, 1);
	if (SEMAPHORE(OBJECT_FREE))
		VMTRACE_OBJECT_FREE(klass, size, addr);
	if (SUBSCRIBED(OBJECT_FREE)) {
		struct vmtrace_event ev = { .u.free = { klass, size } };
		publish(VMTRACE_EV_FREE, &ev);
	}
}

void vmtrace__free_at(const char *klass, uint64_t size, const void *addr)
{
	if (__builtin_expect(SEMAPHORE(FREE_BATCH) && !vmtrace__gate_store[VMTRACE_PROBE_OBJECT_FREE].any &&
				     !SEMAPHORE(LIVE_BATCH),
			     1)) {
		vmtrace__batch_count(VMTRACE_BATCH_FREE, (uint64_t)klass, 0, 0, size, 1);
		return;
	}
	if (SEMAPHORE(FREE_BATCH) && SEMAPHORE(LIVE_BATCH) && addr &&
	    !vmtrace__gate_store[VMTRACE_PROBE_OBJECT_FREE].any) {
		vmtrace__live_add(VMTRACE_LIVE_FREE, (uint64_t)addr, (uint64_t)klass, 0, 0, size, 0);
		vmtrace__batch_count(VMTRACE_BATCH_FREE, (uint64_t)klass, 0, 0, size, 1);
		return;
	}
	free_general(klass, size, addr);
}

/* ---- cached sites (vmtrace_alloc_cached): the inline path missed ---- */

/* Intern the site's key, leave its id in the host's cache and count the
 * event by it, as the inline path will next time; 0 when the event must
 * take the plain path instead. */
static int count_by_key(struct vmtrace_key_cache *cache, const char *klass, const char *method,
			const char *site, uint64_t size)
{
	uint32_t id = vmtrace__batch_key(klass, method, site);

	if (!id)
		return 0;
	__atomic_store_n(&cache->id, id, __ATOMIC_RELEASE);
	vmtrace__keyed_add(vmtrace__keyed, id, size);
	return 1;
}

void vmtrace__alloc_cached(struct vmtrace_key_cache *cache, const char *klass, const char *method,
			   uint64_t size, const char *site, const void *addr)
{
	/* by key only while the batch alone wants the event */
	if (!(SEMAPHORE(ALLOC_BATCH) &&
	      VMTRACE__ALLOC_KEYED_OK(vmtrace__gate_store[VMTRACE_PROBE_OBJECT_ALLOC].any) &&
	      count_by_key(cache, klass, method, site, size)))
		vmtrace__alloc_at(klass, method, size, site, addr);
}

void vmtrace__free_cached(struct vmtrace_key_cache *cache, const char *klass, uint64_t size,
			  const void *addr)
{
	if (!(SEMAPHORE(FREE_BATCH) &&
	      VMTRACE__FREE_KEYED_OK(vmtrace__gate_store[VMTRACE_PROBE_OBJECT_FREE].any) &&
	      count_by_key(cache, klass, NULL, VMTRACE__FREE_SITE, size)))
		vmtrace__free_at(klass, size, addr);
}

/* ---- objects with a word (vmtrace_alloc_live): the inline path missed ---- */

/* The thread's first event with a word, a key new to the site, a session
 * new to the thread: set up what the inline path needs (the thread's
 * counts, the flush thread, the key's id in the cache, the thread's live
 * counts for the session) and count as it does. Else the cached path,
 * whose --live is by address. */
uint64_t vmtrace__alloc_live(struct vmtrace_key_cache *cache, const char *klass, const char *method,
			     uint64_t size, const char *site, const void *addr)
{
	if (SEMAPHORE(ALLOC_BATCH) && SEMAPHORE(LIVE_BATCH) &&
	    VMTRACE__ALLOC_LIVE_OK(vmtrace__gate_store[VMTRACE_PROBE_OBJECT_ALLOC].any)) {
		uint32_t id = vmtrace__batch_key(klass, method, site);
		struct vmtrace__live_thread *l = id ? vmtrace__live_words() : NULL;

		if (l) {
			__atomic_store_n(&cache->id, id, __ATOMIC_RELEASE);
			vmtrace__keyed_add(vmtrace__keyed, id, size);
			return vmtrace__live_born(l, VMTRACE__LOAD(vmtrace_live.tick), id, size);
		}
	}
	vmtrace__alloc_cached(cache, klass, method, size, site, addr);
	return 0;
}

void vmtrace__free_live(struct vmtrace_key_cache *cache, const char *klass, uint64_t size, const void *addr,
			uint64_t word)
{
	vmtrace__free_live_born(cache, klass, size, size, addr, word);
}

/* The same for a free, and the death of an object born too long ago for
 * the thread's ring (born_size: the bytes its allocation counted). An
 * object without a word takes the address path. */
void vmtrace__free_live_born(struct vmtrace_key_cache *cache, const char *klass, uint64_t size,
			     uint64_t born_size, const void *addr, uint64_t word)
{
	uint32_t id = (uint32_t)(word % VMTRACE__KEYS_MAX);
	struct vmtrace__live_thread *l;

	if (id && SEMAPHORE(FREE_BATCH) && SEMAPHORE(LIVE_BATCH) &&
	    !vmtrace__gate_store[VMTRACE_PROBE_OBJECT_FREE].any && (l = vmtrace__live_words())) {
		uint64_t born = word >> VMTRACE__ID_BITS, now = VMTRACE__LOAD(vmtrace_live.tick);

		if (born < VMTRACE__LOAD(vmtrace_live.since))
			; /* born before the recording: not its to count */
		else if (now - born >= VMTRACE__AGE_SLOTS / 2)
			vmtrace__live_words_old(now, born, id, born_size);
		else
			vmtrace__live_died(l, &vmtrace_live, now, born, id, born_size);
		if (!count_by_key(cache, klass, NULL, VMTRACE__FREE_SITE, size))
			vmtrace__batch_count(VMTRACE_BATCH_FREE, (uint64_t)klass, 0, 0, size, 1);
		return;
	}
	vmtrace__free_cached(cache, klass, size, addr);
}

/* The entry points of hosts built before the address argument. */
void vmtrace__alloc(const char *klass, const char *method, uint64_t size, const char *site)
{
	vmtrace__alloc_at(klass, method, size, site, NULL);
}

void vmtrace__free(const char *klass, uint64_t size)
{
	vmtrace__free_at(klass, size, NULL);
}

void vmtrace__method_entry(const char *klass, const char *method, const char *file, int line)
{
	if (SEMAPHORE(METHOD_ENTRY))
		VMTRACE_METHOD_ENTRY(klass, method, file, line);
	if (SUBSCRIBED(METHOD_ENTRY)) {
		struct vmtrace_event ev = { .u.method = { klass, method, file, line } };
		publish(VMTRACE_EV_METHOD_ENTRY, &ev);
	}
}

void vmtrace__method_return(const char *klass, const char *method, const char *file, int line)
{
	if (SEMAPHORE(METHOD_RETURN))
		VMTRACE_METHOD_RETURN(klass, method, file, line);
	if (SUBSCRIBED(METHOD_RETURN)) {
		struct vmtrace_event ev = { .u.method = { klass, method, file, line } };
		publish(VMTRACE_EV_METHOD_RETURN, &ev);
	}
}

void vmtrace__method_cache_reset(const char *klass, const char *method, uint64_t serial)
{
	if (SEMAPHORE(METHOD_CACHE_RESET))
		VMTRACE_METHOD_CACHE_RESET(klass, method, serial);
	if (SUBSCRIBED(METHOD_CACHE_RESET)) {
		struct vmtrace_event ev = { .u.method_cache_reset = { klass, method, serial } };
		publish(VMTRACE_EV_METHOD_CACHE_RESET, &ev);
	}
}

void vmtrace__constant_cache_reset(const char *name, uint64_t serial)
{
	if (SEMAPHORE(CONSTANT_CACHE_RESET))
		VMTRACE_CONSTANT_CACHE_RESET(name, serial);
	if (SUBSCRIBED(CONSTANT_CACHE_RESET)) {
		struct vmtrace_event ev = { .u.constant_cache_reset = { name, serial } };
		publish(VMTRACE_EV_CONSTANT_CACHE_RESET, &ev);
	}
}

void vmtrace__global_serial_inc(uint64_t serial, const char *reason)
{
	if (SEMAPHORE(GLOBAL_SERIAL_INC))
		VMTRACE_GLOBAL_SERIAL_INC(serial, reason);
	if (SUBSCRIBED(GLOBAL_SERIAL_INC)) {
		struct vmtrace_event ev = { .u.global_serial_inc = { serial, reason } };
		publish(VMTRACE_EV_GLOBAL_SERIAL_INC, &ev);
	}
}

/* A thread's batch is flushed at a collection's start at most this often:
 * a runtime that stops many times a second (Ruby stops for each step of
 * incremental marking and lazy sweeping) would otherwise pay a whole
 * flush for each stop. */
#define GC_FLUSH_EVERY_NS 20000000ull
static __thread uint64_t gc_flushed_ns __attribute__((tls_model("initial-exec")));

void vmtrace__gc_begin(int kind, uint64_t heap_bytes)
{
	/* the allocations before this collection reach the tracer about with
	 * it, give or take GC_FLUSH_EVERY_NS: the flush thread delivers them
	 * on the other core while this one collects (a flush of its own here
	 * took 2-4% of a Ruby program's main thread) */
	if (SEMAPHORE(ALLOC_BATCH)) {
		uint64_t now = vmtrace__now_ns();

		if (now - gc_flushed_ns >= GC_FLUSH_EVERY_NS) {
			gc_flushed_ns = now;
			if (vmtrace__batch_round_soon())
				vmtrace__batch_flush_self();
		}
	}
	if (SEMAPHORE(LIVE_BATCH))
		vmtrace__live_flush_self();
	if (SEMAPHORE(GC_BEGIN))
		VMTRACE_GC_BEGIN(kind, heap_bytes);
	if (SUBSCRIBED(GC_BEGIN)) {
		struct vmtrace_event ev = { .u.gc = { kind, heap_bytes } };
		publish(VMTRACE_EV_GC_BEGIN, &ev);
	}
}

void vmtrace__gc_end(int kind, uint64_t heap_bytes)
{
	if (SEMAPHORE(GC_END))
		VMTRACE_GC_END(kind, heap_bytes);
	if (SUBSCRIBED(GC_END)) {
		struct vmtrace_event ev = { .u.gc = { kind, heap_bytes } };
		publish(VMTRACE_EV_GC_END, &ev);
	}
}
