/*
 * frame_chain.h: whole stacks (--stack vm): each thread's chain of Python
 * frames, which libvmtrace walks (<vmtrace/frames.h>), kept from one
 * allocation to the next so only what changed is made again.
 */
#ifndef VMTRACE_PY_FRAME_CHAIN_H
#define VMTRACE_PY_FRAME_CHAIN_H

#include <stdint.h>

#include "frames.h"
#include "primitives.h"
#include "sites.h"
#include "vmtrace/vmtrace.h"

struct pyframe {
	struct pyframe *caller;
	const char *name, *file;
	int32_t line;
	uint64_t hash;                /* of this frame and its callers (vmtrace_frames_hashed) */
};

/* An innermost frame, kept by (its callers' hash, its depth, code and
 * instruction): one function's allocations at a few places, under the
 * same callers, each find their own frame made, at an address of its own,
 * so libvmtrace knows the chain by that address (vmtrace_frames_thread_kept)
 * and nothing is remade or hashed again. */
struct leaf {
	uint64_t parent;              /* the callers' hash; 0: empty */
	const void *code, *instr;
	int32_t depth;
	struct site *site;
	struct pyframe frame;
};

#define LEAVES 256                  /* a thread's innermost frames kept, direct-mapped */

/* A thread's chain: its callers kept from the outermost frame in, so an
 * allocation remakes only the callers whose (code, instruction) changed
 * since the thread's last one, and its innermost frame from the leaves. A
 * stack deeper than libvmtrace keeps gets one frame more, outermost, that
 * says it was cut. */
struct pystack {
	struct pyframe *top;          /* the chain while an allocation is counted, else NULL */
	struct leaf *inner;           /* its innermost frame */
	_PyInterpreterFrame *inner_from; /* ... made from this interpreter frame */
	int hashed;                   /* frames[] below this have their hash (of them and their callers) */
	int depth;                    /* frames the last walk found (not cut), the innermost's included */
	struct {
		const void *code, *instr; /* what frames[k] was made from */
	} memo[VMTRACE_STACK_MAX_DEPTH + 1];
	struct pyframe frames[VMTRACE_STACK_MAX_DEPTH + 1];
	_PyInterpreterFrame *walk[VMTRACE_STACK_MAX_DEPTH];
	struct leaf leaves[LEAVES];
};

extern __thread struct pystack *self_stack VMTRACE_HIDDEN;

/* The thread's chain, made at its first call (NULL: no memory). */
struct pystack *thread_stack_new(void) VMTRACE_HIDDEN;
static inline struct pystack *thread_stack(void)
{
	return self_stack ? self_stack : thread_stack_new();
}

/* The chain of the thread's Python frames from f, innermost first; NULL
 * when there is none to make. */
struct pyframe *chain_of(struct pystack *st, _PyInterpreterFrame *f) VMTRACE_HIDDEN;

/* Once, at import: the chain's layout told to libvmtrace. */
void frame_chain_init(void) VMTRACE_HIDDEN;

#endif
