/*
 * rb_stacks.c: the thread's Ruby stack as a chain libvmtrace walks (rb_stacks.h).
 *
 * rb_profile_frames names every frame and finds its line, a search per
 * frame: on a deep stack that costs more than everything else an object
 * costs. A thread's stacks repeat, so each stack is kept, by the raw words
 * of its frames (where each Ruby frame is executing, each C frame's method
 * entry: layout.h), which name it exactly; an object whose stack was seen
 * before costs a walk of those words and one comparison. A new stack is
 * named once, through rb_profile_frames and the frame table (names.h),
 * and libvmtrace names a kept chain by its address after its first walk
 * (vmtrace_frames_thread_kept).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ruby/ruby.h>
#include <ruby/debug.h>

#include "vmtrace/vmtrace.h"

#include "layout.h"
#include "names.h"
#include "rb_stacks.h"

#define DEPTH VMTRACE_STACK_MAX_DEPTH
#define KEPT 32768u                /* stacks kept per thread, by their words' hash: rdoc has
				      thousands, and one whose slot another took is named
				      again (rb_profile_frames) */

struct chain_frame {
	struct chain_frame *caller;
	const char *name, *file;
	int32_t line;
};

struct kept_stack {
	uint64_t hash;
	uint32_t nwords, nframes, cap;  /* cap: room for words and frames */
	uintptr_t *words;
	struct chain_frame *frames;  /* innermost first, each pointing at its caller */
};

/* Per thread, and only pointers in TLS: libvmtrace's initial-exec TLS puts
 * this module's whole TLS block in the small static surplus a dlopen'ed
 * library gets. */
static __thread struct kept_stack *kept;
static __thread struct chain_frame *chain_top;

void vt_rb_stacks_describe(void)
{
	struct vmtrace_frame_layout l = VMTRACE_FRAME_LAYOUT(struct chain_frame, caller, name, file, line);

	vmtrace_frames_describe(&l);
}

/* The raw words of the frames of execution context ec, innermost first,
 * and their hash. */
static uint32_t stack_words(uintptr_t ec, uintptr_t *w, uint64_t *hash)
{
	uintptr_t cfp, end;
	uint64_t h = 0x9e3779b97f4a7c15ull;
	uint32_t n = 0;

	if (!ec)
		return *hash = 0, 0;
	cfp = vt_rb_word(ec, VT_RB_EC_CFP);
	end = vt_rb_word(ec, VT_RB_EC_STACK) + vt_rb_word(ec, VT_RB_EC_STACK_SIZE) * sizeof(VALUE);
	for (; cfp && cfp + VT_RB_CFP_SIZE <= end && n < DEPTH; cfp += VT_RB_CFP_SIZE) {
		uintptr_t ep = vt_rb_word(cfp, VT_RB_CFP_EP), pc = vt_rb_word(cfp, VT_RB_CFP_PC), word;

		if (!ep)
			continue;
		if (vt_rb_word(ep, 0) & VT_RB_FRAME_CFRAME)
			word = vt_rb_word(ep, VT_RB_EP_ME * (int)sizeof(VALUE)) | 1; /* entries are aligned */
		else if (vt_rb_word(cfp, VT_RB_CFP_ISEQ))
			/* a Ruby frame not started (a required file's top, a
			 * C extension's load) has no pc: its code names it */
			word = pc ? pc : vt_rb_word(cfp, VT_RB_CFP_ISEQ);
		else
			continue;
		w[n++] = word;
		h = (h ^ word) * 0x100000001b3ull;
	}
	*hash = h ^ n;
	return n;
}

/* Room for cap words and frames in k, kept from one stack to the next
 * of its slot. 0, or -1 out of memory. */
static int kept_grow(struct kept_stack *k, uint32_t cap)
{
	uintptr_t *w;
	struct chain_frame *f;

	if (cap <= k->cap && k->words)
		return 0;
	cap = cap > 8 ? cap : 8;
	w = realloc(k->words, cap * sizeof(*w));
	if (!w)
		return -1;
	k->words = w;
	f = realloc(k->frames, cap * sizeof(*f));
	if (!f)
		return -1;
	k->frames = f;
	k->cap = cap;
	return 0;
}

/* Name a stack seen for the first time into k. 0, or -1 out of memory. */
static int name_stack(struct kept_stack *k, const uintptr_t *w, uint32_t nw, uint64_t hash)
{
	VALUE f[DEPTH];
	int l[DEPTH], n = rb_profile_frames(0, DEPTH, f, l);
	uint32_t m = 0;

	if (k->frames)
		vmtrace_frames_changed(k->frames);
	k->nwords = k->nframes = 0;
	k->hash = 0;
	if (kept_grow(k, nw > (uint32_t)n ? nw : (uint32_t)n))
		return -1;
	for (int i = 0; i < n; i++) {
		const struct vt_rb_frame *names = vt_rb_frame_of(f[i]);

		if (!names)
			continue;
		k->frames[m] = (struct chain_frame){ NULL, names->name, names->file, l[i] };
		if (m > 0)
			k->frames[m - 1].caller = &k->frames[m];
		m++;
	}
	memcpy(k->words, w, nw * sizeof(*w));
	k->nwords = nw;
	k->nframes = m;
	k->hash = hash;
	return 0;
}

/* a and b, n words each, equal: inline, as stacks are a few words */
static int same_words(const uintptr_t *a, const uintptr_t *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

void vt_rb_take_stack(uintptr_t ec)
{
	uintptr_t w[DEPTH];
	uint64_t hash;
	uint32_t n;
	struct kept_stack *k;

	if (!kept) {
		kept = calloc(KEPT, sizeof(*kept));
		if (!kept)
			return;
		vmtrace_frames_thread_kept((void *const *)&chain_top);
	}
	n = stack_words(ec, w, &hash);
	k = &kept[hash % KEPT];
	if (k->hash != hash || k->nwords != n || !k->words || !same_words(k->words, w, n)) {
		if (name_stack(k, w, n, hash)) {
			chain_top = NULL; /* no memory: counted under no stack */
			return;
		}
	}
	chain_top = k->nframes ? &k->frames[0] : NULL;
}
