/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vm_events.bpf.h: the programs of vmtrace.bpf.c for the VM's events other
 * than allocations and frees: method and constant cache resets, the global
 * serial, GC begin and end, signals, bus drops and sample__armed. Counts go
 * into per-CPU maps; GC pauses, cache resets and handled signals also go to
 * the timeline ring (one record each), which a full ring only costs (counted).
 * Records go in without a wakeup: a wakeup costs the target an IPI, several
 * microseconds at each of a young heap's thousand collections a second, and
 * the consumer drains the ring at every poll anyway.
 * Included once, at the end of vmtrace.bpf.c, after the maps it uses.
 */
/* A timeline record of a cache reset or a handled signal; the counts live in
 * the maps, so a full ring only costs the timeline (counted). */
static __always_inline struct vt_gc_event *timeline(__u32 type)
{
	struct vt_gc_event *ev;

	if (!targ_events)
		return NULL; /* nobody shows a timeline (serve) */
	ev = bpf_ringbuf_reserve(&gc_events, sizeof(*ev), 0);
	if (!ev) {
		lose(VT_LOSS_TIMELINE_RINGBUF_FULL);
		return NULL;
	}
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->type = type;
	ev->tid = vt_tid();
	ev->ts_ns = bpf_ktime_get_ns();
	return ev; /* the caller fills in the rest and submits */
}

SEC("usdt")
int BPF_USDT(on_method_cache_reset, void *klass, void *method, __u64 serial)
{
	struct vt_gc_event *ev;
	__u64 k = (__u64)klass, m = (__u64)method;

	if (!in_target() || (targ_all && !all_qualify(&k, &m, NULL)))
		return 0;
	count_pair(&method_cache_resets, k, m, VT_LOSS_MCR_MAP_FULL);
	ev = timeline(VT_RING_METHOD_CACHE_RESET);
	if (ev) {
		ev->heap_bytes = k;
		ev->alloc_total = m;
		ev->serial = serial;
		bpf_ringbuf_submit(ev, BPF_RB_NO_WAKEUP);
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(on_constant_cache_reset, void *name, __u64 serial)
{
	struct vt_gc_event *ev;
	__u64 n = (__u64)name;

	if (!in_target() || (targ_all && !all_qualify(&n, NULL, NULL)))
		return 0;
	count_pair(&constant_cache_resets, n, 0, VT_LOSS_CCR_MAP_FULL);
	ev = timeline(VT_RING_CONSTANT_CACHE_RESET);
	if (ev) {
		ev->heap_bytes = n;
		ev->serial = serial;
		bpf_ringbuf_submit(ev, BPF_RB_NO_WAKEUP);
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(on_global_serial_inc, __u64 serial, void *reason)
{
	struct vt_stats *st;
	__u64 r = (__u64)reason;

	if (!in_target() || (targ_all && !all_qualify(&r, NULL, NULL)))
		return 0;
	st = my_stats();
	if (st && serial > st->last_serial)
		st->last_serial = serial;
	count_pair(&global_serial_incs, r, 0, VT_LOSS_GSI_MAP_FULL);
	return 0;
}

SEC("usdt")
int BPF_USDT(on_gc_begin, int kind, __u64 heap_bytes)
{
	struct vt_gc_start start = { .start_ns = bpf_ktime_get_ns(), .kind = kind };
	__u32 tid = vt_tid();

	if (!in_target())
		return 0;
	if (bpf_map_update_elem(&gc_starts, &tid, &start, BPF_ANY))
		lose(VT_LOSS_GC_THREAD_MAP_FULL);
	return 0;
}

/* Bytes allocated so far, all CPUs: a collection is rare, so summing the
 * per-CPU counters here costs nothing where it matters. */
static __always_inline __u64 alloc_total(void)
{
	__u64 total = 0;
	__u32 zero = 0;

	for (__u32 cpu = 0; cpu < VT_MAX_CPUS && cpu < nr_cpus; cpu++) {
		struct vt_stats *st = bpf_map_lookup_percpu_elem(&stats, &zero, cpu);

		if (st)
			total += st->alloc_bytes;
	}
	return total;
}

SEC("usdt")
int BPF_USDT(on_gc_end, int kind, __u64 heap_bytes)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tid = vt_tid();
	struct vt_gc_start *start;
	struct vt_gc_event *ev;
	struct vt_stats *st;

	if (!in_target())
		return 0;
	st = my_stats();
	if ((__u32)kind >= VT_GC_KIND_SLOTS)
		lose(VT_LOSS_BAD_GC_KIND);
	else if (st)
		st->gc_collections[(__u32)kind & 3] += 1; /* the mask keeps the verifier sure */

	start = bpf_map_lookup_elem(&gc_starts, &tid);
	if (!start) {
		lose(VT_LOSS_GC_NO_BEGIN);
		return 0;
	}
	if (st && (__u32)kind < VT_GC_KIND_SLOTS) {
		__u64 dur = now - start->start_ns, us = dur / 1000;
		__u32 k = (__u32)kind & 3, b = 0;

		st->gc_pauses[k] += 1;
		st->gc_pause_ns[k] += dur;
		if (dur > st->gc_pause_max_ns[k])
			st->gc_pause_max_ns[k] = dur;
		for (int i = 0; i < VT_PAUSE_BUCKETS - 1 && us > 1; i++) {
			us >>= 1;
			b++;
		}
		st->gc_pause_hist[k][b & (VT_PAUSE_BUCKETS - 1)] += 1;
	}
	ev = bpf_ringbuf_reserve(&gc_events, sizeof(*ev), 0);
	if (!ev) {
		lose(VT_LOSS_GC_RINGBUF_FULL);
	} else {
		ev->type = VT_RING_GC;
		ev->tid = tid;
		ev->ts_ns = start->start_ns;
		ev->kind = kind;
		ev->pad = 0;
		ev->duration_ns = now - start->start_ns;
		ev->heap_bytes = heap_bytes;
		ev->alloc_total = alloc_total();
		ev->serial = 0;
		bpf_ringbuf_submit(ev, BPF_RB_NO_WAKEUP);
	}
	bpf_map_delete_elem(&gc_starts, &tid);
	return 0;
}

static __always_inline struct vt_signal_val *signal_slot(int signo)
{
	__u32 key = (__u32)signo;

	if (signo < 0 || signo >= VT_SIGNALS) {
		lose(VT_LOSS_BAD_SIGNO);
		return NULL;
	}
	return bpf_map_lookup_elem(&signals, &key);
}

SEC("usdt")
int BPF_USDT(on_signal_received, int signo)
{
	struct vt_signal_val *s;

	if (!in_target())
		return 0;
	s = signal_slot(signo);
	if (s)
		s->received += 1;
	return 0;
}

static __always_inline __u32 log2_bucket(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) r += 1;
	return r;
}

SEC("usdt")
int BPF_USDT(on_signal_handled, int signo, __u64 latency_ns)
{
	struct vt_gc_event *ev;
	struct vt_signal_val *s;
	__u32 b;

	if (!in_target())
		return 0;
	s = signal_slot(signo);
	if (!s)
		return 0;
	s->handled += 1;
	s->latency_total_ns += latency_ns;
	if (latency_ns > s->latency_max_ns)
		s->latency_max_ns = latency_ns;
	b = log2_bucket(latency_ns);
	s->hist[b & (VT_LOG2_BUCKETS - 1)] += 1; /* b < 64 already; the mask tells the verifier */
	ev = timeline(VT_RING_SIGNAL);
	if (ev) {
		ev->kind = signo;
		ev->duration_ns = latency_ns;
		bpf_ringbuf_submit(ev, BPF_RB_NO_WAKEUP);
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(on_bus_dropped, int event_kind, __u64 total_dropped)
{
	struct vt_stats *st;

	if (!in_target())
		return 0;
	st = my_stats();
	if (st && total_dropped > st->bus_dropped_total)
		st->bus_dropped_total = total_dropped;
	return 0;
}

/* Never does anything: holding this probe's semaphore is what tells the
 * provider that a consumer wants sampled allocations (docs/sampling.md). */
SEC("usdt")
int BPF_USDT(on_sample_armed, __u64 period_bytes)
{
	return 0;
}
