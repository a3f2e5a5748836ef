/*
 * pause_maps.h: GC pauses counted in BPF, shared by the BPF programs of the
 * stock runtimes (pauses.bpf.h) and their adapters (vt_adapter_pauses_counted):
 * every timed pause is counted here as well as sent through the adapter's
 * ring, so a full ring loses a pause's record for the list, never its count.
 */
#ifndef VMTRACE_PAUSE_MAPS_H
#define VMTRACE_PAUSE_MAPS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define VT_PAUSE_KINDS 4            /* kinds counted; a power of two for the verifier */
#define VT_PAUSE_LOG2_BUCKETS 32    /* log2 of microseconds, as profile_gc.c buckets pauses */

struct vt_pause_count {             /* per kind, per CPU */
	__u64 count, total_ns;
	__u64 max_ns;                   /* max over CPUs */
	__u64 hist[VT_PAUSE_LOG2_BUCKETS];
};

#endif
