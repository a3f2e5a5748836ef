/*
 * live_words.h: the live heap of objects that carry a word (vmtrace_alloc_live,
 * docs/live.md "A word per object"): the recording's clock, and each
 * thread's counts by allocation key and by tick of birth (live_words.c).
 * Nothing here is public.
 *
 * Who touches what. A thread's counts (struct vmtrace__live_thread, in
 * vmtrace.h) are added to by their owner alone, inline, one instruction an
 * add. Everything else in struct vt_words, and the ring slots no owner
 * touches any more (births older than the ring's half), belong to whoever
 * holds the thread's live buffer lock (live_batch.c): the owner's slow
 * path, a flush round.
 */
#ifndef VMTRACE_LIVE_WORDS_H
#define VMTRACE_LIVE_WORDS_H

#include <stdint.h>

#include "vmtrace/batch.h"
#include "vmtrace/vmtrace.h"

#define VT_WORDS_GROUP_SHIFT 12        /* old births by groups of 2^12 ticks (about 4 s) */
#define VT_WORDS_GROUPS 65536u         /* groups kept apart: about 3 days */
#define VT_WORDS_AGE_BUCKETS 64

struct vt_words {
	struct vmtrace__live_thread pub;     /* the owner's adds */
	int64_t sent[VMTRACE__KEYS_MAX][4];  /* what flushes delivered of pub.keys */
	int64_t net_sent;                    /* ... of pub.net */
	uint64_t moved;                      /* births before this tick are in old[], not the ring */
	int64_t beyond;                      /* births older than old[] keeps */
	int used;                            /* reset once: the rings may hold births */
	int64_t old[VT_WORDS_GROUPS];        /* births by group, group % VT_WORDS_GROUPS */
	uint64_t old_group[VT_WORDS_GROUPS]; /* the group each slot holds, + 1; 0: none */
};

/* ---- the clock (vmtrace_live) ---- */

/* The consumer's session in force, its start and threshold set up (once per
 * session, by whoever sees it first): its number, or 0 when there is none
 * or another thread is setting it up right now. Async-signal-safe. */
uint64_t vt_words_session(void);
/* A tick of now_ns: the clock moves on, never back. */
uint64_t vt_words_tick_of(uint64_t now_ns);
void vt_words_tick_to(uint64_t tick);
/* A session is in force and a tracer holds live__batch. */
int vt_words_on(void);
/* Called as a session is set up, from any thread or handler (batch.c sets
 * it: it wakes the flush thread, so the clock moves from then on). */
extern void (*_Atomic vt_words_session_hook)(void);
/* A fork child: the next event sets its session up anew, from a tick after
 * every object of the parent. */
void vt_words_at_fork_child(void);

/* ---- a thread's counts ---- */

/* Zeroed counts; NULL when out of memory. Never freed. */
struct vt_words *vt_words_new(void);
/* Start session anew: what the counts held is delivered, births forgotten. */
void vt_words_reset(struct vt_words *w, uint64_t session);
/* Move births before tick - 3/4 of the ring into old[], so the ring's
 * slots are free before the clock comes round to them again. */
void vt_words_move(struct vt_words *w, uint64_t tick);
/* The death of an object born at tick born (before the ring's half), key
 * id, size bytes: the slow path of vmtrace_free_live. */
void vt_words_old_death(struct vt_words *w, uint64_t now, uint64_t born, uint32_t id, uint64_t size);

/* Records for what w's keys gained since the last flush (KEY), and the
 * change of its live bytes with their highest point (NET); put() takes
 * each. */
typedef void (*vt_words_put_fn)(void *ctx, const struct vmtrace_live_record *r);
void vt_words_flush(struct vt_words *w, vt_words_put_fn put, void *ctx);
/* Add w's live objects by log2 age in ns at tick to hist: signed, as a
 * thread may free what another bore; the threads' sum is the truth. */
void vt_words_ages(const struct vt_words *w, uint64_t tick, int64_t hist[VT_WORDS_AGE_BUCKETS]);

#endif /* VMTRACE_LIVE_WORDS_H */
