/*
 * batch_thread.c: a thread's flush of its batched counts (batch_thread.h):
 * its tables, its counts by cached key and the frames of its new VM stacks.
 */
#include <stdatomic.h>

#include "batch_keys.h"
#include "batch_thread.h"
#include "stacks.h"

/* A thread's new VM stacks, to send (stack_frames). */
struct thread_stacks {
	struct vt_thread *t;
	struct vt_batch_buf *buf;
	uint32_t round;
};

static void stack_frames(void *arg)
{
	struct thread_stacks *s = arg;

	if (s->t->stacks)
		vt_stacks_flush(s->t->stacks, s->buf, s->round, vt_kind_on(VMTRACE_BATCH_ALLOC - 1));
}

void vt_thread_flush(struct vt_thread *t, struct vt_batch_buf *const bufs[VT_KINDS],
		     struct vt_batch_buf *stack_buf, uint32_t round)
{
	struct thread_stacks frames = { t, stack_buf, round };

	/* the frames of new stacks go ahead of the counts that name them */
	stack_frames(&frames);
	struct vt_keyed *kd = atomic_load_explicit(&t->keyed, memory_order_acquire);

	for (int k = 0; k < VT_KINDS; k++) {
		/* a round reads t's tables while t counts: a stack t adds meanwhile
		 * may be counted in this round's batches, so its frames go before
		 * each of them (an owner's own flush races no count of its own) */
		struct vt_flush f = { bufs[k], (uint16_t)(k + 1), round, vt_kind_on(k),
				      round ? stack_frames : NULL, &frames };

		if (!t->tab[k] && !kd)
			continue;
		if (t->tab[k])
			vt_table_flush(t->tab[k], &f);
		if (kd)
			vt_keyed_flush(kd, k + 1, &f);
		if (round == 0)
			vt_flush_end(&f, 0, 0);
	}
	/* ... and before the round's last batches, sent at its end */
	if (round)
		stack_frames(&frames);
}

void vt_thread_flush_own(struct vt_thread *t)
{
	struct vt_batch_buf *const bufs[VT_KINDS] = { &t->buf, &t->buf };

	vt_thread_flush(t, bufs, &t->buf, 0);
}

void vt_thread_after_fork(struct vt_thread *t, int mine)
{
	struct vt_flush none = { &t->buf, 0, 0, 0, NULL, NULL }; /* deliver nothing */
	struct vt_keyed *kd = atomic_load(&t->keyed);

	atomic_store(&t->lock, 0);
	/* counts by key are the parent's in every record: delivered */
	for (int k = 0; kd && k < VT_KINDS; k++)
		vt_keyed_flush(kd, k + 1, &none);
	if (mine) {
		/* the parent's counts: never the child's to deliver */
		for (int k = 0; k < VT_KINDS; k++) {
			if (t->tab[k])
				vt_table_flush(t->tab[k], &none);
			/* closes the hot path: the next event starts the
			 * child's flush thread (count_slow) */
			t->slots[k] = NULL;
		}
		return;
	}
	for (int k = 0; k < VT_KINDS; k++) {
		vt_table_free(t->tab[k]);
		vt_thread_set_table(t, k, NULL);
	}
	t->dhead = 0;
	atomic_store(&t->dtail, 0);
	atomic_store(&t->state, REC_FREE);
}
