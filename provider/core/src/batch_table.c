/*
 * batch_table.c: a thread's table of counts and its delivery in batches
 * (batch_table.h says who may touch what).
 */
#include <string.h>
#include <sys/mman.h>

#include "batch_table.h"
#include "primitives.h"

_Atomic uint64_t vmtrace__batch_lost;
static _Atomic uint64_t batch_before, batch_unseen_bytes;

void vmtrace_batch_before(uint64_t objects)
{
	atomic_store_explicit(&batch_before, objects, memory_order_relaxed);
}

uint64_t vt_batch_take_before(void)
{
	return atomic_exchange_explicit(&batch_before, 0, memory_order_relaxed);
}

void vmtrace_batch_unseen_bytes(uint64_t bytes)
{
	atomic_fetch_add_explicit(&batch_unseen_bytes, bytes, memory_order_relaxed);
}

uint64_t vt_batch_take_unseen_bytes(void)
{
	return atomic_exchange_explicit(&batch_unseen_bytes, 0, memory_order_relaxed);
}

struct vt_table *vt_table_new(uint32_t slots)
{
	size_t bytes = sizeof(struct vt_table) + (size_t)slots * (sizeof(struct vt_slot) + sizeof(struct vt_sent));
	struct vt_table *t = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (t == MAP_FAILED)
		return NULL;
	/* mmap'ed memory is zero: every slot unused, nothing sent */
	t->mask = slots - 1;
	t->used = 0;
	t->map_bytes = bytes;
	t->sent = (struct vt_sent *)&t->slot[slots];
	return t;
}

struct vt_slot *vt_table_get(struct vt_table *t, uint64_t k, uint64_t m, uint64_t s, uint64_t st)
{
	uint32_t home = vt_table_hash(k, m, s, st) & t->mask;

	for (uint32_t i = home;; i = (i + 1) & t->mask) {
		struct vt_slot *sl = &t->slot[i];

		if (!atomic_load_explicit(&sl->used, memory_order_relaxed)) {
			if (2 * (t->used + 1) > t->mask + 1)
				return NULL;
			/* a small table grows rather than put a new key off its
			 * home slot, so a few hot keys each take the first probe
			 * (a key one slot on costs a mispredicted branch when keys
			 * come in random order) */
			if (i != home && t->mask + 1 < VT_TABLE_SPREAD_SLOTS)
				return NULL;
			sl->key[0] = k;
			sl->key[1] = m;
			sl->key[2] = s;
			sl->key[3] = st;
			t->used++;
			atomic_store_explicit(&sl->used, 1, memory_order_release);
			return sl;
		}
		if (sl->key[0] == k && sl->key[1] == m && sl->key[2] == s && sl->key[3] == st)
			return sl;
	}
}

void vt_table_free(struct vt_table *t)
{
	if (t)
		munmap(t, t->map_bytes);
}

static void send(struct vt_flush *f, uint32_t flags, uint64_t request)
{
	struct vt_batch_buf *b = f->buf;
	uint64_t bytes = sizeof(b->h) + (uint64_t)b->h.count * sizeof(b->rec[0]);

	if (f->before_send)
		f->before_send(f->ctx);
	b->h.magic = VMTRACE_BATCH_MAGIC;
	b->h.version = VMTRACE_BATCH_VERSION;
	b->h.kind = f->kind;
	b->h.record_size = sizeof(b->rec[0]);
	b->h.flags = flags;
	b->h.round = f->round;
	b->h.lost = atomic_exchange_explicit(&vmtrace__batch_lost, 0, memory_order_relaxed);
	b->h.request = request;
	b->h.before = vt_batch_take_before();
	b->h.unseen_bytes = vt_batch_take_unseen_bytes();
	vmtrace__fire_batch(f->kind, &b->h, bytes);
	b->h.count = 0;
}

void vt_flush_put(struct vt_flush *f, uint64_t klass, uint64_t method, uint64_t site, uint64_t stack,
		  uint64_t count, uint64_t bytes, uint64_t samples)
{
	struct vmtrace_batch_record *r;

	if (!f->deliver)
		return;
	r = &f->buf->rec[f->buf->h.count++];
	*r = (struct vmtrace_batch_record){ klass, method, site, count, bytes, samples, stack };
	if (f->buf->h.count == VMTRACE_BATCH_MAX_RECORDS)
		send(f, 0, 0);
}

void vt_table_flush(struct vt_table *t, struct vt_flush *f)
{
	for (uint32_t i = 0; i <= t->mask; i++) {
		struct vt_slot *sl = &t->slot[i];
		struct vt_sent *sent = &t->sent[i];
		uint64_t c, b, s;

		if (!atomic_load_explicit(&sl->used, memory_order_acquire))
			continue;
		c = atomic_load_explicit(&sl->count, memory_order_relaxed);
		b = atomic_load_explicit(&sl->bytes, memory_order_relaxed);
		s = atomic_load_explicit(&sl->samples, memory_order_relaxed);
		if (s == sent->samples && c == sent->count && b == sent->bytes)
			continue;
		vt_flush_put(f, sl->key[0], sl->key[1], sl->key[2], sl->key[3], c - sent->count, b - sent->bytes,
			     s - sent->samples);
		sent->count = c;
		sent->bytes = b;
		sent->samples = s;
	}
}

void vt_flush_end(struct vt_flush *f, uint32_t flags, uint64_t request)
{
	if (f->deliver && (f->buf->h.count || flags))
		send(f, flags, request);
	f->buf->h.count = 0;
}
