/*
 * rb_stacks.c: the thread's Ruby stack as a chain libvmtrace walks (rb_stacks.h).
 *
 * rb_profile_frames names every frame and finds its line, a search per
 * frame: on a deep stack that costs more than everything else an object
 * costs. A thread's stacks repeat, so each stack is kept, by a 64-bit hash
 * of the raw words of its frames (where each Ruby frame is executing, each
 * C frame's method entry: layout.h), which name it exactly; an object whose
 * stack was seen before costs a walk of those words and one comparison. A
 * stack is known by its hash alone, as libvmtrace and the consumer know
 * every stack by a 64-bit id: keeping the words to compare them missed the
 * cache twice an object on rdoc's deep stacks. A new stack is named once,
 * through rb_profile_frames and the frame table (names.h), and its chain
 * carries each frame's hash for libvmtrace (vmtrace_frames_hashed).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <ruby/ruby.h>
#include <ruby/debug.h>

#include "vmtrace/vmtrace.h"

#include "intern.h"
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
	uint64_t hash;                  /* of this frame and its callers (vmtrace_frames_hashed) */
};

struct kept_stack {
	uint64_t hash;                  /* of the words, with their number; 0: empty */
	uint32_t nframes, cap;          /* cap: room for frames */
	struct chain_frame *frames;     /* innermost first, each pointing at its caller */
};

/* Per thread, and only pointers in TLS: libvmtrace's initial-exec TLS puts
 * this module's whole TLS block in the small static surplus a dlopen'ed
 * library gets. Initial-exec here too: found at a fixed offset, not by a
 * call at each object. */
static __thread struct kept_stack *kept __attribute__((tls_model("initial-exec")));
static __thread struct chain_frame *chain_top __attribute__((tls_model("initial-exec")));

void vt_rb_stacks_describe(void)
{
	struct vmtrace_frame_layout l = VMTRACE_FRAME_LAYOUT(struct chain_frame, caller, name, file, line);

	if (vmtrace_frames_describe(&l) == 0)
		vmtrace_frames_hashed((int32_t)offsetof(struct chain_frame, hash));
}

/* The hash of the raw words of the frames of execution context ec,
 * innermost first: two lanes (frames alternate), so the multiplies of one
 * frame do not wait on the last; 0 is never a hash. */
static uint64_t stack_hash(uintptr_t ec)
{
	uintptr_t cfp, end;
	uint64_t a = 0x9E3779B97F4A7C15ull, b = 0x94D049BB133111EBull, h;
	uint32_t n = 0;

	if (!ec)
		return 1;
	cfp = vt_rb_word(ec, VT_RB_EC_CFP);
	end = vt_rb_word(ec, VT_RB_EC_STACK) + vt_rb_word(ec, VT_RB_EC_STACK_SIZE) * sizeof(VALUE);
	for (; cfp && cfp + VT_RB_CFP_SIZE <= end && n < DEPTH; cfp += VT_RB_CFP_SIZE) {
		uintptr_t pc = vt_rb_word(cfp, VT_RB_CFP_PC), ep, word;

		/* a C frame (a C function's, a C block's) is pushed with no pc
		 * and never gets one: a pc is a started Ruby frame's, and its
		 * flags (on the VM stack, a cache line of their own) need not
		 * be read */
		if (pc)
			word = pc;
		else if (!(ep = vt_rb_word(cfp, VT_RB_CFP_EP)))
			continue;
		else if (vt_rb_word(ep, 0) & VT_RB_FRAME_CFRAME)
			word = vt_rb_word(ep, VT_RB_EP_ME * (int)sizeof(VALUE)) | 1; /* entries are aligned */
		else if (vt_rb_word(cfp, VT_RB_CFP_ISEQ))
			/* a Ruby frame not started (a required file's top, a
			 * C extension's load) has no pc: its code names it */
			word = vt_rb_word(cfp, VT_RB_CFP_ISEQ);
		else
			continue;
		if (n++ & 1)
			b = (b ^ word) * 0xC2B2AE3D27D4EB4Full;
		else
			a = (a ^ word) * 0x165667B19E3779F9ull;
	}
	h = vt_mix64(a ^ vt_mix64(b ^ n));
	return h ? h : 1;
}

/* Room for cap frames in k, kept from one stack to the next of its slot.
 * 0, or -1 out of memory. */
static int kept_grow(struct kept_stack *k, uint32_t cap)
{
	struct chain_frame *f;

	if (cap <= k->cap && k->frames)
		return 0;
	cap = cap > 8 ? cap : 8;
	f = realloc(k->frames, cap * sizeof(*f));
	if (!f)
		return -1;
	k->frames = f;
	k->cap = cap;
	return 0;
}

/* Name a stack seen for the first time into k. 0, or -1 out of memory. */
static int name_stack(struct kept_stack *k, uint64_t hash)
{
	VALUE f[DEPTH];
	int l[DEPTH], n = rb_profile_frames(0, DEPTH, f, l);
	uint32_t m = 0;

	if (k->frames)
		vmtrace_frames_changed(k->frames);
	k->nframes = 0;
	k->hash = 0;
	if (kept_grow(k, (uint32_t)n))
		return -1;
	for (int i = 0; i < n; i++) {
		const struct vt_rb_frame *names = vt_rb_frame_of(f[i]);

		if (!names)
			continue;
		k->frames[m] = (struct chain_frame){ NULL, names->name, names->file, l[i], 0 };
		if (m > 0)
			k->frames[m - 1].caller = &k->frames[m];
		m++;
	}
	/* each frame's hash from its caller's, outermost first: libvmtrace
	 * names the stack by the innermost's, with no walk */
	for (uint32_t i = m; i-- > 0;) {
		struct chain_frame *c = &k->frames[i];

		c->hash = vt_frame_hash(i + 1 < m ? k->frames[i + 1].hash : VT_FRAME_HASH_ROOT, c->name, c->file,
					c->line, m - 1 - i);
	}
	k->nframes = m;
	k->hash = hash;
	return 0;
}

void vt_rb_take_stack(uintptr_t ec)
{
	uint64_t hash;
	struct kept_stack *k;

	if (!kept) {
		kept = calloc(KEPT, sizeof(*kept));
		if (!kept)
			return;
		vmtrace_frames_thread_kept((void *const *)&chain_top);
	}
	hash = stack_hash(ec);
	k = &kept[hash % KEPT];
	if (k->hash != hash && name_stack(k, hash)) {
		chain_top = NULL; /* no memory: counted under no stack */
		return;
	}
	chain_top = k->nframes ? &k->frames[0] : NULL;
}
