/*
 * vmtrace_names.h: the names behind the target's string pointers, for the
 * vmtrace adapter. They come, in order, from the cache here, the BPF names
 * map (up to VT_NAME_MAX - 1 bytes), the BPF long-name map (up to
 * VT_LONG_NAME_MAX - 2 bytes, read while the target ran) and the target's
 * memory through /proc/PID/mem (up to VT_NAMES_READ_MAX - 1 bytes, while it
 * lives). A name longer than what could be read ends in VT_NAMES_CUT.
 */
#ifndef VT_VMTRACE_NAMES_H
#define VT_VMTRACE_NAMES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtimes/name_cache.h"
#include "runtimes/proc_table.h"

#define VT_NAMES_READ_MAX 65536      /* longest name read from /proc/PID/mem, NUL included */
#define VT_NAMES_CUT "...(truncated)"

struct vt_names {
	pid_t pid;
	int mem_fd;                  /* /proc/PID/mem: -1 until first needed or when unopenable */
	int names_fd, long_names_fd, unresolved_fd; /* the BPF maps */
	struct vt_proc_table *procs; /* record --all: pointers carry their process's slot */
	pid_t mem_pid;               /* whose memory mem_fd is */
	struct name_cache cache;
};

void vt_names_init(struct vt_names *n, pid_t pid, int names_fd, int long_names_fd,
		   int unresolved_fd);
void vt_names_free(struct vt_names *n);
/* record --all: each pointer names a string of the process of its slot. */
void vt_names_set_procs(struct vt_names *n, struct vt_proc_table *procs);       /* after init; twice is harmless */

/* The name behind ptr ("" for 0), or NULL while nobody can read it (*err
 * set on ENOMEM). *cut (may be NULL) tells whether it ends in VT_NAMES_CUT. */
const char *vt_names_get(struct vt_names *n, uint64_t ptr, bool *cut, int *err);

/* Takes every name the BPF names map holds into the cache, in a few batched
 * reads: a collection otherwise looks each new pointer up with a syscall
 * of its own (thousands at a recording's end). 0, or a negative errno
 * (the names are then looked up one by one, as before). */
struct vt_adapter;
struct bpf_map;
int vt_names_load(struct vt_names *n, struct vt_adapter *a, struct bpf_map *names_map);

/* Reads now, while the target lives, the names the kernel queued as
 * unreadable in BPF, and empties the queue. */
void vt_names_drain(struct vt_names *n);

#endif
