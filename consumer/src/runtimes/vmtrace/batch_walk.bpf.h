/* SPDX-License-Identifier: GPL-2.0 */
/*
 * batch_walk.bpf.h: alloc__batch and free__batch in vmtrace.bpf.c, the
 * batched path's reader (vmtrace/batch.h, docs/architecture.md). A batch is
 * copied in one read into a per-CPU scratch buffer, checked (magic, version,
 * kind, record size), and each record added in bpf_loop to the same maps
 * the per-event programs count into; a STACK batch brings the frames of new
 * stacks. An unreadable or malformed batch, a full map, the provider's own
 * losses are counted in Lost.
 */
#ifndef VT_BATCH_WALK_BPF_H
#define VT_BATCH_WALK_BPF_H

struct batch_walk {
	struct vt_batch_buf *buf;
	__u32 record_size;
	__u16 kind;
	__u32 left;                  /* STACK batches: the stack's frames still to come */
	__u32 depth, flags;          /* ... its head */
	__s64 first;                 /* ... where its frames go in stack_frames; -1: nowhere
					(known already, or no room) */
	__u64 id;
	__u64 slot;                  /* the delivering process's (record --all) */
};

/* bpf_loop's body: record i of the batch. A plain loop over a few hundred
 * records, each a map update, is more than the verifier will walk. */
static long add_record(__u32 i, void *ctx)
{
	struct batch_walk *w = ctx;
	__u64 off = sizeof(struct vt_batch_hdr) + (__u64)i * w->record_size;
	struct vt_batch_rec *r;

	if (off > VT_BATCH_MAX_BYTES - sizeof(struct vt_batch_rec))
		return 1;
	r = (struct vt_batch_rec *)(w->buf->b + off);
	if (targ_all) {
		if (vt_proc_too_high(r->klass) || vt_proc_too_high(r->method) ||
		    vt_proc_too_high(r->site)) {
			lose_n(VT_LOSS_PROC_HIGH_PTR, r->samples);
			return 0;
		}
		r->klass = vt_proc_qual(r->klass, w->slot);
		r->method = vt_proc_qual(r->method, w->slot);
		r->site = vt_proc_qual(r->site, w->slot);
	}
	if (w->kind == VT_BATCH_ALLOC)
		add_alloc(r->klass, r->method, r->site,
			  w->record_size >= sizeof(struct vt_batch_rec) ? r->stack : 0, r->count,
			  r->bytes, r->samples);
	else
		add_free(r->klass, r->count, r->bytes);
	return 0;
}

/* bpf_loop's body for a STACK batch: record i is a head or a frame. A
 * stack the map holds already (another thread's, or sent again) is passed
 * over; a new one's frames go straight to stack_frames. */
static long add_stack_record(__u32 i, void *ctx)
{
	struct batch_walk *w = ctx;
	__u64 off = sizeof(struct vt_batch_hdr) + (__u64)i * sizeof(struct vt_stack_frame);

	if (off > VT_BATCH_MAX_BYTES - sizeof(struct vt_stack_frame))
		return 1;
	if (w->left == 0) {
		struct vt_stack_head *h = (struct vt_stack_head *)(w->buf->b + off);

		if (!h->id || h->depth > VT_STACK_MAX_DEPTH) {
			lose(VT_LOSS_BATCH_BAD);
			return 1;
		}
		w->id = h->id;
		w->depth = h->depth;
		w->flags = h->flags;
		w->left = h->depth;
		w->first = bpf_map_lookup_elem(&stacks, &w->id) ? -1 : stack_reserve(h->depth);
		if (w->left == 0 && w->first >= 0)
			stack_publish(w->id, 0, w->flags, 0);
		return 0;
	}
	struct vt_stack_frame *f = (struct vt_stack_frame *)(w->buf->b + off);

	w->left--;
	if (w->first < 0)
		return 0;
	stack_frame_put(w->first + (w->depth - 1 - w->left), f);
	resolve_name(f->name);
	resolve_name(f->file);
	if (w->left == 0)
		stack_publish(w->id, w->depth, w->flags, w->first);
	return 0;
}

/* record --all: each process's own batch counts, so the end of a recording
 * can tell which exited without their last round (vt_proc.exits). */
static __always_inline void proc_batch_seen(__u32 pslot, __u32 kind, bool exit)
{
	struct vt_proc *p = bpf_map_lookup_elem(&procs, &pslot);

	if (!p || kind >= 2)
		return;
	__sync_fetch_and_add(&p->batches[kind & 1], 1);
	if (exit)
		__sync_fetch_and_add(&p->exits[kind & 1], 1);
}

/* alloc__batch and free__batch: a batch of counts gathered in the target
 * (vmtrace/batch.h). Copied in one read, checked, then added record by
 * record into the maps the per-event programs use. */
/* What a header says the host did not count (vmtrace/batch.h: before,
 * unseen_bytes), into the Lost section; every kind of batch carries them. */
static __always_inline void host_uncounted(const struct vt_batch_hdr *h)
{
	if (h->before)
		lose_n(VT_LOSS_BEFORE_COUNTING, h->before);
	if (h->unseen_bytes)
		lose_n(VT_LOSS_UNSEEN_BYTES, h->unseen_bytes);
}

SEC("usdt")
int BPF_USDT(on_batch, void *batch, __u64 len)
{
	struct batch_walk w;
	struct vt_batch_hdr *h;
	struct vt_batch_state *bs;
	__u32 zero = 0, slot;

	if (!in_target())
		return 0;
	w.buf = bpf_map_lookup_elem(&batch_scratch, &zero);
	if (!w.buf)
		return 0;
	if (len < sizeof(struct vt_batch_hdr) || len > VT_BATCH_MAX_BYTES) {
		lose(VT_LOSS_BATCH_BAD);
		return 0;
	}
	if (bpf_probe_read_user(w.buf->b, len, batch)) {
		lose(VT_LOSS_BATCH_FAULT);
		return 0;
	}
	h = (struct vt_batch_hdr *)w.buf->b;
	if (h->magic == VT_BATCH_MAGIC && h->version >= VT_BATCH_VERSION)
		host_uncounted(h);
	if (h->magic == VT_BATCH_MAGIC && h->version >= VT_BATCH_VERSION && h->kind == VT_BATCH_STACK) {
		if (h->record_size != sizeof(struct vt_stack_frame) ||
		    sizeof(*h) + (__u64)h->count * sizeof(struct vt_stack_frame) > len) {
			lose(VT_LOSS_BATCH_BAD);
			return 0;
		}
		w.left = 0;
		bpf_loop(h->count, add_stack_record, &w, 0);
		if (w.left)
			lose(VT_LOSS_BATCH_BAD); /* a stack cut off by the batch's end */
		return 0;
	}
	if (h->magic != VT_BATCH_MAGIC || h->version < VT_BATCH_VERSION ||
	    (h->kind != VT_BATCH_ALLOC && h->kind != VT_BATCH_FREE) ||
	    h->record_size < VT_BATCH_REC_V1 || h->record_size > VT_BATCH_MAX_BYTES ||
	    sizeof(*h) + (__u64)h->count * h->record_size > len) {
		lose(VT_LOSS_BATCH_BAD);
		return 0;
	}
	if (h->lost)
		lose_n(VT_LOSS_BATCH_PROVIDER, h->lost);
	w.slot = targ_all ? vt_proc_slot() : 0;
	if (w.slot == VT_PROC_NONE) {
		lose_n(VT_LOSS_PROC_FULL, h->count);
		return 0;
	}
	w.record_size = h->record_size;
	w.kind = h->kind;
	bpf_loop(h->count, add_record, &w, 0);

	slot = h->kind - 1;
	bs = bpf_map_lookup_elem(&batch_state, &slot);
	if (!bs)
		return 0;
	__sync_fetch_and_add(&bs->batches, 1);
	if (h->flags & VT_BATCH_ROUND_END) {
		bs->last_request = h->request;
		__sync_fetch_and_add(&bs->rounds, 1);
	}
	if (h->flags & VT_BATCH_EXIT)
		__sync_fetch_and_add(&bs->exits, 1);
	if (targ_all)
		proc_batch_seen((__u32)w.slot, slot, h->flags & VT_BATCH_EXIT);
	return 0;
}

#endif /* VT_BATCH_WALK_BPF_H */
