/*
 * live_batch.h: the per-thread address buffers of live__batch (live_batch.c),
 * as the rest of libvmtrace sees them. Nothing here is public.
 */
#ifndef VMTRACE_LIVE_BATCH_H
#define VMTRACE_LIVE_BATCH_H

#include <stdint.h>

/* Append one allocation (op VMTRACE_LIVE_ALLOC) or free to the calling
 * thread's buffer; a full buffer is delivered first. */
void vmtrace__live_add(uint32_t op, uint64_t addr, uint64_t klass, uint64_t method, uint64_t site,
		       uint64_t size, uint64_t weight);
/* Deliver the calling thread's buffer now (at gc__begin: its allocations
 * reach the tracer before the collection frees them). */
void vmtrace__live_flush_self(void);
/* Deliver every thread's buffer (the flush rounds of batch.c, so a
 * consumer's request for everything covers the addresses too), with what
 * its thread has held longer than a round; everything it holds when the
 * process exits or the round answers a new request. */
void vmtrace__live_round(int exiting, uint64_t request);

/* Objects with a word (live_words.c). The calling thread's counts for the
 * session in force, made and started anew as needed (and its TLS pointer
 * set), or NULL: no session, no memory, or a signal handler inside its
 * thread's work (the event takes the address path). */
struct vmtrace__live_thread *vmtrace__live_words(void);
/* The death of an object born before the ring's half (vmtrace_free_live's
 * slow path); a handler inside its thread's work counts it as lost. */
void vmtrace__live_words_old(uint64_t now, uint64_t born, uint32_t id, uint64_t size);
/* The flush thread, every tick while a recording follows words: the clock
 * moves on to now_ns, the rings' old births out of its way first. */
void vmtrace__live_tick(uint64_t now_ns);

#endif
