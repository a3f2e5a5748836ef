/*
 * vmtrace_events.h: the ring buffer records of vmtrace's BPF program
 * (struct vt_gc_event, vmtrace_maps.h) turned into the profile's timeline
 * events, apart from runtime_vmtrace.c, which collects them.
 */
#ifndef VMTRACE_VMTRACE_EVENTS_H
#define VMTRACE_VMTRACE_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "runtimes/vmtrace/vmtrace_maps.h"

/* The name behind a pointer of the target: never NULL (fallback, of len
 * bytes, may hold the answer). */
typedef const char *vt_name_fn(void *ctx, uint64_t ptr, char *fallback, size_t len);

/* Adds ev[0..n-1] to out, in order, as timeline events while out holds
 * fewer than VT_TIMELINE_MAX (GC records are skipped: the adapter counts
 * and keeps pauses as they arrive, vt_adapter_count_pause); *dropped
 * counts those beyond. Times stay in the kernel's clock (bpf_ktime_get_ns);
 * the session makes them relative. 0 or -ENOMEM. */
int vt_vmtrace_events_add(struct vt_profile *out, const struct vt_gc_event *ev, size_t n,
			  vt_name_fn *name, void *ctx, uint64_t *dropped);

#endif /* VMTRACE_VMTRACE_EVENTS_H */
