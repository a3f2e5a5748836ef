/*
 * batch_table.c: a thread's table of counts and its delivery in batches
 * (batch_table.h says who may touch what).
 */
#include <string.h>
#include <sys/mman.h>

#include "batch_table.h"
#include "primitives.h"

_Atomic uint64_t vmtrace__batch_lost;

struct vt_table *vt_table_new(uint32_t slots)
{
	size_t bytes = sizeof(struct vt_table) + (size_t)slots * sizeof(struct vt_slot);
	struct vt_table *t = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (t == MAP_FAILED)
		return NULL;
	/* mmap'ed memory is zero: every slot unused */
	t->mask = slots - 1;
	t->used = 0;
	t->map_bytes = bytes;
	return t;
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

	b->h.magic = VMTRACE_BATCH_MAGIC;
	b->h.version = VMTRACE_BATCH_VERSION;
	b->h.kind = f->kind;
	b->h.record_size = sizeof(b->rec[0]);
	b->h.flags = flags;
	b->h.round = f->round;
	b->h.lost = atomic_exchange_explicit(&vmtrace__batch_lost, 0, memory_order_relaxed);
	b->h.request = request;
	vmtrace__fire_batch(f->kind, &b->h, bytes);
	b->h.count = 0;
}

void vt_table_flush(struct vt_table *t, struct vt_flush *f)
{
	for (uint32_t i = 0; i <= t->mask; i++) {
		struct vt_slot *sl = &t->slot[i];
		uint64_t c, b, s;

		if (!atomic_load_explicit(&sl->used, memory_order_acquire))
			continue;
		c = atomic_load_explicit(&sl->count, memory_order_relaxed);
		b = atomic_load_explicit(&sl->bytes, memory_order_relaxed);
		s = atomic_load_explicit(&sl->samples, memory_order_relaxed);
		if (s == sl->sent[2] && c == sl->sent[0] && b == sl->sent[1])
			continue;
		if (f->deliver) {
			struct vmtrace_batch_record *r = &f->buf->rec[f->buf->h.count++];

			r->klass = sl->key[0];
			r->method = sl->key[1];
			r->site = sl->key[2];
			r->stack = sl->key[3];
			r->count = c - sl->sent[0];
			r->bytes = b - sl->sent[1];
			r->samples = s - sl->sent[2];
			if (f->buf->h.count == VMTRACE_BATCH_MAX_RECORDS)
				send(f, 0, 0);
		}
		sl->sent[0] = c;
		sl->sent[1] = b;
		sl->sent[2] = s;
	}
}

void vt_flush_end(struct vt_flush *f, uint32_t flags, uint64_t request)
{
	if (f->deliver && (f->buf->h.count || flags))
		send(f, flags, request);
	f->buf->h.count = 0;
}
