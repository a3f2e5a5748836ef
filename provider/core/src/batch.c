/*
 * batch.c: batched counting of allocations and frees (docs/probes.md,
 * "Batched counts"; the table itself is batch_table.c, a thread's flush
 * batch_thread.c).
 *
 * While a tracer holds alloc__batch's (free__batch's) semaphore, each event
 * is added to the calling thread's table instead of firing a probe: a hash
 * of the three interned pointers, three stores, no trap. The counts reach
 * the tracer through one probe per batch:
 *   - when a thread's table must grow (it doubles up to a bound, then is
 *     flushed and started anew), the thread flushes it itself;
 *   - when a thread exits (a pthread key destructor);
 *   - every FLUSH_EVERY_NS, at gc__begin (vmtrace__batch_round_soon), and
 *     within a tick of a consumer writing vmtrace_batch_request, a flush
 *     thread flushes every thread, idle or blocked ones too, and ends the
 *     round with a ROUND_END batch;
 *   - when the process exits (or libvmtrace is unloaded) a last round, EXIT.
 * The flush thread is libvmtrace's own rather than the bus dispatcher,
 * which runs only in hosts that start the bus.
 *
 * Signal handlers. A handler may allocate while its thread is in the middle
 * of an add. The thread marks itself busy around every add and flush; a
 * handler that finds it busy claims a slot of a small per-thread queue with
 * one atomic compare-and-swap (claim), then writes it (write); the thread
 * folds the queue into its table when it leaves the busy section. Nested
 * handlers claim distinct slots; a full queue counts the event as lost.
 *
 * Memory. Thread records and tables are mmap'ed (never malloc: the host's
 * allocator may be what is being traced), and the only thread-local
 * storage is one pointer, so a dlopen'ed libvmtrace needs no large static
 * TLS. Records are never freed: a thread that exits leaves its record for
 * the next new thread.
 *
 * fork. The child keeps only its own thread's record, with everything it
 * held marked delivered (those counts are the parent's), and starts a flush
 * thread of its own on demand.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "batch.h"
#include "batch_keys.h"
#include "batch_table.h"
#include "batch_thread.h"
#include "live_batch.h"
#include "live_words.h"
#include "primitives.h"
#include "stacks.h"

#define FLUSH_TICK_NS 25000000ull     /* how often the flush thread looks at requests */
#define IDLE_TICK_NS 250000000ull     /* ... while nobody batches */
#define LIVE_TICK_NS (1ull << VMTRACE__TICK_SHIFT) /* ... while a recording follows words: their clock */
#define FLUSH_EVERY_NS 200000000ull   /* a round at least this often while batching */


__attribute__((visibility("hidden"))) volatile uint64_t vmtrace__batch_request_store;
extern volatile uint64_t vmtrace_batch_request __attribute__((alias("vmtrace__batch_request_store")));

__thread struct vt_thread *vmtrace__batch_self __attribute__((tls_model("initial-exec")));
#define self vmtrace__batch_self
static struct vt_thread *_Atomic registry;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static int have_exit_key;

/* rounds: the flush thread, gc-less exits and the process's last round */
static pthread_mutex_t round_mu = PTHREAD_MUTEX_INITIALIZER;
static struct vt_batch_buf round_buf[VT_KINDS];
static struct vt_batch_buf round_stack_buf; /* a round's STACK batches */
static uint32_t round_no;

_Atomic int vmtrace__batch_flusher;
#define flusher_state vmtrace__batch_flusher
static _Atomic uint32_t flusher_stop; /* futex word: 1 asks it to end */
static pthread_t flusher;
static _Atomic int stacks_sealed;     /* a thread sealed a half of its new stacks' frames */
static _Atomic int round_soon;        /* a collection's start asked for a round now */
static struct vt_batch_buf sealed_buf; /* the flush thread's, for them */

/* ---- the thread's own record ---- */

static void thread_exit(void *arg);
static void fold(struct vt_thread *t);
static void start_flusher(void);
static void wake_flusher(void);
static void at_fork_prepare(void);
static void at_fork_parent(void);
static void at_fork_child(void);

static void init_once(void)
{
	have_exit_key = pthread_key_create(&exit_key, thread_exit) == 0;
	pthread_atfork(at_fork_prepare, at_fork_parent, at_fork_child);
}

static struct vt_thread *thread_attach(void)
{
	struct vt_thread *t;

	pthread_once(&once, init_once);
	for (t = atomic_load_explicit(&registry, memory_order_acquire); t; t = t->next) {
		int want = REC_FREE;

		if (atomic_compare_exchange_strong(&t->state, &want, REC_LIVE))
			break;
	}
	if (!t) {
		t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (t == MAP_FAILED)
			return NULL;
		atomic_store_explicit(&t->state, REC_LIVE, memory_order_relaxed);
		t->next = atomic_load_explicit(&registry, memory_order_relaxed);
		while (!atomic_compare_exchange_weak_explicit(&registry, &t->next, t, memory_order_release,
							      memory_order_relaxed))
			;
	}
	self = t;
	if (have_exit_key)
		pthread_setspecific(exit_key, t);
	start_flusher();
	return t;
}

/* Flush and give up the record: at thread exit. */
static void thread_exit(void *arg)
{
	struct vt_thread *t = arg;

	t->busy = 1;
	/* later events (other destructors) take a new record */
	vmtrace__keyed = NULL;
	atomic_signal_fence(memory_order_seq_cst);
	fold(t);
	vt_thread_lock(t);
	vt_thread_flush_own(t);
	for (int k = 0; k < VT_KINDS; k++) {
		vt_table_free(t->tab[k]);
		vt_thread_set_table(t, k, NULL);
	}
	/* events a handler queued since the fold have no table left */
	atomic_fetch_add_explicit(&vmtrace__batch_lost,
				  atomic_load_explicit(&t->dtail, memory_order_relaxed) - t->dhead,
				  memory_order_relaxed);
	t->dhead = 0;
	atomic_store_explicit(&t->dtail, 0, memory_order_relaxed);
	self = NULL;
	t->busy = 0;
	atomic_store_explicit(&t->state, REC_FREE, memory_order_release);
	vt_thread_unlock(t);
}

/* The table for kind k is missing or full: flush it (it is then all
 * delivered) and put an empty one, bigger unless at its bound, in its place.
 * The owner only, busy. 0, or -ENOMEM with the old table kept. */
static int replace_table(struct vt_thread *t, int k)
{
	struct vt_table *old = t->tab[k];
	uint32_t slots = old ? 2 * (old->mask + 1) : VT_TABLE_MIN_SLOTS;
	struct vt_table *fresh;

	if (slots > VT_TABLE_MAX_SLOTS)
		slots = VT_TABLE_MAX_SLOTS;
	fresh = vt_table_new(slots);
	if (!fresh)
		return -ENOMEM;
	vt_thread_lock(t);
	if (old) {
		struct vt_flush f = { &t->buf, (uint16_t)(k + 1), 0, vt_kind_on(k), NULL, NULL };

		if (t->stacks && k == VMTRACE_BATCH_ALLOC - 1)
			vt_stacks_flush(t->stacks, &t->buf, 0, vt_kind_on(k));
		vt_table_flush(old, &f);
		vt_flush_end(&f, 0, 0);
	}
	vt_thread_set_table(t, k, fresh);
	vt_thread_unlock(t);
	vt_table_free(old);
	return 0;
}

static void add(struct vt_thread *t, int k, const uint64_t key[4], uint64_t bytes, uint64_t weight)
{
	struct vt_slot *sl = NULL;

	if (VMTRACE_UNLIKELY(!t->tab[k]) && replace_table(t, k))
		goto lost;
	sl = vt_table_get(t->tab[k], key[0], key[1], key[2], key[3]);
	if (VMTRACE_UNLIKELY(!sl)) {
		if (replace_table(t, k))
			goto lost;
		sl = vt_table_get(t->tab[k], key[0], key[1], key[2], key[3]);
	}
	vt_slot_add(sl, bytes, weight);
	return;
lost:
	atomic_fetch_add_explicit(&vmtrace__batch_lost, 1, memory_order_relaxed);
}

/* A handler interrupted its thread's add: queue the event (claim, then write). */
static void defer(struct vt_thread *t, int k, const uint64_t key[4], uint64_t bytes, uint64_t weight)
{
	uint32_t i = atomic_load_explicit(&t->dtail, memory_order_relaxed);

	do {
		if (i - t->dhead >= VT_DEFERRED) {
			atomic_fetch_add_explicit(&vmtrace__batch_lost, 1, memory_order_relaxed);
			return;
		}
	} while (!atomic_compare_exchange_weak_explicit(&t->dtail, &i, i + 1, memory_order_relaxed,
							memory_order_relaxed));
	struct vt_deferred *d = &t->dq[i % VT_DEFERRED];
	d->kind = (uint16_t)k;
	memcpy(d->key, key, sizeof(d->key));
	d->bytes = bytes;
	d->weight = weight;
}

/* Fold what handlers queued; busy. Handlers that come meanwhile queue
 * behind, and the loop takes them too. */
static void fold(struct vt_thread *t)
{
	while (t->dhead != atomic_load_explicit(&t->dtail, memory_order_relaxed)) {
		struct vt_deferred *d = &t->dq[t->dhead % VT_DEFERRED];

		add(t, d->kind, d->key, d->bytes, d->weight);
		t->dhead++;
	}
}

/* The calling thread's stack id (0: none), its frames interned; busy. */
static uint64_t take_stack(struct vt_thread *t)
{
	int must_flush;
	uint64_t id;

	if (VMTRACE_UNLIKELY(!t->stacks)) {
		struct vt_stacks *s = vt_stacks_new();

		if (!s)
			return 0;
		vt_thread_lock(t); /* a flush reads t->stacks under the lock */
		t->stacks = s;
		vt_thread_unlock(t);
		vmtrace__fire_stacks_armed(VMTRACE_STACK_MAX_DEPTH, (const void *)vmtrace__stacks_root,
					   (const void *)&vmtrace__frames_store);
	}
	id = vt_stacks_take(t->stacks, &must_flush);
	if (VMTRACE_UNLIKELY(must_flush)) {
		/* its frames are waiting to be sent: the flush thread sends them
		 * while this one goes on in the other half; or, when that one
		 * is not sent yet (or no flush thread runs), this one sends both */
		int sealed;

		vt_thread_lock(t);
		sealed = atomic_load(&flusher_state) == VT_FLUSHER_RUNNING && vt_stacks_seal(t->stacks);
		if (!sealed) {
			vt_stacks_flush(t->stacks, &t->buf, 0, vt_kind_on(VMTRACE_BATCH_ALLOC - 1));
			vt_stacks_rewind(t->stacks);
		}
		vt_thread_unlock(t);
		if (sealed) {
			atomic_store_explicit(&stacks_sealed, 1, memory_order_release);
			wake_flusher();
		}
		id = vt_stacks_take(t->stacks, &must_flush);
	}
	return id;
}

void vmtrace__batch_fold_self(struct vt_thread *t)
{
	t->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	fold(t);
	atomic_signal_fence(memory_order_seq_cst);
	t->busy = 0;
}

/* The calling thread's record (made at its first event), with the flush
 * thread running: none after a fork, where the child starts its own on its
 * next event. NULL when there is no memory for a record. */
static struct vt_thread *self_ready(void)
{
	struct vt_thread *t = self;

	if (!t && !(t = thread_attach()))
		return NULL;
	if (atomic_load_explicit(&flusher_state, memory_order_relaxed) == VT_FLUSHER_NONE)
		start_flusher();
	return t;
}

/* Everything but the common case (batch.h): the thread's first
 * event, no flush thread yet (after a fork), a handler interrupting an add,
 * a key missing from its first probe, a table to create or grow, and every
 * event counted under its VM stack (want_stack: the walk in stacks.c). */
static inline __attribute__((always_inline)) void count_slow(int k, uint64_t klass, uint64_t method,
							  uint64_t site, uint64_t bytes, uint64_t weight,
							  int want_stack)
{
	struct vt_thread *t = self_ready();
	uint64_t key[4] = { klass, method, site, 0 };

	if (!t) {
		atomic_fetch_add_explicit(&vmtrace__batch_lost, 1, memory_order_relaxed);
		return;
	}
	/* a fork child's hot path is closed until here (at_fork_child) */
	for (int j = 0; j < VT_KINDS; j++)
		if (t->tab[j] && !t->slots[j])
			vt_thread_set_table(t, j, t->tab[j]);
	if (t->busy) {
		/* a handler: the id only; if its frames were never interned the
		 * consumer counts the stack as lost */
		if (want_stack && vt_stacks_ready())
			key[3] = vt_stacks_take(NULL, &(int){ 0 });
		defer(t, k, key, bytes, weight);
		return;
	}
	t->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	if (want_stack && vt_stacks_ready())
		key[3] = take_stack(t);
	add(t, k, key, bytes, weight);
	if (t->dhead != atomic_load_explicit(&t->dtail, memory_order_relaxed))
		fold(t);
	atomic_signal_fence(memory_order_seq_cst);
	t->busy = 0;
}

uint32_t vmtrace__batch_key(const char *klass, const char *method, const char *site)
{
	struct vt_thread *t = self_ready();
	struct vt_keyed *kd;

	if (!t)
		return 0;
	kd = atomic_load_explicit(&t->keyed, memory_order_acquire);
	if (!kd) {
		struct vt_keyed *none = NULL, *fresh = vt_keyed_new();

		if (!fresh)
			return 0;
		/* a flush reads it from the record: published once, never freed;
		 * a signal handler that published one meanwhile wins */
		if (atomic_compare_exchange_strong_explicit(&t->keyed, &none, fresh, memory_order_acq_rel,
							    memory_order_acquire)) {
			kd = fresh;
		} else {
			vt_keyed_free(fresh);
			kd = none;
		}
	}
	vmtrace__keyed = kd->counts;
	return vt_key_intern(klass, method, site);
}

void vmtrace__batch_count_slow(int k, uint64_t klass, uint64_t method, uint64_t site, uint64_t bytes,
			       uint64_t weight)
{
	count_slow(k, klass, method, site, bytes, weight, 0);
}

/* apart from the hot path below, so that path keeps a small frame */
static __attribute__((noinline)) void count_stack_slow(uint64_t klass, uint64_t method, uint64_t site,
						       uint64_t bytes, uint64_t weight)
{
	count_slow(VMTRACE_BATCH_ALLOC - 1, klass, method, site, bytes, weight, 1);
}

void vmtrace__batch_count_stack(uint64_t klass, uint64_t method, uint64_t site, uint64_t size,
				uint64_t weight)
{
	struct vt_thread *t = self;
	const int k = VMTRACE_BATCH_ALLOC - 1;
	struct vt_slot *base = NULL, *sl = NULL;
	uint64_t id;

	/* the common case, as vmtrace__batch_count's: a stack already sent
	 * and a key at its first probes; the walk only hashes */
	if (__builtin_expect(t && !t->busy && t->stacks && (base = t->slots[k]) && vt_stacks_ready(), 1)) {
		t->busy = 1;
		atomic_signal_fence(memory_order_seq_cst);
		id = vt_stacks_known(t->stacks);
		if (__builtin_expect(id != 0, 1) &&
		    (sl = vt_slots_hit(base, t->mask[k], klass, method, site, id)))
			vt_slot_add(sl, size * weight, weight);
		atomic_signal_fence(memory_order_seq_cst);
		t->busy = 0;
		if (__builtin_expect(sl != NULL, 1)) {
			if (VMTRACE_UNLIKELY(t->dhead != atomic_load_explicit(&t->dtail, memory_order_relaxed)))
				vmtrace__batch_fold_self(t);
			return;
		}
	}
	count_stack_slow(klass, method, site, size * weight, weight);
}

void vmtrace__batch_flush_self(void)
{
	struct vt_thread *t = self;

	if (!t || t->busy)
		return;
	t->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	vt_thread_lock(t);
	vt_thread_flush_own(t);
	vt_thread_unlock(t);
	fold(t);
	atomic_signal_fence(memory_order_seq_cst);
	t->busy = 0;
}

int vmtrace__batch_round_soon(void)
{
	if (atomic_load_explicit(&flusher_state, memory_order_acquire) != VT_FLUSHER_RUNNING)
		return -1;
	atomic_store_explicit(&round_soon, 1, memory_order_release);
	vmtrace__futex_wake(&flusher_stop, 1);
	return 0;
}

/* ---- rounds: every thread ---- */

/* Flush every live thread, then end the round; flags: EXIT for the last. */
static void round_all(uint32_t flags, uint64_t request)
{
	struct vt_batch_buf *const bufs[VT_KINDS] = { &round_buf[0], &round_buf[1] };
	struct vt_thread *me = self;
	int was_busy = me ? me->busy : 0;

	/* this thread's handlers must not wait for a lock this thread holds */
	if (me)
		me->busy = 1;
	pthread_mutex_lock(&round_mu);
	/* the addresses first: a consumer that waits for this round's end
	 * then has every allocation of the live heap too */
	vmtrace__live_round(flags & VMTRACE_BATCH_EXIT, request);
	round_no = round_no + 1 ? round_no + 1 : 1;
	for (struct vt_thread *t = atomic_load_explicit(&registry, memory_order_acquire); t; t = t->next) {
		if (atomic_load_explicit(&t->state, memory_order_acquire) != REC_LIVE)
			continue;
		vt_thread_lock(t);
		if (atomic_load_explicit(&t->state, memory_order_relaxed) == REC_LIVE)
			vt_thread_flush(t, bufs, &round_stack_buf, round_no);
		vt_thread_unlock(t);
	}
	for (int k = 0; k < VT_KINDS; k++) {
		struct vt_flush f = { bufs[k], (uint16_t)(k + 1), round_no, vt_kind_on(k), NULL, NULL };

		vt_flush_end(&f, VMTRACE_BATCH_ROUND_END | flags, request);
	}
	pthread_mutex_unlock(&round_mu);
	if (me) {
		me->busy = was_busy;
		if (!was_busy)
			fold(me);
	}
}

/* Written by a consumer from outside (/proc/PID/mem); read once a tick. */
static uint64_t request_now(void)
{
	return __atomic_load_n(&vmtrace__batch_request_store, __ATOMIC_RELAXED);
}

/* The halves of new stacks' frames threads sealed (vt_stacks_seal). */
static void send_sealed_stacks(void)
{
	for (struct vt_thread *t = atomic_load_explicit(&registry, memory_order_acquire); t; t = t->next) {
		if (atomic_load_explicit(&t->state, memory_order_acquire) != REC_LIVE)
			continue;
		vt_thread_lock(t);
		if (atomic_load_explicit(&t->state, memory_order_relaxed) == REC_LIVE && t->stacks)
			vt_stacks_flush_sealed(t->stacks, &sealed_buf, 0, vt_kind_on(VMTRACE_BATCH_ALLOC - 1));
		vt_thread_unlock(t);
	}
}

static void *flusher_main(void *arg)
{
	uint64_t last_round = 0, last_request = request_now();

	(void)arg;
	while (!atomic_load_explicit(&flusher_stop, memory_order_acquire)) {
		int on = vmtrace__batch_on(VMTRACE_BATCH_ALLOC) || vmtrace__batch_on(VMTRACE_BATCH_FREE);
		int words = vt_words_on();
		uint64_t now = vmtrace__now_ns();
		uint64_t request = request_now();

		if (words)
			vmtrace__live_tick(now);
		if (atomic_exchange_explicit(&stacks_sealed, 0, memory_order_acquire))
			send_sealed_stacks();
		if (atomic_exchange_explicit(&round_soon, 0, memory_order_acquire) ||
		    request != last_request || now - last_round >= FLUSH_EVERY_NS) {
			last_request = request;
			last_round = now;
			/* with nobody batching this only marks leftovers delivered,
			 * so a consumer that attaches later never sees them */
			round_all(0, request);
		}
		vmtrace__futex_wait(&flusher_stop, 0, words ? LIVE_TICK_NS : on ? FLUSH_TICK_NS : IDLE_TICK_NS);
	}
	return NULL;
}

/* A session just set up (live_words.c): the flush thread moves its clock
 * from now on, not at its next look. Async-signal-safe. */
static void wake_flusher(void)
{
	if (atomic_load(&flusher_state) == VT_FLUSHER_RUNNING)
		vmtrace__futex_wake(&flusher_stop, 1);
}

static void start_flusher(void)
{
	int want = VT_FLUSHER_NONE;
	sigset_t all, old;

	if (!atomic_compare_exchange_strong(&flusher_state, &want, VT_FLUSHER_RUNNING))
		return;
	vt_words_session_hook = wake_flusher;
	/* the host's signals are never delivered to this thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	/* without one, idle threads' counts wait for their thread's exit;
	 * trying again on every event would cost more than it saves */
	if (pthread_create(&flusher, NULL, flusher_main, NULL) != 0)
		atomic_store(&flusher_state, VT_FLUSHER_FAILED);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* The process exits, or libvmtrace is unloaded: stop the flush thread (its
 * code must not run after an unload) and flush everything one last time. */
__attribute__((destructor)) static void batch_at_exit(void)
{
	if (atomic_load(&flusher_state) == VT_FLUSHER_RUNNING) {
		atomic_store_explicit(&flusher_stop, 1, memory_order_release);
		vmtrace__futex_wake(&flusher_stop, 1);
		pthread_join(flusher, NULL);
		/* events after this still count; the round below takes them */
		atomic_store(&flusher_state, VT_FLUSHER_FAILED);
	}
	if (atomic_load_explicit(&registry, memory_order_acquire))
		round_all(VMTRACE_BATCH_EXIT, request_now());
}

void vmtrace_frames_changed(const void *top)
{
	struct vt_thread *t = self;

	if (t && t->stacks)
		vt_stacks_forget(t->stacks, top);
}

void vmtrace_batch_flush(int last)
{
	if (atomic_load_explicit(&registry, memory_order_acquire))
		round_all(last ? VMTRACE_BATCH_EXIT : 0, request_now());
}

/* ---- fork ---- */

static void at_fork_prepare(void)
{
	pthread_mutex_lock(&round_mu);
}

static void at_fork_parent(void)
{
	pthread_mutex_unlock(&round_mu);
}

static void at_fork_child(void)
{
	pthread_mutex_init(&round_mu, NULL);
	atomic_store(&flusher_state, VT_FLUSHER_NONE);
	atomic_store(&flusher_stop, 0);
	/* the child's next cached event starts its flush thread (batch_key) */
	vmtrace__keyed = NULL;
	for (struct vt_thread *t = atomic_load(&registry); t; t = t->next)
		vt_thread_after_fork(t, t == self);
}
