/*
 * vmtrace_live.h: reading the live heap of vmtrace.bpf.c (live.bpf.h) into
 * a profile (vmtrace_live.c, docs/live.md).
 */
#ifndef VT_VMTRACE_LIVE_H
#define VT_VMTRACE_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include "runtimes/adapter.h"
#include "profile/profile.h"

struct vmtrace_bpf;

/* A name for a target pointer, never NULL (fallback holds unreadable ones). */
typedef const char *(*vt_live_name_fn)(void *ctx, uint64_t ptr, char *fallback, size_t len);

/* Adds the objects alive now (per class, method, site, with their ages),
 * the temporaries and the peak to out; 0 or -errno. */
int vt_live_collect(struct vt_adapter *a, struct vmtrace_bpf *skel, uint64_t max_tracked,
		    uint64_t temp_ns, vt_live_name_fn name, void *name_ctx, struct vt_profile *out);

#endif
