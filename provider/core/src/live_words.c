/*
 * live_words.c: the live heap of objects that carry a word (live_words.h,
 * docs/live.md "A word per object").
 *
 * The clock. An object's word holds the tick it was born in: CLOCK_MONOTONIC
 * in units of 2^20 ns, read by the host from vmtrace_live.tick, which the
 * flush thread moves on every tick while a recording follows the heap (a
 * load costs nothing; a clock or TSC read per event would cost more than
 * the rest of the event). A session is the consumer's recording: the tick
 * after the last one of the previous is its first (since), so objects born
 * before it are never counted as its deaths.
 *
 * Ages. Each thread counts its births per tick in a ring of
 * VMTRACE__AGE_SLOTS ticks, less the deaths of the objects it frees (the
 * owner's inline adds); births older than 3/4 of the ring are moved by the
 * flush rounds into groups of 2^12 ticks, and a death older than half the
 * ring takes the slow path to the groups, so owner and rounds never write
 * the same slot. Summed over threads, a tick's count is the objects born
 * in it still alive; a round turns that into ages.
 */
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "batch_keys.h"
#include "live_words.h"
#include "primitives.h"

_Static_assert(VMTRACE__KEYS_MAX == 1u << VMTRACE__ID_BITS, "a key id fills its bits of a word");

struct vmtrace_live_clock vmtrace_live;
__thread struct vmtrace__live_thread *vmtrace__live_self __attribute__((tls_model("initial-exec")));

static atomic_flag setup_lock = ATOMIC_FLAG_INIT;
void (*_Atomic vt_words_session_hook)(void);

#define RING VMTRACE__AGE_SLOTS
#define TICK_NS (1ull << VMTRACE__TICK_SHIFT)

/* A command the consumer starts maps libvmtrace only after exec, so its
 * threshold comes in the environment, with a session of its own. Priority
 * 101: before a host's own constructors, which may allocate. */
__attribute__((constructor(101))) static void live_from_env(void)
{
	uint64_t v;

	if (!vmtrace__env_u64("VMTRACE_LIVE_TEMP_NS", &v))
		return;
	VMTRACE__STORE(vmtrace_live.temp_ns, v);
	VMTRACE__STORE(vmtrace_live.session, 1);
}

uint64_t vt_words_tick_of(uint64_t now_ns)
{
	return now_ns >> VMTRACE__TICK_SHIFT;
}

void vt_words_tick_to(uint64_t tick)
{
	uint64_t cur = __atomic_load_n(&vmtrace_live.tick, __ATOMIC_RELAXED);

	while (cur < tick &&
	       !__atomic_compare_exchange_n(&vmtrace_live.tick, &cur, tick, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

uint64_t vt_words_session(void)
{
	uint64_t s = VMTRACE__LOAD(vmtrace_live.session);

	if (!s)
		return 0;
	if (__atomic_load_n(&vmtrace_live.seen, __ATOMIC_ACQUIRE) == s)
		return s;
	/* try once: a signal handler must not wait for its own thread */
	if (atomic_flag_test_and_set_explicit(&setup_lock, memory_order_acquire))
		return 0;
	if (VMTRACE__LOAD(vmtrace_live.seen) != s) {
		uint64_t since = vt_words_tick_of(vmtrace__now_ns()), tick = VMTRACE__LOAD(vmtrace_live.tick);

		if (since <= tick)
			since = tick + 1;
		vt_words_tick_to(since);
		VMTRACE__STORE(vmtrace_live.since, since);
		VMTRACE__STORE(vmtrace_live.temp_ticks, (VMTRACE__LOAD(vmtrace_live.temp_ns) + TICK_NS - 1) / TICK_NS);
		__atomic_store_n(&vmtrace_live.seen, s, __ATOMIC_RELEASE);
		/* the clock moves from now on, not at the flush thread's next look */
		void (*hook)(void) = atomic_load_explicit(&vt_words_session_hook, memory_order_acquire);

		if (hook)
			hook();
	}
	atomic_flag_clear_explicit(&setup_lock, memory_order_release);
	return s;
}

int vt_words_on(void)
{
	uint64_t s = VMTRACE__LOAD(vmtrace_live.session);

	return s && vmtrace__gate_store[VMTRACE_PROBE_LIVE_BATCH].part.semaphore &&
	       __atomic_load_n(&vmtrace_live.seen, __ATOMIC_ACQUIRE) == s;
}

void vt_words_at_fork_child(void)
{
	atomic_flag_clear(&setup_lock);
	VMTRACE__STORE(vmtrace_live.seen, 0);
	vmtrace__live_self = NULL;
}

struct vt_words *vt_words_new(void)
{
	/* zero pages: nothing counted; untouched ones cost nothing */
	struct vt_words *w = mmap(NULL, sizeof(*w), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return w == MAP_FAILED ? NULL : w;
}

void vt_words_reset(struct vt_words *w, uint64_t session)
{
	memcpy(w->sent, w->pub.keys, sizeof(w->sent));
	w->net_sent = w->pub.net;
	w->pub.rise = w->pub.net;
	/* a new thread's first session finds them zero: no pages to touch */
	if (w->used) {
		memset(w->pub.born, 0, sizeof(w->pub.born));
		memset(w->old, 0, sizeof(w->old));
		memset(w->old_group, 0, sizeof(w->old_group));
	}
	w->used = 1;
	w->beyond = 0;
	w->moved = VMTRACE__LOAD(vmtrace_live.since);
	__atomic_store_n(&w->pub.session, session, __ATOMIC_RELEASE);
}

/* old[]'s slot for the births of tick born; *beyond when they are older
 * than the slot's group. */
static int64_t *old_slot(struct vt_words *w, uint64_t born)
{
	uint64_t g = born >> VT_WORDS_GROUP_SHIFT;
	uint32_t i = (uint32_t)(g % VT_WORDS_GROUPS);

	if (w->old_group[i] == g + 1)
		return &w->old[i];
	if (w->old_group[i] > g + 1)
		return &w->beyond;
	/* a group the slot has not held yet: what it held is older still */
	w->beyond += w->old[i];
	w->old[i] = 0;
	w->old_group[i] = g + 1;
	return &w->old[i];
}

void vt_words_move(struct vt_words *w, uint64_t tick)
{
	uint64_t end = tick > RING / 4 * 3 ? tick - RING / 4 * 3 : 0;

	if (end > w->moved + RING)
		w->moved = end - RING; /* the ring holds nothing older */
	for (; w->moved < end; w->moved++) {
		int64_t *slot = &w->pub.born[w->moved % RING];

		if (*slot) {
			*old_slot(w, w->moved) += *slot;
			*slot = 0;
		}
	}
}

void vt_words_old_death(struct vt_words *w, uint64_t now, uint64_t born, uint32_t id, uint64_t size)
{
	int64_t *births = born >= w->moved ? &w->pub.born[born % RING] : old_slot(w, born);

	/* the inline death, with the births counted where they are now */
	vmtrace__add(&w->pub.keys[id][0], -1);
	vmtrace__add(&w->pub.keys[id][1], -(int64_t)size);
	vmtrace__add(births, -1);
	vmtrace__add(&w->pub.net, -(int64_t)size);
	if (now - born < VMTRACE__LOAD(vmtrace_live.temp_ticks)) {
		vmtrace__add(&w->pub.keys[id][2], 1);
		vmtrace__add(&w->pub.keys[id][3], (int64_t)size);
	}
}

void vt_words_flush(struct vt_words *w, vt_words_put_fn put, void *ctx)
{
	uint32_t n = vt_key_count();
	int64_t net, rise;
	uint64_t rise_tick;

	for (uint32_t id = 1; id < n; id++) {
		int64_t now[4], d[4];
		int any = 0;

		for (int j = 0; j < 4; j++) {
			now[j] = __atomic_load_n(&w->pub.keys[id][j], __ATOMIC_RELAXED);
			d[j] = now[j] - w->sent[id][j];
			any |= d[j] != 0;
		}
		if (!any)
			continue;
		const struct vmtrace__key *key = vt_key_get(id);
		put(ctx, &(struct vmtrace_live_record){ .addr = (uint64_t)d[0],
							 .klass = ~key->not_klass,
							 .method = (uint64_t)key->method,
							 .site = (uint64_t)key->site,
							 .size = (uint64_t)d[1],
							 .weight = (uint64_t)d[2],
							 .time_ns = (uint64_t)d[3],
							 .op = VMTRACE_LIVE_KEY });
		memcpy(w->sent[id], now, sizeof(now));
	}
	/* the highest point since the last flush, then a new start for it: an
	 * owner's rise between the two is lost, and the next one counts */
	net = __atomic_load_n(&w->pub.net, __ATOMIC_RELAXED);
	rise = __atomic_load_n(&w->pub.rise, __ATOMIC_RELAXED);
	rise_tick = __atomic_load_n(&w->pub.rise_tick, __ATOMIC_RELAXED);
	__atomic_store_n(&w->pub.rise, net, __ATOMIC_RELAXED);
	if (net == w->net_sent && rise <= w->net_sent)
		return;
	put(ctx, &(struct vmtrace_live_record){ .addr = (uint64_t)(net - w->net_sent),
						 .size = rise > w->net_sent ? (uint64_t)(rise - w->net_sent) : 0,
						 .time_ns = rise_tick << VMTRACE__TICK_SHIFT,
						 .op = VMTRACE_LIVE_NET });
	w->net_sent = net;
}

static unsigned log2_of(uint64_t v)
{
	return v ? 63u - (unsigned)__builtin_clzll(v) : 0;
}

/* ages in ticks: the middle of the span a tick's births may have lived.
 * Signed: a thread's deaths of objects another thread bore are negative,
 * and a bucket depends on the age alone, so the threads' sums meet there. */
static void add_age(int64_t hist[VT_WORDS_AGE_BUCKETS], uint64_t ticks, int64_t objects)
{
	hist[log2_of((ticks << VMTRACE__TICK_SHIFT) + TICK_NS / 2)] += objects;
}

void vt_words_ages(const struct vt_words *w, uint64_t tick, int64_t hist[VT_WORDS_AGE_BUCKETS])
{
	uint64_t first = tick >= RING ? tick - RING + 1 : 0;

	if (first < w->moved)
		first = w->moved;
	for (uint64_t t = first; t <= tick; t++) {
		int64_t n = __atomic_load_n(&w->pub.born[t % RING], __ATOMIC_RELAXED);

		if (n)
			add_age(hist, tick - t, n);
	}
	for (uint32_t i = 0; i < VT_WORDS_GROUPS; i++)
		if (w->old_group[i] && w->old[i])
			add_age(hist, tick - (((w->old_group[i] - 1) << VT_WORDS_GROUP_SHIFT) +
					      (1u << VT_WORDS_GROUP_SHIFT) / 2),
				w->old[i]);
	if (w->beyond)
		add_age(hist, (uint64_t)VT_WORDS_GROUPS << VT_WORDS_GROUP_SHIFT, w->beyond);
}
