/*
 * live_batch.c: the addresses of the live heap, batched (live__batch,
 * docs/live.md).
 *
 * While a tracer holds live__batch's semaphore, each allocation and free
 * that carries an address is appended to its thread's buffer: one record,
 * no trap. A buffer goes to the tracer through one live__batch probe when
 * it is full, when its thread exits or starts a collection, and in every
 * flush round of batch.c (so a consumer's request for everything also
 * brings the addresses of idle threads). Records keep their thread's order;
 * between threads, a tracer may see a free before the allocation it ends
 * when another thread allocated it and has not delivered yet.
 *
 * Young objects. Each thread holds its allocations in a table of young
 * objects (live_young.c) and sends no record for them: their bytes go into
 * the buffer's running change of live bytes, sent as one NET record (the
 * change, its highest point and when) before any record that changes the
 * live bytes itself, and at each delivery. A free that finds its object
 * there, in its own thread's table or another's, is a held object's free
 * (HELD_FREE, with the allocation's key, size, weight and time, its bytes in
 * the NET of the buffer of the thread that allocated it, so the two stay in
 * order); the tracer counts it as temporary or not, with no hash operation.
 * Once the tracer's temp_ns is known (vmtrace_live), the thread decides that
 * itself: an older object's free sends nothing, a temporary's is summed by
 * key and sent as one KEY record at the buffer's delivery, so a young
 * generation that dies young costs no record an object. What outlives its stay is handed over (TRACK) and tracked by
 * the tracer as before: the oldest when the table is full, in every round
 * whatever is older than HOLD_NS, and everything when a consumer asks for
 * everything, when the thread exits and when the process does. Every
 * record stays in order, so the live bytes and their peak are the same.
 *
 * Locking. The owner and a round may both flush a buffer, so it has a lock,
 * taken with one exchange (uncontended but for rounds, which hold it for
 * one delivery; the owner waits for them). The owner marks itself busy
 * first: a signal handler that interrupts its thread while busy must not
 * wait for a lock its own thread holds, so its event is counted as lost and
 * reaches the tracer in the next batch's `lost`.
 *
 * Memory: buffers are mmap'ed (the host's allocator may be what is being
 * traced) and never freed; a thread that exits leaves its buffer to the
 * next new thread, as batch.c does with its tables. After fork the child
 * keeps its own thread's buffer, emptied (those events are the parent's).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "vmtrace/batch.h"
#include "batch_table.h"
#include "live_batch.h"
#include "live_words.h"
#include "live_young.h"
#include "intern.h"
#include "primitives.h"

#define LIVE_RECORDS \
	((VMTRACE_BATCH_MAX_BYTES - sizeof(struct vmtrace_batch)) / sizeof(struct vmtrace_live_record))
#define HOLD_NS 200000000ull /* a round hands over what is older: top --live sees it */
#define AGES_EVERY_NS 1000000000ull

/* Held objects freed young, summed by key until the buffer is delivered
 * (direct-mapped by key): one KEY record (count in weight, bytes in
 * time_ns) instead of a HELD_FREE record each, when the tracer's temp_ns
 * is known. */
#define TEMP_WAYS 64
struct temp_way {
	uint64_t klass, method, site;
	uint64_t count, bytes;          /* count 0: empty */
};

struct live_buf {
	struct live_buf *next;          /* the registry; set once, before publication */
	_Atomic int owned;              /* a live thread holds it */
	_Atomic int lock;
	volatile int busy;              /* the owner is appending or flushing */
	_Atomic uint64_t lost;          /* events a handler could not append */
	uint64_t clock_ticks, clock_ns; /* live_now()'s last reading; the owner's */
	/* held objects' bytes since the last record that changes the live
	 * bytes: the running change, its highest (>= 0) and when (NET) */
	int64_t net, rise;
	uint64_t rise_ns;
	struct temp_way temps[TEMP_WAYS];
	struct vmtrace_batch h;
	struct vmtrace_live_record rec[LIVE_RECORDS];
	struct live_young young;        /* allocations not yet sent to be tracked */
	struct vt_words *words;         /* objects with a word (live_words.c); set once, under the lock, atomically */
};
_Static_assert(sizeof(struct vmtrace_batch) + LIVE_RECORDS * sizeof(struct vmtrace_live_record) <=
		       VMTRACE_BATCH_MAX_BYTES, "a live batch fits one BPF read");

static __thread struct live_buf *self __attribute__((tls_model("initial-exec")));
static struct live_buf *_Atomic registry;
static struct live_buf ages_buf;        /* the rounds' age snapshots */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static int have_exit_key;

static int try_lock(struct live_buf *b)
{
	return !atomic_exchange_explicit(&b->lock, 1, memory_order_acquire);
}

static void lock(struct live_buf *b)
{
	while (!try_lock(b))
		sched_yield();
}

static void unlock(struct live_buf *b)
{
	atomic_store_explicit(&b->lock, 0, memory_order_release);
}

/* The held objects' change of live bytes so far, as one NET record, before
 * a record that changes them too; append() keeps slots for it. */
static void put_net(struct live_buf *b)
{
	if (!b->net && !b->rise)
		return;
	b->rec[b->h.count++] = (struct vmtrace_live_record){
		.addr = (uint64_t)b->net, .size = (uint64_t)b->rise, .time_ns = b->rise_ns, .op = VMTRACE_LIVE_NET
	};
	b->net = b->rise = 0;
}

/* The temporaries summed in way w as a KEY record (room for it left). */
static void put_temps(struct live_buf *b, struct temp_way *w)
{
	b->rec[b->h.count++] = (struct vmtrace_live_record){
		.klass = w->klass, .method = w->method, .site = w->site, .weight = w->count,
		.time_ns = w->bytes, .op = VMTRACE_LIVE_KEY
	};
	w->count = w->bytes = 0;
}

/* Send what b holds (its lock held), its summed temporaries first, in as
 * many batches as they take; nothing when empty. */
static void deliver(struct live_buf *b)
{
	int i = 0;

	for (;;) {
		uint64_t lost = atomic_exchange_explicit(&b->lost, 0, memory_order_relaxed);

		for (; i < TEMP_WAYS && b->h.count < LIVE_RECORDS - 1; i++)
			if (b->temps[i].count)
				put_temps(b, &b->temps[i]);
		put_net(b);
		if (!b->h.count && !lost)
			return;
		b->h.magic = VMTRACE_BATCH_MAGIC;
		b->h.version = VMTRACE_BATCH_VERSION;
		b->h.kind = VMTRACE_BATCH_LIVE;
		b->h.record_size = sizeof(struct vmtrace_live_record);
		b->h.lost = lost;
		b->h.before = vt_batch_take_before();
		b->h.unseen_bytes = vt_batch_take_unseen_bytes();
		vmtrace__fire_batch(VMTRACE_BATCH_LIVE, &b->h,
				    sizeof(b->h) + b->h.count * sizeof(struct vmtrace_live_record));
		b->h.count = 0;
		if (i == TEMP_WAYS)
			return;
	}
}

/* The time of an event: CLOCK_MONOTONIC read again only when the CPU's
 * time-stamp counter moved CLOCK_STEP_TICKS since the last reading (a
 * counter read costs a third of a clock read), so a time is at most that
 * many ticks early, and a thread that waited reads the clock again. The
 * owner's, while busy. */
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define CLOCK_STEP_TICKS (1u << 14) /* about 5 us at 3 GHz */
static uint64_t live_now(struct live_buf *b)
{
	uint64_t ticks = __rdtsc();

	if (ticks - b->clock_ticks >= CLOCK_STEP_TICKS) {
		b->clock_ticks = ticks;
		b->clock_ns = vmtrace__now_ns();
	}
	return b->clock_ns;
}
#else
static uint64_t live_now(struct live_buf *b)
{
	(void)b;
	return vmtrace__now_ns();
}
#endif

/* The time of an event. While a consumer's session is in force (record
 * --live writes one), the start of the words' tick (live_words.c), which
 * the flush thread moves: a load, where even a counter read costs more
 * than the rest of a held object's event; the temporaries' threshold and
 * the ages are then known to the tick, as for objects with a word. Else
 * live_now(). */
static uint64_t event_time(struct live_buf *b)
{
	if (vt_words_session())
		return VMTRACE__LOAD(vmtrace_live.tick) << VMTRACE__TICK_SHIFT;
	return live_now(b);
}

/* Append one record to b (its lock held), delivering a full buffer first. */
static void append(struct live_buf *b, uint32_t op, uint64_t addr, const struct live_young_obj *o,
		   uint64_t time_ns)
{
	/* room for a NET, the record, and a NET at delivery */
	if (b->h.count >= LIVE_RECORDS - 2)
		deliver(b);
	if (op != VMTRACE_LIVE_HELD_FREE)
		put_net(b);
	b->rec[b->h.count++] = (struct vmtrace_live_record){ addr,    o->klass,  o->method, o->site, o->size,
							     o->weight, time_ns, op,       0 };
}

/* Append a record made elsewhere (live_words.c) to b, its lock held. */
static void put_record(void *ctx, const struct vmtrace_live_record *r)
{
	struct live_buf *b = ctx;

	if (b->h.count >= LIVE_RECORDS - 2)
		deliver(b);
	put_net(b);
	b->rec[b->h.count++] = *r;
}

/* The free at now of held object o of b (its lock held): its bytes go out
 * of the NET; while the tracer's temp_ns is known (a consumer wrote it,
 * vmtrace_live) the free is summed as temporary by key when o was younger
 * (the tracer counts nothing else of it), else it is a HELD_FREE record. */
static void held_free(struct live_buf *b, const struct live_young_obj *o, uint64_t now);

/* A held object's allocation (bytes > 0) or free (< 0) at time: no record
 * but the NET one. */
static void held_change(struct live_buf *b, int64_t bytes, uint64_t time)
{
	b->net += bytes;
	if (b->net > b->rise) {
		b->rise = b->net;
		b->rise_ns = time;
	}
}

static void held_free(struct live_buf *b, const struct live_young_obj *o, uint64_t now)
{
	uint64_t temp_ns = VMTRACE__LOAD(vmtrace_live.temp_ns);
	struct temp_way *w;

	held_change(b, -(int64_t)(o->size * o->weight), now);
	if (!temp_ns) {
		append(b, VMTRACE_LIVE_HELD_FREE, o->time_ns, o, now);
		return;
	}
	if (now - o->time_ns >= temp_ns)
		return;
	w = &b->temps[vt_mix64(o->klass ^ o->method * 31 ^ o->site * 961) & (TEMP_WAYS - 1)];
	if (w->count && (w->klass != o->klass || w->method != o->method || w->site != o->site)) {
		if (b->h.count >= LIVE_RECORDS - 2)
			deliver(b);
		if (w->count)
			put_temps(b, w);
	}
	w->klass = o->klass;
	w->method = o->method;
	w->site = o->site;
	w->count += o->weight;
	w->bytes += o->size * o->weight;
}

/* Hand over to the tracer what b's thread holds that was allocated before
 * born_before (UINT64_MAX: all of it), then deliver; b's lock held. */
static void hand_over(struct live_buf *b, uint64_t born_before)
{
	struct live_young_obj o;

	while (vmtrace__young_pop(&b->young, born_before, &o))
		append(b, VMTRACE_LIVE_TRACK, o.addr, &o, o.time_ns);
	deliver(b);
}

/* A free of an object another thread allocated and still holds: its pair's
 * free goes into that thread's buffer, after the allocation. 1 if found. */
static int free_elsewhere(struct live_buf *self_buf, uint64_t addr, uint64_t now)
{
	for (struct live_buf *b = atomic_load_explicit(&registry, memory_order_acquire); b; b = b->next) {
		struct live_young_obj o;
		int found;

		if (b == self_buf || !atomic_load_explicit(&b->owned, memory_order_acquire))
			continue;
		lock(b);
		found = vmtrace__young_take(&b->young, addr, &o);
		if (found)
			held_free(b, &o, now);
		unlock(b);
		if (found)
			return 1;
	}
	return 0;
}

static void thread_exit(void *arg)
{
	struct live_buf *b = arg;

	b->busy = 1; /* its handlers from here on count as lost */
	atomic_signal_fence(memory_order_seq_cst);
	lock(b);
	hand_over(b, UINT64_MAX);
	self = NULL;
	vmtrace__live_self = NULL;
	b->busy = 0;
	atomic_store_explicit(&b->owned, 0, memory_order_release);
	unlock(b);
}

static void at_fork_child(void)
{
	for (struct live_buf *b = atomic_load(&registry); b; b = b->next) {
		atomic_store(&b->lock, 0);
		b->h.count = 0;
		vmtrace__young_clear(&b->young);
		if (b->words)
			b->words->pub.session = 0; /* the parent's: started anew when used */
		b->busy = 0;
		atomic_store(&b->lost, 0);
		if (b != self)
			atomic_store(&b->owned, 0);
	}
	atomic_store(&ages_buf.lock, 0);
	ages_buf.h.count = 0;
	vt_words_at_fork_child();
}

static void init_once(void)
{
	have_exit_key = pthread_key_create(&exit_key, thread_exit) == 0;
	pthread_atfork(NULL, NULL, at_fork_child);
}

static struct live_buf *attach(void)
{
	struct live_buf *b;

	pthread_once(&once, init_once);
	for (b = atomic_load_explicit(&registry, memory_order_acquire); b; b = b->next) {
		int want = 0;

		if (atomic_compare_exchange_strong(&b->owned, &want, 1))
			break;
	}
	if (!b) {
		b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (b == MAP_FAILED)
			return NULL;
		atomic_store_explicit(&b->owned, 1, memory_order_relaxed);
		b->next = atomic_load_explicit(&registry, memory_order_relaxed);
		while (!atomic_compare_exchange_weak_explicit(&registry, &b->next, b, memory_order_release,
							      memory_order_relaxed))
			;
	}
	self = b;
	if (have_exit_key)
		pthread_setspecific(exit_key, b);
	return b;
}

void vmtrace__live_add(uint32_t op, uint64_t addr, uint64_t klass, uint64_t method, uint64_t site,
		       uint64_t size, uint64_t weight)
{
	struct live_buf *b = self;
	struct live_young_obj o = { addr, klass, method, site, size, weight, 0 }, old;

	if (VMTRACE_UNLIKELY(!b) && !(b = attach()))
		return; /* no memory for a buffer: nothing to count it in either */
	if (VMTRACE_UNLIKELY(b->busy)) {
		atomic_fetch_add_explicit(&b->lost, 1, memory_order_relaxed);
		return;
	}
	b->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	o.time_ns = event_time(b);
	lock(b);
	if (op == VMTRACE_LIVE_ALLOC) {
		int held = vmtrace__young_hold(&b->young, &o, &old);

		if (held > 0)
			append(b, VMTRACE_LIVE_TRACK, old.addr, &old, old.time_ns);
		if (held < 0)
			append(b, VMTRACE_LIVE_ALLOC, addr, &o, o.time_ns);
		else
			held_change(b, (int64_t)(size * weight), o.time_ns);
		unlock(b);
	} else if (vmtrace__young_take(&b->young, addr, &old)) {
		held_free(b, &old, o.time_ns);
		unlock(b);
	} else {
		/* never two locks at once: another thread may be looking in ours */
		unlock(b);
		if (!free_elsewhere(b, addr, o.time_ns)) {
			lock(b);
			append(b, VMTRACE_LIVE_FREE, addr, &o, o.time_ns);
			unlock(b);
		}
	}
	atomic_signal_fence(memory_order_seq_cst);
	b->busy = 0;
}

/* ---- objects with a word (live_words.c) ---- */

struct vmtrace__live_thread *vmtrace__live_words(void)
{
	struct live_buf *b = self;
	uint64_t session = vt_words_session();
	struct vt_words *w;

	if (!session || (!b && !(b = attach())))
		return NULL;
	w = b->words;
	if (w && w->pub.session == session)
		return vmtrace__live_self = &w->pub;
	if (b->busy)
		return NULL; /* a handler inside its thread's work: the address path */
	b->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	lock(b);
	if (!b->words) /* release: the flush thread peeks before it locks */
		__atomic_store_n(&b->words, vt_words_new(), __ATOMIC_RELEASE);
	w = b->words;
	if (w && w->pub.session != session)
		vt_words_reset(w, session);
	unlock(b);
	atomic_signal_fence(memory_order_seq_cst);
	b->busy = 0;
	return w ? vmtrace__live_self = &w->pub : NULL;
}

void vmtrace__live_words_old(uint64_t now, uint64_t born, uint32_t id, uint64_t size)
{
	struct live_buf *b = self;

	if (!b || !b->words)
		return;
	if (b->busy) {
		atomic_fetch_add_explicit(&b->lost, 1, memory_order_relaxed);
		return;
	}
	b->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	lock(b);
	vt_words_old_death(b->words, now, born, id, size);
	unlock(b);
	atomic_signal_fence(memory_order_seq_cst);
	b->busy = 0;
}

void vmtrace__live_tick(uint64_t now_ns)
{
	static uint64_t moved_at; /* the flush thread's */
	uint64_t tick = vt_words_tick_of(now_ns);

	/* the ring's slots are free again before the clock reaches them */
	if (tick >= moved_at + VMTRACE__AGE_SLOTS / 8) {
		for (struct live_buf *b = atomic_load_explicit(&registry, memory_order_acquire); b; b = b->next) {
			lock(b);
			if (b->words)
				vt_words_move(b->words, tick);
			unlock(b);
		}
		moved_at = tick;
	}
	vt_words_tick_to(tick);
}

/* b's objects with a word in a round: what their keys gained, their live
 * bytes, and their ages into hist (NULL: not this round); b's lock held. */
static void words_round(struct live_buf *b, int64_t *hist)
{
	uint64_t session = __atomic_load_n(&vmtrace_live.seen, __ATOMIC_ACQUIRE);
	uint64_t tick = VMTRACE__LOAD(vmtrace_live.tick);
	struct vt_words *w = b->words;

	if (!w || !session || session != VMTRACE__LOAD(vmtrace_live.session))
		return;
	if (w->pub.session != session)
		vt_words_reset(w, session); /* an idle thread's counts of an earlier session */
	vt_words_move(w, tick);
	vt_words_flush(w, put_record, b);
	if (hist)
		vt_words_ages(w, tick, hist);
}

/* The ages of every object with a word, as one snapshot. */
static void send_ages(const int64_t *hist)
{
	struct vmtrace_live_record r = { .op = VMTRACE_LIVE_AGES, .weight = 1 };

	lock(&ages_buf);
	for (uint32_t i = 0; i < VT_WORDS_AGE_BUCKETS; i++) {
		if (hist[i] <= 0 && !(r.weight && i == VT_WORDS_AGE_BUCKETS - 1))
			continue;
		r.addr = i;
		r.size = hist[i] > 0 ? (uint64_t)hist[i] : 0;
		put_record(&ages_buf, &r);
		r.weight = 0;
	}
	deliver(&ages_buf);
	unlock(&ages_buf);
}

void vmtrace__live_flush_self(void)
{
	struct live_buf *b = self;

	if (!b || b->busy)
		return;
	b->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	lock(b);
	deliver(b);
	unlock(b);
	atomic_signal_fence(memory_order_seq_cst);
	b->busy = 0;
}

/* The process exits: what every thread still holds. */
__attribute__((destructor)) static void live_at_exit(void)
{
	vmtrace__live_round(1, 0);
}

void vmtrace__live_round(int exiting, uint64_t request)
{
	/* batch.c's rounds run one at a time; the exit's (live_at_exit, a
	 * destructor) may run beside one, and hands everything over, so only
	 * the others write these (atomics, for that reader) */
	static uint64_t last_request, last_ages;
	uint64_t born_before = UINT64_MAX, now = vmtrace__now_ns();
	int64_t hist[VT_WORDS_AGE_BUCKETS] = { 0 };
	/* ages on each request and at exit, else once a second: a snapshot
	 * reads each thread's whole ring */
	uint64_t seen = VMTRACE__LOAD(last_request);
	int ages = exiting || request != seen || now - VMTRACE__LOAD(last_ages) >= AGES_EVERY_NS, words = 0;

	if (!exiting) {
		if (request == seen)
			born_before = now - HOLD_NS;
		VMTRACE__STORE(last_request, request);
	}
	for (struct live_buf *b = atomic_load_explicit(&registry, memory_order_acquire); b; b = b->next) {
		int owned = atomic_load_explicit(&b->owned, memory_order_acquire);
		int has_words = __atomic_load_n(&b->words, __ATOMIC_ACQUIRE) != NULL;

		if (!owned && !has_words)
			continue;
		words |= has_words;
		lock(b);
		words_round(b, ages ? hist : NULL);
		if (owned)
			hand_over(b, born_before);
		else
			deliver(b);
		unlock(b);
	}
	if (ages && words && vt_words_on()) {
		VMTRACE__STORE(last_ages, now);
		send_ages(hist);
	}
}
