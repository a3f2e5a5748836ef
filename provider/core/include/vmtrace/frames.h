/*
 * frames.h: how a host tells libvmtrace where its VM stack is, so that
 * allocations are counted per whole call stack (docs/stacks.md).
 *
 * A host keeps its own chain of VM frames: each frame points at its
 * caller's, and each thread has one pointer to its innermost frame. The
 * host describes the chain once (vmtrace_frames_describe: the offsets of
 * the caller link, the name and the file/line inside a frame) and tells
 * each thread's pointer (vmtrace_frames_thread). While a consumer holds
 * the stacks__armed probe, each counted allocation walks the chain from
 * that pointer, up to VMTRACE_STACK_MAX_DEPTH frames, and is counted under
 * the stack's id; each stack's frames reach the consumer once, in the
 * alloc__batch batches (kind VMTRACE_BATCH_STACK, <vmtrace/batch.h>).
 *
 * The chain must be whole whenever the thread allocates: link a new frame
 * (its fields written) before storing it in the thread's pointer, and
 * restore the caller before the frame goes away. Names and files are
 * interned strings, like every string the probes carry.
 *
 * Thread safety: vmtrace_frames_describe once, before threads allocate;
 * vmtrace_frames_thread from the thread it names.
 */
#ifndef VMTRACE_FRAMES_H
#define VMTRACE_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VMTRACE_STACK_MAX_DEPTH 128   /* frames kept; deeper stacks are cut (flagged) */
#define VMTRACE_FRAMES_MAGIC 0x46544d56u  /* "VMTF" */
#define VMTRACE_FRAMES_VERSION 1
#define VMTRACE_FRAME_NONE (-1)           /* a field the frame does not have */

/* Where the fields of one host frame are: byte offsets from the frame's
 * address. caller and name are required; file and line may be
 * VMTRACE_FRAME_NONE. */
struct vmtrace_frame_layout {
	int32_t caller;                   /* the caller's frame (a pointer; NULL ends the chain) */
	int32_t name;                     /* const char *: the frame's method, e.g. "Parser#tokenize" */
	int32_t file;                     /* const char *: its file, or VMTRACE_FRAME_NONE */
	int32_t line;                     /* int32_t: its line, or VMTRACE_FRAME_NONE */
};

/* The descriptor as libvmtrace exports it (symbol vmtrace_frames), so a
 * consumer can read and check it in a running process.       (read-only) */
struct vmtrace_frames_desc {
	uint32_t magic;                   /* VMTRACE_FRAMES_MAGIC once described, else 0 */
	uint16_t version;                 /* VMTRACE_FRAMES_VERSION */
	uint16_t max_depth;               /* VMTRACE_STACK_MAX_DEPTH */
	struct vmtrace_frame_layout layout;
};
extern volatile struct vmtrace_frames_desc vmtrace_frames;

/* A consumer writes a new value here (/proc/PID/mem) when it attaches, so
 * every thread sends the frames of its stacks again, to it.      (public) */
extern volatile uint64_t vmtrace_stacks_epoch;

/* Describe the host's frames: 0, or -EINVAL (an offset negative or past
 * 4096, caller or name missing) and nothing changes. */
int vmtrace_frames_describe(const struct vmtrace_frame_layout *layout);

/* The calling thread's innermost-frame pointer lives at *current (the host
 * updates it on every call and return); NULL: this thread has no VM stack. */
void vmtrace_frames_thread(void *const *current);

/* The same for a host that keeps each stack's chain as it is while its
 * innermost frame stays at one address (one chain per stack, not frames
 * pushed and popped in place), and calls vmtrace_frames_changed() before it
 * changes or frees one: libvmtrace then names a stack by that address after
 * its first walk, instead of walking it at every allocation. */
void vmtrace_frames_thread_kept(void *const *current);

/* The calling thread's kept chain whose innermost frame is top is about to
 * change or go (vmtrace_frames_thread_kept). */
void vmtrace_frames_changed(const void *top);

/* For a host that keeps its chains (vmtrace_frames_thread_kept) and keeps in
 * each frame, at byte offset `offset`, a 64-bit hash of that frame's name,
 * file and line and of its caller's hash (so of the whole chain from it
 * out): libvmtrace then names a stack by its innermost frame's hash and
 * never walks the chain to name it. Distinct chains must have distinct
 * hashes. Once, after vmtrace_frames_describe: 0, or -EINVAL (an offset
 * negative or past 4096). */
int vmtrace_frames_hashed(int32_t offset);

/* For hosts with a frame struct:
 * VMTRACE_FRAME_LAYOUT(struct my_frame, caller, name, file, line). */
#define VMTRACE_FRAME_LAYOUT(type, caller_f, name_f, file_f, line_f)                          \
	((struct vmtrace_frame_layout){ (int32_t)offsetof(type, caller_f),                    \
					(int32_t)offsetof(type, name_f),                      \
					(int32_t)offsetof(type, file_f),                      \
					(int32_t)offsetof(type, line_f) })

#ifdef __cplusplus
}
#endif

#endif /* VMTRACE_FRAMES_H */
