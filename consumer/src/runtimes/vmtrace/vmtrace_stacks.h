/*
 * vmtrace_stacks.h: VM stacks from a host that embeds libvmtrace
 * (docs/stacks.md): checking the frame descriptor the host exported, and
 * turning the BPF `stacks` map's ids into the profile's stacks.
 */
#ifndef VMTRACE_VMTRACE_STACKS_H
#define VMTRACE_VMTRACE_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtimes/adapter.h"
#include "process/native_symbols.h"
#include "profile/profile.h"
#include "runtimes/runtime.h"
#include "process/usdt_notes.h"

/* Check the frame descriptor (vmtrace_frames) of a running pid and ask its
 * threads to send their stacks' frames again (vmtrace_stacks_epoch). A
 * command not yet started has nothing to check (spawned). 0, or a negative
 * errno with a one-line reason in errbuf, naming --stack MODE. */
int vt_vm_stacks_prepare(pid_t pid, const struct vt_usdt_list *probes, bool spawned, const char *mode,
			 char *errbuf, size_t errlen);

/* A pointer's name for a frame: never NULL (fallback holds len bytes). */
typedef const char *vt_frame_name_fn(void *ctx, uint64_t ptr, char *fallback, size_t len);

struct vt_stack_frame;
struct vt_stack_ref;

/* Where VM stacks are: the `stacks` map (id -> struct vt_stack_ref) and
 * stack_frames, mapped into this process. */
struct vt_vm_stacks {
	int refs;                    /* fd of `stacks` */
	const struct vt_stack_frame *frames;
	uint64_t nframes;
	/* `stacks` read whole (vt_vm_stacks_load), by id; NULL: looked up */
	uint64_t *ids;               /* 0: an empty slot (no stack has id 0) */
	struct vt_stack_ref *held;
	size_t cap;
};

/* Map the stack_frames map at fd (nframes entries) read-only into s, with
 * refs_fd: 0 or a negative errno. */
int vt_vm_stacks_map(struct vt_vm_stacks *s, int refs_fd, int frames_fd, uint64_t nframes);
void vt_vm_stacks_unmap(struct vt_vm_stacks *s);
/* Read the whole `stacks` map (refs, through a's batched reads) into s at
 * once, so naming a collection's rows costs no lookup each (a recording's
 * rows name tens of thousands of stacks); vt_vm_stacks_drop lets it go. 0
 * or a negative errno (then nothing is held, and each stack is looked up). */
int vt_vm_stacks_load(struct vt_vm_stacks *s, struct vt_adapter *a, struct bpf_map *refs);
void vt_vm_stacks_drop(struct vt_vm_stacks *s);

/* Stack id (a key of s's `stacks`) as a stack of out:
 * *sid its number. A stack cut at the walk's depth adds samples to *cut; one
 * whose frames never reached the map is the one frame "[stack lost]" and
 * adds samples to *missing. 0 or -ENOMEM. */
int vt_vm_stack_of(const struct vt_vm_stacks *s, uint64_t id, struct vt_profile *out, vt_frame_name_fn *name,
		   void *ctx, uint64_t samples, uint32_t *sid, uint64_t *cut, uint64_t *missing);

/* --stack vm: check the host's frame descriptor (vt_vm_stacks_prepare),
 * then attach prog to stacks__armed, whose semaphore makes the provider
 * walk the VM stack at each batched allocation. 0, or a negative errno
 * with the reason in errbuf. */
int vt_vm_stacks_arm(struct vt_adapter *a, struct bpf_program *prog, const struct vt_opts *opts,
		     const char **path, char *errbuf, size_t errlen);

/* Native stack id (a key of the native stacks map at fd: instruction
 * pointers, innermost first) as a stack of out, named by syms. One the map
 * does not hold is "[stack lost]", adding samples to *missing. */
int vt_native_stack_of(int fd, uint64_t id, struct vt_profile *out, struct vt_symbolizer *syms,
		       uint64_t samples, uint32_t *sid, uint64_t *missing);

/* --stack both: the maps a pair's parts are found in (fds). */
struct vt_both_maps {
	int both;                    /* both_stacks: pair id -> (VM id, native id) */
	const struct vt_vm_stacks *vm;
	int native;                  /* native_stack_traces */
};

/* A pair id (VT_NATIVE_STACK | VT_BOTH_STACK) as one stack of out: its
 * native frames, root first, then its VM frames, at most VT_STACK_MAX_DEPTH
 * (the outermost native frames go first, and the stack is cut). A part
 * the maps do not hold makes it "[stack lost]" (*missing); a cut one adds
 * samples to *cut. 0 or -ENOMEM. */
int vt_both_stack_of(const struct vt_both_maps *m, uint64_t id, struct vt_profile *out,
		     struct vt_symbolizer *syms, vt_frame_name_fn *name, void *ctx, uint64_t samples,
		     uint32_t *sid, uint64_t *cut, uint64_t *missing);

/* Read the target's mappings again when *last is 100 ms old or more. */
void vt_native_maps_refresh(struct vt_symbolizer *syms, struct timespec *last);

#endif /* VMTRACE_VMTRACE_STACKS_H */
