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
 * Pairs. An object freed in the batch that allocated it is marked as a
 * pair (vmtrace/batch.h), found through the buffer's index of addresses:
 * the tracer then counts it, temporary or not, without the hash update,
 * lookup and delete of a tracked address (most objects die young). Every
 * record stays, in order, so the live bytes and their peak are the same.
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
#include "vmtrace_probes.h"
#include "live_batch.h"
#include "primitives.h"

#define LIVE_RECORDS \
	((VMTRACE_BATCH_MAX_BYTES - sizeof(struct vmtrace_batch)) / sizeof(struct vmtrace_live_record))
#define LIVE_INDEX 512 /* slots of a buffer's address index: a power of two, >= 2 * LIVE_RECORDS */
_Static_assert(LIVE_INDEX >= 2 * LIVE_RECORDS && !(LIVE_INDEX & (LIVE_INDEX - 1)), "index too small");

struct live_buf {
	struct live_buf *next;          /* the registry; set once, before publication */
	_Atomic int owned;              /* a live thread holds it */
	_Atomic int lock;
	volatile int busy;              /* the owner is appending or flushing */
	_Atomic uint64_t lost;          /* events a handler could not append */
	struct vmtrace_batch h;
	struct vmtrace_live_record rec[LIVE_RECORDS];
	/* the buffer's allocations by address: record index + 1, 0 = empty
	 * (open addressing; a paired allocation stays, no longer an ALLOC) */
	uint16_t index[LIVE_INDEX];
};
_Static_assert(sizeof(struct vmtrace_batch) + LIVE_RECORDS * sizeof(struct vmtrace_live_record) <=
		       VMTRACE_BATCH_MAX_BYTES, "a live batch fits one BPF read");

static __thread struct live_buf *self __attribute__((tls_model("initial-exec")));
static struct live_buf *_Atomic registry;
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

/* Send what b holds (its lock held); nothing when empty. */
static void deliver(struct live_buf *b)
{
	uint64_t lost = atomic_exchange_explicit(&b->lost, 0, memory_order_relaxed);

	if (!b->h.count && !lost)
		return;
	b->h.magic = VMTRACE_BATCH_MAGIC;
	b->h.version = VMTRACE_BATCH_VERSION;
	b->h.kind = VMTRACE_BATCH_LIVE;
	b->h.record_size = sizeof(struct vmtrace_live_record);
	b->h.lost = lost;
	if (vmtrace__batch_on(VMTRACE_BATCH_LIVE))
		VMTRACE_LIVE_BATCH(&b->h, sizeof(b->h) + b->h.count * sizeof(struct vmtrace_live_record));
	b->h.count = 0;
	memset(b->index, 0, sizeof(b->index));
}

static uint32_t index_slot(uint64_t addr)
{
	return (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> 40) & (LIVE_INDEX - 1);
}

/* The record of the allocation at addr in b, NULL when not in this batch. */
static struct vmtrace_live_record *index_find(struct live_buf *b, uint64_t addr)
{
	for (uint32_t i = index_slot(addr);; i = (i + 1) & (LIVE_INDEX - 1)) {
		struct vmtrace_live_record *r;

		if (!b->index[i])
			return NULL;
		r = &b->rec[b->index[i] - 1];
		if (r->op == VMTRACE_LIVE_ALLOC && r->addr == addr)
			return r;
	}
}

static void index_add(struct live_buf *b, uint64_t addr, uint32_t rec)
{
	uint32_t i = index_slot(addr);

	while (b->index[i])
		i = (i + 1) & (LIVE_INDEX - 1);
	b->index[i] = (uint16_t)(rec + 1);
}

static void thread_exit(void *arg)
{
	struct live_buf *b = arg;

	b->busy = 1; /* its handlers from here on count as lost */
	atomic_signal_fence(memory_order_seq_cst);
	lock(b);
	deliver(b);
	self = NULL;
	b->busy = 0;
	atomic_store_explicit(&b->owned, 0, memory_order_release);
	unlock(b);
}

static void at_fork_child(void)
{
	for (struct live_buf *b = atomic_load(&registry); b; b = b->next) {
		atomic_store(&b->lock, 0);
		b->h.count = 0;
		memset(b->index, 0, sizeof(b->index));
		b->busy = 0;
		atomic_store(&b->lost, 0);
		if (b != self)
			atomic_store(&b->owned, 0);
	}
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
	struct vmtrace_live_record *r;

	if (VMTRACE_UNLIKELY(!b) && !(b = attach()))
		return; /* no memory for a buffer: nothing to count it in either */
	if (VMTRACE_UNLIKELY(b->busy)) {
		atomic_fetch_add_explicit(&b->lost, 1, memory_order_relaxed);
		return;
	}
	b->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	lock(b);
	if (b->h.count == LIVE_RECORDS)
		deliver(b);
	if (op == VMTRACE_LIVE_FREE && (r = index_find(b, addr))) {
		/* allocated in this batch: a pair the tracer need not track */
		struct vmtrace_live_record *a = r;

		a->op = VMTRACE_LIVE_PAIR_ALLOC;
		r = &b->rec[b->h.count++];
		*r = (struct vmtrace_live_record){ a->time_ns, a->klass, a->method, a->site, a->size, a->weight,
						   vmtrace__now_ns(), VMTRACE_LIVE_PAIR_FREE, 0 };
	} else {
		if (op == VMTRACE_LIVE_ALLOC)
			index_add(b, addr, b->h.count);
		r = &b->rec[b->h.count++];
		*r = (struct vmtrace_live_record){ addr, klass, method, site, size, weight, vmtrace__now_ns(), op,
						   0 };
	}
	unlock(b);
	atomic_signal_fence(memory_order_seq_cst);
	b->busy = 0;
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
	vmtrace__live_flush_all();
}

void vmtrace__live_flush_all(void)
{
	for (struct live_buf *b = atomic_load_explicit(&registry, memory_order_acquire); b; b = b->next) {
		if (!atomic_load_explicit(&b->owned, memory_order_acquire))
			continue;
		lock(b);
		deliver(b);
		unlock(b);
	}
}
