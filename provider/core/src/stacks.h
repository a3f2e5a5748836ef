/*
 * stacks.h: a thread's VM stacks for batched counting (stacks.c;
 * <vmtrace/frames.h> is the host's side, docs/stacks.md the design).
 *
 * The walk reads the host's frame chain from the thread's registered
 * pointer and names the stack by a hash of its frames. A thread keeps the
 * ids it has already sent (`known`) and the frames of the ones it has not
 * (`pend`, heads and frames as the STACK batch carries them). Only the
 * owner walks, interns and appends; a flush (owner or flush thread, under
 * the thread's lock) sends what was appended since the last one.
 *
 * pend is one of two halves. When it fills, the owner seals it and goes on
 * in the other, and the flush thread sends the sealed half: a program that
 * makes new stacks quickly (pydoc: one half every 8 ms) no longer stops to
 * run the consumer's BPF over its frames. Only when the flush thread has not
 * sent the sealed half by the time the other fills does the owner send both.
 */
#ifndef VMTRACE_STACKS_H
#define VMTRACE_STACKS_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "primitives.h"
#include "vmtrace/batch.h"
#include "vmtrace/frames.h"

#define VT_STACKS_KNOWN_MIN 4096u    /* slots of a thread's set of sent ids at first; it
					 doubles when half full... */
#define VT_STACKS_KNOWN_MAX (1u << 20) /* ... up to this (8 MiB), then starts over: a real
					 program has tens of thousands of stacks (pydoc over
					 four modules: 24k), and a forgotten one is sent again */
#define VT_STACKS_PEND 8192u         /* records waiting for a flush, a half: heads and frames */
#define VT_STACKS_MEMO 4096u         /* ids by innermost frame, for a host whose chains are kept */

struct vt_batch_buf;

struct vt_stacks {
	uint64_t epoch;                              /* vmtrace_stacks_epoch `known` is for */
	uint32_t nknown, known_mask;
	_Atomic uint32_t npend;                      /* records appended to pend (owner; release) */
	uint32_t sent;                               /* ... of them sent (under the lock) */
	uint32_t sealed_from, sealed_end;            /* the sealed half's records not yet sent;
							equal: none (under the lock) */
	struct vmtrace_batch_frame *pend, *sealed;   /* the halves, appended to and sealed */
	uint64_t *known;                             /* ids sent (open addressing; 0 empty) */
	uint32_t gen;                                /* changes whenever `known` is emptied */
	struct {
		const void *top;                     /* a kept chain's innermost frame */
		uint64_t id;                         /* ... and the id its walk gave */
		uint32_t sent_gen;                   /* gen when id was found in `known` */
	} memo[VT_STACKS_MEMO];
	struct vmtrace_batch_frame walk[VMTRACE_STACK_MAX_DEPTH];
	struct vmtrace_batch_frame half[2][VT_STACKS_PEND];
};

/* The host's description (its public alias vmtrace_frames) and this
 * thread's innermost-frame pointer, as the host gave them (stacks.c). */
extern volatile struct vmtrace_frames_desc vmtrace__frames_store VMTRACE_HIDDEN;
extern volatile uint64_t vmtrace__stacks_epoch_store VMTRACE_HIDDEN;
extern __thread void *const *vmtrace__stacks_root
	__attribute__((tls_model("initial-exec"))) VMTRACE_HIDDEN;
/* the thread's chains are kept (vmtrace_frames_thread_kept) */
extern __thread int vmtrace__stacks_kept __attribute__((tls_model("initial-exec"))) VMTRACE_HIDDEN;

/* the offset of a kept chain's hash in its frames (vmtrace_frames_hashed), or VMTRACE_FRAME_NONE */
extern int32_t vmtrace__frames_hash_off VMTRACE_HIDDEN;

/* Is a frame chain described and this thread's pointer given? */
static inline int vt_stacks_ready(void)
{
	return vmtrace__stacks_root &&
	       __atomic_load_n(&vmtrace__frames_store.magic, __ATOMIC_ACQUIRE) == VMTRACE_FRAMES_MAGIC;
}

static inline uint64_t vt_stacks_load_u64(const char *frame, int32_t off)
{
	uint64_t v;

	memcpy(&v, frame + off, sizeof(v));
	return v;
}

static inline int64_t vt_stacks_load_i32(const char *frame, int32_t off)
{
	int32_t v;

	memcpy(&v, frame + off, sizeof(v));
	return v;
}

/* A stack id from a hash: 0 means "no stack"; ids with the top bit set are
 * the consumer's native stacks (docs/stacks.md). */
static inline uint64_t vt_stacks_id(uint64_t h)
{
	h &= ~(1ull << 63);
	return h ? h : 1;
}

/* Walk the calling thread's chain into out[] (innermost first; NULL: the
 * hash only): the depth, with *flags and the stack's id in *hash. Inline:
 * a stacked count's hot path (batch.c) walks too. */
static inline __attribute__((always_inline)) uint32_t vt_stacks_walk(struct vmtrace_batch_frame *out,
								     uint64_t *hash, uint32_t *flags)
{
	const struct vmtrace_frame_layout l = { vmtrace__frames_store.layout.caller,
						vmtrace__frames_store.layout.name,
						vmtrace__frames_store.layout.file,
						vmtrace__frames_store.layout.line };
	const char *f = *vmtrace__stacks_root;
	/* two lanes (names; files and lines), so the multiplies of a frame
	 * do not wait on each other */
	uint64_t h = 0x9E3779B97F4A7C15ull, g = 0x94D049BB133111EBull;
	uint32_t d = 0;

	*flags = 0;
	for (; f; f = (const char *)vt_stacks_load_u64(f, l.caller)) {
		uint64_t name = vt_stacks_load_u64(f, l.name);
		uint64_t file = l.file >= 0 ? vt_stacks_load_u64(f, l.file) : 0;
		int64_t line = l.line >= 0 ? vt_stacks_load_i32(f, l.line) : 0;

		if (d == VMTRACE_STACK_MAX_DEPTH) {
			*flags |= VMTRACE_STACK_CUT;
			break;
		}
		if (out) {
			out[d].name = name;
			out[d].file = file;
			out[d].line = line;
		}
		h = (h ^ name) * 0xC2B2AE3D27D4EB4Full;
		g = (g ^ file ^ ((uint64_t)line << 48)) * 0x165667B19E3779F9ull;
		d++;
	}
	h = ((h ^ (g >> 29) ^ ((uint64_t)d * 0x9E3779B97F4A7C15ull + *flags)) * 0xBF58476D1CE4E5B9ull) ^ g;
	h ^= h >> 31;
	*hash = vt_stacks_id(h);
	return d;
}

/* The slot of id in s's set of sent ids, or the empty slot it would take. */
static inline uint32_t vt_known_slot(const struct vt_stacks *s, uint64_t id)
{
	uint32_t i = (uint32_t)(id >> 40) & s->known_mask;

	while (s->known[i] && s->known[i] != id)
		i = (i + 1) & s->known_mask;
	return i;
}

/* The calling thread's stack id from the host's hash of its kept chain
 * (vmtrace_frames_hashed); 0 when the host keeps none. */
static inline uint64_t vt_stacks_host_id(void)
{
	int32_t off = vmtrace__frames_hash_off;

	if (off < 0 || !vmtrace__stacks_kept || !*vmtrace__stacks_root)
		return 0;
	return vt_stacks_id(vt_stacks_load_u64((const char *)*vmtrace__stacks_root, off) * 0x9E3779B97F4A7C15ull);
}

/* The id of the calling thread's stack now, its frames interned in s (new
 * ones wait in pend). 0 when the thread has no VM stack. Owner only, busy.
 * s may be NULL (a signal handler that interrupted its thread): then the
 * id only. When pend is full, *must_flush is set and the caller flushes
 * (vt_stacks_flush) and calls again. */
uint64_t vt_stacks_take(struct vt_stacks *s, int *must_flush);

/* The id of the calling thread's stack when s has sent its frames to this
 * consumer already, else 0 (then vt_stacks_take): the hash alone, no frame
 * copied, nothing changed. The hot path of a stacked count. */
static inline __attribute__((always_inline)) uint64_t vt_stacks_known(struct vt_stacks *s)
{
	uint32_t flags, m = 0;
	const void *top = *vmtrace__stacks_root;
	uint64_t id;

	if (!top || __atomic_load_n(&vmtrace__stacks_epoch_store, __ATOMIC_RELAXED) != s->epoch)
		return 0;
	if (vmtrace__stacks_kept) {
		/* a kept chain at this address is the stack its walk named, and
		 * once found sent, sent until `known` is emptied */
		m = (uint32_t)((uintptr_t)top >> 4) & (VT_STACKS_MEMO - 1);
		if (s->memo[m].top == top) {
			if (s->memo[m].sent_gen == s->gen)
				return s->memo[m].id;
			id = s->memo[m].id;
		} else {
			if (!(id = vt_stacks_host_id()))
				vt_stacks_walk(NULL, &id, &flags);
			s->memo[m].top = top;
			s->memo[m].id = id;
			s->memo[m].sent_gen = 0;
		}
	} else {
		vt_stacks_walk(NULL, &id, &flags);
	}
	if (!s->known[vt_known_slot(s, id)])
		return 0;
	if (vmtrace__stacks_kept)
		s->memo[m].sent_gen = s->gen;
	return id;
}

/* For a consumer of object__alloc that walks the chain in BPF (--stack
 * both): fire stacks__armed with this thread's pointer (NULL while it has
 * none or the frames are not described) and the descriptor when this
 * thread has not yet done so for the current consumer (epoch) or pointer.
 * Before the thread's object__alloc. */
void vt_stacks_announce(void);

/* Send the frames appended since the last flush, the sealed half's first,
 * in STACK batches through buf (which must hold nothing), round as the
 * batch header's; deliver 0: only mark them sent. Under the thread's lock. */
void vt_stacks_flush(struct vt_stacks *s, struct vt_batch_buf *buf, uint32_t round, int deliver);

/* Only the sealed half's frames (the flush thread, woken for them, with
 * round 0: they belong to no round). */
void vt_stacks_flush_sealed(struct vt_stacks *s, struct vt_batch_buf *buf, uint32_t round, int deliver);

/* pend is full: seal it and go on in the other half, if that one is sent
 * (1); else 0, and the caller flushes. The owner, under the lock. */
int vt_stacks_seal(struct vt_stacks *s);

/* Start pend over once everything in it is sent: the owner, under the lock. */
void vt_stacks_rewind(struct vt_stacks *s);

/* A kept chain at top is about to change: forget its id. */
void vt_stacks_forget(struct vt_stacks *s, const void *top);

struct vt_stacks *vt_stacks_new(void);      /* mmap'ed, zero; NULL when out of memory */
void vt_stacks_free(struct vt_stacks *s);

#endif /* VMTRACE_STACKS_H */
