/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pauses.bpf.h: a stock runtime's GC pauses counted in BPF (pause_maps.h),
 * where its collections are counted. Include once per program, after
 * common.bpf.h; call vt_pause_counted() for each timed pause.
 */
#ifndef VMTRACE_PAUSES_BPF_H
#define VMTRACE_PAUSES_BPF_H

#include "runtimes/pause_maps.h"

VT_MAP(pause_counts, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct vt_pause_count, VT_PAUSE_KINDS);

static __always_inline void vt_pause_counted(__u32 kind, __u64 dur)
{
	__u32 k = kind & (VT_PAUSE_KINDS - 1), b = 0;
	struct vt_pause_count *c = bpf_map_lookup_elem(&pause_counts, &k);
	__u64 us = dur / 1000;

	if (!c)
		return;
	c->count += 1;
	c->total_ns += dur;
	if (dur > c->max_ns)
		c->max_ns = dur;
	for (int i = 0; i < VT_PAUSE_LOG2_BUCKETS - 1 && us > 1; i++) {
		us >>= 1;
		b++;
	}
	c->hist[b & (VT_PAUSE_LOG2_BUCKETS - 1)] += 1;
}

#endif
