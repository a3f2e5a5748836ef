/*
 * frame_chain.c: each thread's chain of Python frames (frame_chain.h).
 */
#include "frames.h" /* CPython's headers first */

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>

#include "frame_chain.h"
#include "intern.h"
#include "sites.h"
#include "vmtrace/frames.h"

__thread struct pystack *self_stack __attribute__((tls_model("initial-exec")));
static pthread_key_t stack_key; /* frees a thread's chain as it ends */
static const char *cut_name;

struct pystack *thread_stack_new(void)
{
	if ((self_stack = calloc(1, sizeof(*self_stack)))) {
		pthread_setspecific(stack_key, self_stack);
		vmtrace_frames_thread_kept((void *const *)&self_stack->top);
	}
	return self_stack;
}

void frame_chain_init(void)
{
	if (pthread_key_create(&stack_key, free) == 0) {
		vmtrace_frames_describe(&VMTRACE_FRAME_LAYOUT(struct pyframe, caller, name, file, line));
		vmtrace_frames_hashed((int32_t)offsetof(struct pyframe, hash));
	}
	cut_name = keep("(deeper frames cut)");
}

/* a frame's hash, from its caller's (NULL: the outermost) */
static uint64_t frame_hash(const struct pyframe *caller, const struct pyframe *p, int depth)
{
	return vt_frame_hash(caller ? caller->hash : VT_FRAME_HASH_ROOT, p->name, p->file, p->line,
			     (uint64_t)depth);
}

/* frames[k], a caller, made from (code, instr), its caller frames[k - 1];
 * the outermost changed is remembered, to hash from */
static int frame_at(struct pystack *st, int k, const void *code, const void *instr, _PyInterpreterFrame *g)
{
	struct site *s;

	if (st->memo[k].code == code && st->memo[k].instr == instr)
		return 0;
	if (g) {
		if (!(s = site_of(g)))
			return -1;
		st->frames[k] = (struct pyframe){ k ? &st->frames[k - 1] : NULL, s->method, s->file, s->line, 0 };
	} else {
		st->frames[k] = (struct pyframe){ NULL, cut_name, NULL, 0, 0 };
	}
	st->memo[k].code = code;
	st->memo[k].instr = instr;
	if (k < st->hashed)
		st->hashed = k;
	return 0;
}

/* The innermost frame at depth k, made from g, under callers frames[k - 1]. */
static struct leaf *leaf_at(struct pystack *st, int k, _PyInterpreterFrame *g)
{
	const struct pyframe *caller = k ? &st->frames[k - 1] : NULL;
	uint64_t parent = caller ? caller->hash : 1;
	const void *code = VT_FRAME_CODE(g), *instr = VT_FRAME_INSTR(g);
	struct leaf *l = &st->leaves[vt_mix64(parent ^ (uint64_t)(uintptr_t)instr * 31 ^ (uint64_t)k) & (LEAVES - 1)];
	struct site *s;

	if (l->parent == parent && l->code == code && l->instr == instr && l->depth == k)
		return l;
	if (!(s = site_of(g)))
		return NULL;
	/* another chain at this address (this thread's, or a thread's that
	 * ended and whose memory this one got): libvmtrace forgets its name */
	vmtrace_frames_changed(&l->frame);
	l->parent = parent;
	l->code = code;
	l->instr = instr;
	l->depth = k;
	l->site = s;
	l->frame = (struct pyframe){ (struct pyframe *)caller, s->method, s->file, s->line, 0 };
	l->frame.hash = frame_hash(caller, &l->frame, k);
	return l;
}

struct pyframe *chain_of(struct pystack *st, _PyInterpreterFrame *f)
{
	int n = 0, cut = 0, last = st->depth, from = last - 1;

	st->inner = NULL;
	/* one not started has no line yet, and tracebacks skip it; only the
	 * innermost can be (a frame that called another has started) */
	for (; f && _PyFrame_IsIncomplete(f); f = f->previous)
		;
	/* Each caller is checked against what its frame was made from as the
	 * walk passes it, taking the stack to be as deep as the last one: the
	 * checks then wait on no load of their own, and if the depth is the
	 * same, only callers from the outermost that changed (from) are
	 * remade. Otherwise every caller is checked again by its depth. */
	for (; f; f = f->previous) {
		int k = last - 1 - n;

		if (n == VMTRACE_STACK_MAX_DEPTH) {
			cut = 1;
			break;
		}
		if (VT_FRAME_SHIM(f))
			continue;
		if (n && k >= 0 && (st->memo[k].code != VT_FRAME_CODE(f) || st->memo[k].instr != VT_FRAME_INSTR(f)))
			from = k;
		st->walk[n++] = f;
	}
	if (!n)
		return NULL;
	if (cut || n != last)
		from = 0;
	if (cut && frame_at(st, 0, NULL, &cut_name, NULL))
		return NULL;
	st->depth = cut ? 0 : n; /* a cut walk's memo is one frame off */
	for (int d = from; d < n - 1; d++) {
		_PyInterpreterFrame *g = st->walk[n - 1 - d];

		if (frame_at(st, cut + d, VT_FRAME_CODE(g), VT_FRAME_INSTR(g), g))
			return NULL;
	}
	/* the callers' hashes from the outermost remade one in (or from the
	 * first past the last chain's end) */
	for (int k = st->hashed; k < cut + n - 1; k++)
		st->frames[k].hash = frame_hash(k ? &st->frames[k - 1] : NULL, &st->frames[k], k);
	st->hashed = cut + n - 1;
	if (!(st->inner = leaf_at(st, cut + n - 1, st->walk[0])))
		return NULL;
	st->inner_from = st->walk[0];
	return &st->inner->frame;
}
