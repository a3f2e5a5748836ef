/*
 * stacks.c: walking the host's VM frames and interning the stacks of a
 * thread (stacks.h; docs/stacks.md says why the walk happens here).
 *
 * Batched counting fires no probe per allocation, so no BPF program runs
 * where the stack is: the walk must happen in the process. It reads the
 * chain the host described (vmtrace_frames_describe), innermost frame
 * first, from the pointer the thread registered (vmtrace_frames_thread):
 * two or three loads per frame, and a multiply-xor hash per frame names
 * the stack. The id joins (class, method, site) in the thread's count
 * table; a stack's frames are sent once per consumer (vmtrace_stacks_epoch
 * says which), in STACK batches ahead of the counts that use them.
 *
 * The chain is the host's own memory, read without a fault guard: the
 * host promises that it is whole whenever it allocates (frames.h). A
 * chain longer than VMTRACE_STACK_MAX_DEPTH (or a cycle) is cut there and
 * the stack flagged VMTRACE_STACK_CUT, which the consumer reports as lost.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "batch_table.h"
#include "primitives.h"
#include "stacks.h"

VMTRACE_HIDDEN volatile struct vmtrace_frames_desc vmtrace__frames_store;
extern volatile struct vmtrace_frames_desc vmtrace_frames __attribute__((alias("vmtrace__frames_store")));
VMTRACE_HIDDEN volatile uint64_t vmtrace__stacks_epoch_store;
extern volatile uint64_t vmtrace_stacks_epoch __attribute__((alias("vmtrace__stacks_epoch_store")));

__thread void *const *vmtrace__stacks_root __attribute__((tls_model("initial-exec")));
__thread int vmtrace__stacks_kept __attribute__((tls_model("initial-exec")));

#define FRAME_FIELD_MAX 4096

static int offset_ok(int32_t off, int optional)
{
	return (optional && off == VMTRACE_FRAME_NONE) || (off >= 0 && off <= FRAME_FIELD_MAX);
}

int vmtrace_frames_describe(const struct vmtrace_frame_layout *l)
{
	if (!l || !offset_ok(l->caller, 0) || !offset_ok(l->name, 0) || !offset_ok(l->file, 1) ||
	    !offset_ok(l->line, 1))
		return -EINVAL;
	vmtrace__frames_store.layout.caller = l->caller;
	vmtrace__frames_store.layout.name = l->name;
	vmtrace__frames_store.layout.file = l->file;
	vmtrace__frames_store.layout.line = l->line;
	vmtrace__frames_store.version = VMTRACE_FRAMES_VERSION;
	vmtrace__frames_store.max_depth = VMTRACE_STACK_MAX_DEPTH;
	__atomic_store_n(&vmtrace__frames_store.magic, VMTRACE_FRAMES_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

VMTRACE_HIDDEN int32_t vmtrace__frames_hash_off = VMTRACE_FRAME_NONE;

int vmtrace_frames_hashed(int32_t offset)
{
	if (!offset_ok(offset, 0))
		return -EINVAL;
	vmtrace__frames_hash_off = offset;
	return 0;
}

void vmtrace_frames_thread(void *const *current)
{
	vmtrace__stacks_root = current;
	vmtrace__stacks_kept = 0;
}

void vmtrace_frames_thread_kept(void *const *current)
{
	vmtrace__stacks_root = current;
	vmtrace__stacks_kept = 1;
}

void vt_stacks_forget(struct vt_stacks *s, const void *top)
{
	uint32_t m = (uint32_t)((uintptr_t)top >> 4) & (VT_STACKS_MEMO - 1);

	if (s->memo[m].top == top)
		s->memo[m].top = NULL;
}

static uint64_t *known_alloc(uint32_t slots)
{
	void *p = mmap(NULL, slots * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Forget every id sent: their frames are sent again. */
static void known_clear(struct vt_stacks *s)
{
	memset(s->known, 0, (s->known_mask + 1) * sizeof(uint64_t));
	s->nknown = 0;
	s->gen = s->gen + 1 ? s->gen + 1 : 1;
}

/* Twice the slots, when there is memory and room under the bound. */
static void known_grow(struct vt_stacks *s)
{
	uint32_t slots = 2 * (s->known_mask + 1), old_slots = s->known_mask + 1;
	uint64_t *k = slots <= VT_STACKS_KNOWN_MAX ? known_alloc(slots) : NULL, *old = s->known;

	if (!k) {
		known_clear(s);
		return;
	}
	s->known = k;
	s->known_mask = slots - 1;
	for (uint32_t j = 0; j < old_slots; j++)
		if (old[j])
			k[vt_known_slot(s, old[j])] = old[j];
	munmap(old, old_slots * sizeof(uint64_t));
}

/* Is id in the known set? Inserted when not. */
static int known_or_add(struct vt_stacks *s, uint64_t id)
{
	uint32_t i = vt_known_slot(s, id);

	if (s->known[i])
		return 1;
	if (2 * (s->nknown + 1) > s->known_mask + 1) {
		known_grow(s);
		i = vt_known_slot(s, id);
	}
	s->known[i] = id;
	s->nknown++;
	return 0;
}

/* what this thread last announced (vt_stacks_announce) */
static __thread struct {
	int done;
	uint64_t epoch;
	void *const *root;
} announced __attribute__((tls_model("initial-exec")));

void vt_stacks_announce(void)
{
	uint64_t epoch = __atomic_load_n(&vmtrace__stacks_epoch_store, __ATOMIC_RELAXED);
	/* NULL until the frames are described and the thread's pointer given:
	 * the consumer then knows the thread has no VM stack yet */
	void *const *root = vt_stacks_ready() ? vmtrace__stacks_root : NULL;

	if (announced.done && announced.epoch == epoch && announced.root == root)
		return;
	announced.done = 1;
	announced.epoch = epoch;
	announced.root = root;
	vmtrace__fire_stacks_armed(VMTRACE_STACK_MAX_DEPTH, (const void *)root,
				   (const void *)&vmtrace__frames_store);
}

uint64_t vt_stacks_take(struct vt_stacks *s, int *must_flush)
{
	uint64_t id, epoch, host;
	uint32_t depth, flags, n;

	*must_flush = 0;
	if (!s) {
		if (!(id = vt_stacks_host_id()))
			vt_stacks_walk(NULL, &id, &flags);
		return id;
	}
	if (!*vmtrace__stacks_root)
		return 0;
	/* the frames are walked to be sent; the host's hash names them if it keeps one */
	depth = vt_stacks_walk(s->walk, &id, &flags);
	if ((host = vt_stacks_host_id()))
		id = host;
	epoch = __atomic_load_n(&vmtrace__stacks_epoch_store, __ATOMIC_RELAXED);
	if (VMTRACE_UNLIKELY(epoch != s->epoch)) {
		known_clear(s);
		s->epoch = epoch;
	}
	n = atomic_load_explicit(&s->npend, memory_order_relaxed);
	if (n + 1 + depth > VT_STACKS_PEND) {
		*must_flush = 1;
		return 0;
	}
	if (known_or_add(s, id))
		return id;
	struct vmtrace_batch_stack_head *head = (void *)&s->pend[n];
	head->id = id;
	head->depth = depth;
	head->flags = flags;
	head->zero = 0;
	memcpy(&s->pend[n + 1], s->walk, depth * sizeof(s->walk[0]));
	atomic_store_explicit(&s->npend, n + 1 + depth, memory_order_release);
	return id;
}

/* what a batch buffer holds after its header */
#define STACK_RECS (sizeof(((struct vt_batch_buf *)0)->rec) / (sizeof(struct vmtrace_batch_frame)))

static void send(struct vt_batch_buf *buf, const struct vmtrace_batch_frame *recs, uint32_t n,
		 uint32_t round)
{
	struct vmtrace_batch *h = &buf->h;

	h->magic = VMTRACE_BATCH_MAGIC;
	h->version = VMTRACE_BATCH_VERSION;
	h->kind = VMTRACE_BATCH_STACK;
	h->record_size = sizeof(struct vmtrace_batch_frame);
	h->count = n;
	h->flags = 0;
	h->round = round;
	h->lost = 0;
	h->request = 0;
	h->before = h->unseen_bytes = 0; /* the counts' batch after it carries those */
	memcpy(h + 1, recs, n * sizeof(*recs));
	vmtrace__fire_batch(VMTRACE_BATCH_ALLOC, h, sizeof(*h) + (uint64_t)n * sizeof(*recs));
	h->count = 0;
}

/* Records [i, end) of recs, whole stacks to a batch, so none is split. */
static void send_range(struct vt_batch_buf *buf, const struct vmtrace_batch_frame *recs, uint32_t i,
		       uint32_t end, uint32_t round)
{
	_Static_assert(STACK_RECS >= 1 + VMTRACE_STACK_MAX_DEPTH, "a whole stack fits one batch");
	while (i < end) {
		uint32_t n = 0;

		while (i + n < end) {
			const struct vmtrace_batch_stack_head *hd = (const void *)&recs[i + n];

			if (n + 1 + hd->depth > STACK_RECS)
				break;
			n += 1 + hd->depth;
		}
		send(buf, &recs[i], n, round);
		i += n;
	}
}

void vt_stacks_flush_sealed(struct vt_stacks *s, struct vt_batch_buf *buf, uint32_t round, int deliver)
{
	if (deliver)
		send_range(buf, s->sealed, s->sealed_from, s->sealed_end, round);
	s->sealed_from = s->sealed_end = 0;
}

void vt_stacks_flush(struct vt_stacks *s, struct vt_batch_buf *buf, uint32_t round, int deliver)
{
	uint32_t end = atomic_load_explicit(&s->npend, memory_order_acquire);

	/* the sealed half holds the older stacks */
	vt_stacks_flush_sealed(s, buf, round, deliver);
	if (deliver)
		send_range(buf, s->pend, s->sent, end, round);
	s->sent = end;
}

int vt_stacks_seal(struct vt_stacks *s)
{
	struct vmtrace_batch_frame *full = s->pend;

	if (s->sealed_from != s->sealed_end)
		return 0;
	s->sealed_from = s->sent;
	s->sealed_end = atomic_load_explicit(&s->npend, memory_order_relaxed);
	s->pend = s->sealed;
	s->sealed = full;
	s->sent = 0;
	atomic_store_explicit(&s->npend, 0, memory_order_relaxed);
	return 1;
}

void vt_stacks_rewind(struct vt_stacks *s)
{
	if (s->sent == atomic_load_explicit(&s->npend, memory_order_relaxed)) {
		s->sent = 0;
		atomic_store_explicit(&s->npend, 0, memory_order_relaxed);
	}
}

struct vt_stacks *vt_stacks_new(void)
{
	struct vt_stacks *s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (s == MAP_FAILED)
		return NULL;
	s->known = known_alloc(VT_STACKS_KNOWN_MIN);
	if (!s->known) {
		munmap(s, sizeof(*s));
		return NULL;
	}
	s->known_mask = VT_STACKS_KNOWN_MIN - 1;
	s->gen = 1;
	s->pend = s->half[0];
	s->sealed = s->half[1];
	return s;
}

void vt_stacks_free(struct vt_stacks *s)
{
	if (s) {
		munmap(s->known, (s->known_mask + 1) * sizeof(uint64_t));
		munmap(s, sizeof(*s));
	}
}
