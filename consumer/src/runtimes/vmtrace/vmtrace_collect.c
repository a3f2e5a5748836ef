/*
 * vmtrace_collect.c: a recording of vmtrace's own provider read into a
 * profile: the counting maps' rows named (vmtrace_names.c; an unreadable
 * name is shown by its address and counted, a cut one counted), the stacks
 * joined, GC pauses and the timeline from the ring buffer, signals, the
 * series, the live heap and every Lost counter.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "profile/row_index.h"
#include "runtimes/vmtrace/vmtrace_state.h"
#include "runtimes/vmtrace/vmtrace_events.h"
#include "runtimes/vmtrace/vmtrace_stacks.h"
#include "runtimes/vmtrace/vmtrace_live.h"
#include "runtimes/vmtrace/vmtrace_maps.h"
#include "vmtrace.skel.h"

static const char *const loss_names[VT_LOSS__COUNT] = {
#define VT_X_NAME(e, s) [VT_LOSS_##e] = s,
	VT_LOSS_LIST(VT_X_NAME)
#undef VT_X_NAME
};

/* A name for a row of the report: never NULL; unreadable ones are named by
 * their address and counted in *unreadable, cut ones counted in *cut. */
static const char *name_for(struct vmtrace_state *st, uint64_t ptr, char *fallback, size_t len,
			    uint64_t *unreadable, uint64_t *cut, int *err)
{
	bool was_cut;
	const char *s = vt_names_get(&st->names, ptr, &was_cut, err);

	if (s) {
		*cut += was_cut;
		return s;
	}
	snprintf(fallback, len, "<unreadable 0x%" PRIx64 ">", ptr);
	(*unreadable)++;
	return fallback;
}

int vt_vmtrace_on_gc_event(void *ctx, void *data, size_t size)
{
	struct vmtrace_state *st = ctx;
	struct vt_gc_event *e;

	struct vt_gc_event in;

	if (size < sizeof(struct vt_gc_event))
		return 0;
	memcpy(&in, data, sizeof(in));
	if (in.type == VT_RING_GC) {
		/* counted and kept (if among the longest) now, never logged. The
		 * first collection's bytes are those since tracing began. */
		uint64_t since = in.alloc_total >= st->prev_alloc_total ?
				 in.alloc_total - st->prev_alloc_total : 0;
		struct vt_gc_pause g = { .kind = in.kind, .duration_ns = in.duration_ns,
					 .heap_bytes = in.heap_bytes, .allocated_bytes = since,
					 .at_ns = (int64_t)in.ts_ns, .tid = in.tid };

		st->prev_alloc_total = in.alloc_total;
		vt_adapter_count_pause(&st->a, &g);
		return 0;
	}
	/* the log holds the timeline's events, the most recent ones */
	st->events_replaced += st->a.events.n == st->a.events.limit;
	e = vt_adapter_event_slot(&st->a);
	if (e)
		*e = in;
	return 0;
}

/* A name on the timeline: the rows of the maps count an unreadable one already. */
static const char *event_name(void *ctx, uint64_t ptr, char *fallback, size_t len)
{
	int err = 0;
	const char *s = vt_names_get(&((struct vmtrace_state *)ctx)->names, ptr, NULL, &err);

	if (s)
		return s;
	snprintf(fallback, len, "<unreadable 0x%" PRIx64 ">", ptr);
	return fallback;
}

/* ---- the rows of the counting maps ---- */

/* The frames' readable texts by the provider's pointer, as the stack
 * table's own copies: a recording's stacks name a few thousand texts a
 * million times, and each is looked up and hashed once. */
struct text_memo {
	uint64_t *ptr;               /* 0: an empty slot */
	const char **text;
	bool *cut;                   /* the name was cut: counted again at each use */
	size_t cap, n;
};

struct collect_ctx {
	struct vmtrace_state *st;
	struct vt_profile *out;
	uint64_t unreadable, cut;
	uint64_t stack_cut, stack_missing; /* allocations (samples) */
	int err;
	struct text_memo memo;
	struct vt_series_taking series; /* the timeline's last snapshot, from these rows */
};

static int memo_grow(struct text_memo *m)
{
	size_t cap = m->cap ? 2 * m->cap : 4096, j;
	struct text_memo t = { calloc(cap, sizeof(uint64_t)), calloc(cap, sizeof(char *)),
			       calloc(cap, sizeof(bool)), cap, m->n };

	if (!t.ptr || !t.text || !t.cut) {
		free(t.ptr), free(t.text), free(t.cut);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->ptr[i])
			continue;
		for (j = vt_key_slot(m->ptr[i], cap); t.ptr[j]; j = (j + 1) & (cap - 1))
			;
		t.ptr[j] = m->ptr[i], t.text[j] = m->text[i], t.cut[j] = m->cut[i];
	}
	free(m->ptr), free(m->text), free(m->cut);
	*m = t;
	return 0;
}

static void memo_free(struct text_memo *m)
{
	free(m->ptr), free(m->text), free(m->cut);
	*m = (struct text_memo){ 0 };
}

static const char *frame_name(void *ctx, uint64_t ptr, char *fallback, size_t len)
{
	struct collect_ctx *c = ctx;
	struct text_memo *m = &c->memo;
	const char *s, *own;
	bool was_cut = false;
	size_t j;

	if (ptr && m->cap)
		for (j = vt_key_slot(ptr, m->cap); m->ptr[j]; j = (j + 1) & (m->cap - 1))
			if (m->ptr[j] == ptr) {
				c->cut += m->cut[j];
				return m->text[j];
			}
	s = vt_names_get(&c->st->names, ptr, &was_cut, &c->err);
	if (!s) { /* unreadable: counted at each use, as a row's names are */
		snprintf(fallback, len, "<unreadable 0x%" PRIx64 ">", ptr);
		c->unreadable++;
		return fallback;
	}
	c->cut += was_cut;
	if (!ptr)
		return s;
	own = vt_stack_table_intern(&c->out->stacks, s);
	if (!own || (2 * (m->n + 1) > m->cap && memo_grow(m)))
		return s; /* no room: the text as it is, hashed by the table */
	for (j = vt_key_slot(ptr, m->cap); m->ptr[j]; j = (j + 1) & (m->cap - 1))
		;
	m->ptr[j] = ptr, m->text[j] = own, m->cut[j] = was_cut;
	m->n++;
	return own;
}

static int alloc_row(const void *key, const void *val, void *ctx_)
{
	const struct vt_alloc_key *k = key;
	const struct vt_alloc_val *v = val;
	struct collect_ctx *c = ctx_;
	struct vmtrace_state *st = c->st;
	char f1[40], f2[40], f3[40];
	uint32_t proc = 0;
	const char *kl = name_for(st, k->klass, f1, sizeof(f1), &c->unreadable, &c->cut, &c->err);
	const char *me = name_for(st, k->method, f2, sizeof(f2), &c->unreadable, &c->cut, &c->err);
	const char *si = name_for(st, k->site, f3, sizeof(f3), &c->unreadable, &c->cut, &c->err);

	vt_series_add(&c->series, 0, k->klass, v->count, v->bytes);
	if (c->err)
		return c->err;
	if (!v->samples)
		return 0; /* a key another CPU created but whose update we lost: nothing to add */
	uint32_t sid = 0;
	if ((k->stack & VT_NATIVE_STACK) && (k->stack & VT_BOTH_STACK)) {
		struct vt_both_maps m = { bpf_map__fd(st->skel->maps.both_stacks),
					  &st->vm_stacks,
					  bpf_map__fd(st->skel->maps.native_stack_traces) };
		int err = vt_both_stack_of(&m, k->stack, c->out, st->syms, frame_name, c, v->samples,
					   &sid, &c->stack_cut, &c->stack_missing);
		if (err || c->err)
			return err ? err : c->err;
	} else if (k->stack & VT_NATIVE_STACK) {
		int err = vt_native_stack_of(bpf_map__fd(st->skel->maps.native_stack_traces),
					     k->stack, c->out, st->syms, v->samples, &sid,
					     &c->stack_missing);
		if (err)
			return err;
	} else if (k->stack) {
		int err = vt_vm_stack_of(&st->vm_stacks, k->stack, c->out, frame_name,
					 c, v->samples, &sid, &c->stack_cut, &c->stack_missing);
		if (err || c->err)
			return err ? err : c->err;
	}
	if (st->all) {
		int err = vt_proc_table_proc(&st->procs, vt_proc_slot_of(k->klass), c->out, &proc);

		if (err)
			return err;
	}
	return vt_profile_add_alloc_proc(c->out, proc, kl, me, si, sid, v->count, v->bytes, v->samples);
}

static int free_row(const void *key, const void *val, void *ctx_)
{
	const struct vt_pair_key *k = key;
	const struct vt_count_val *v = val;
	struct collect_ctx *c = ctx_;
	struct vmtrace_state *st = c->st;
	char f1[40];
	const char *kl = name_for(st, k->a, f1, sizeof(f1), &c->unreadable, &c->cut, &c->err);

	vt_series_add(&c->series, 1, k->a, v->count, v->bytes);
	if (c->err)
		return c->err;
	return v->count ? vt_profile_add_free(c->out, kl, v->count, v->bytes) : 0;
}

static int mcr_row(const void *key, const void *val, void *ctx_)
{
	const struct vt_pair_key *k = key;
	const struct vt_count_val *v = val;
	struct collect_ctx *c = ctx_;
	struct vmtrace_state *st = c->st;
	char f1[40], f2[40];
	const char *kl = name_for(st, k->a, f1, sizeof(f1), &c->unreadable, &c->cut, &c->err);
	const char *me = name_for(st, k->b, f2, sizeof(f2), &c->unreadable, &c->cut, &c->err);

	if (c->err)
		return c->err;
	return v->count ? vt_profile_add_method_cache_reset(c->out, kl, me, v->count) : 0;
}

static int ccr_row(const void *key, const void *val, void *ctx_)
{
	const struct vt_pair_key *k = key;
	const struct vt_count_val *v = val;
	struct collect_ctx *c = ctx_;
	struct vmtrace_state *st = c->st;
	char f1[40];
	const char *nm = name_for(st, k->a, f1, sizeof(f1), &c->unreadable, &c->cut, &c->err);

	if (c->err)
		return c->err;
	return v->count ? vt_profile_add_constant_cache_reset(c->out, nm, v->count) : 0;
}

static int gsi_row(const void *key, const void *val, void *ctx_)
{
	const struct vt_pair_key *k = key;
	const struct vt_count_val *v = val;
	struct collect_ctx *c = ctx_;
	struct vmtrace_state *st = c->st;
	char f1[40];
	const char *rs = name_for(st, k->a, f1, sizeof(f1), &c->unreadable, &c->cut, &c->err);

	if (c->err)
		return c->err;
	return v->count ? vt_profile_add_global_serial_inc(c->out, rs, v->count) : 0;
}

/* The pauses BPF counted: every one, where the ring that carries each
 * pause's record to the list may have been full. Their count, sum, max and
 * buckets stand in for the ring's when they hold more. */
static void pauses_counted(const struct vt_stats *s, struct vt_profile *out)
{
	for (int k = 0; k < VT_GC_KIND_SLOTS && k < VT_GC_KINDS; k++) {
		struct vt_gc_stats *g = &out->gc_stats[k];

		if (s->gc_pauses[k] <= g->count)
			continue;
		g->count = s->gc_pauses[k];
		g->total_ns = s->gc_pause_ns[k];
		if (s->gc_pause_max_ns[k] > g->max_ns)
			g->max_ns = s->gc_pause_max_ns[k];
		for (int b = 0; b < VT_HIST_BUCKETS; b++)
			g->hist[b] = b < VT_PAUSE_BUCKETS ? s->gc_pause_hist[k][b] : 0;
	}
}

int vt_vmtrace_collect(void *state, struct vt_profile *out)
{
	struct vmtrace_state *st = state;
	struct collect_ctx c = { .st = st, .out = out };
	static const size_t stats_max[] = { offsetof(struct vt_stats, last_serial),
					    offsetof(struct vt_stats, bus_dropped_total),
					    offsetof(struct vt_stats, gc_pause_max_ns[0]),
					    offsetof(struct vt_stats, gc_pause_max_ns[1]),
					    offsetof(struct vt_stats, gc_pause_max_ns[2]),
					    offsetof(struct vt_stats, gc_pause_max_ns[3]) };
	static const size_t signal_max[] = { offsetof(struct vt_signal_val, latency_max_ns) };
	struct vt_stats stats;
	uint64_t losses[VT_LOSS__COUNT] = { 0 };
	uint64_t timeline_dropped = 0;
	int err;

	/* everything the ring buffer holds now belongs to this collection */
	if (st->syms)
		vt_symbolizer_snapshot(st->syms); /* gone: the last mappings read stay */
	err = vt_adapter_drain(&st->a);
	if (err)
		return err;

	out->sample_period = st->sample_period;
	err = vt_profile_set_meta(out, "vmtrace", st->probes_used, out->target, st->a.pid);
	/* the stacks read whole: a lookup each is a syscall per row (without
	 * the memory for it, they are looked up one by one) */
	if (!err && st->vm_stacks.frames)
		(void)vt_vm_stacks_load(&st->vm_stacks, &st->a, st->skel->maps.stacks);
	/* the names too: a lookup each is a syscall per new pointer (ENOMEM:
	 * those not taken are looked up one by one) */
	if (!err)
		(void)vt_names_load(&st->names, &st->a, st->skel->maps.names);
	/* the rows read here are the timeline's last snapshot too */
	vt_series_begin(&st->series, &c.series);
	if (!err)
		err = vt_adapter_read_hash(&st->a, st->skel->maps.allocs, alloc_row, &c);
	memo_free(&c.memo);
	vt_vm_stacks_drop(&st->vm_stacks);
	if (!err)
		err = vt_adapter_read_hash(&st->a, st->skel->maps.frees, free_row, &c);
	vt_series_end(&c.series);
	if (!err)
		err = vt_adapter_read_hash(&st->a, st->skel->maps.method_cache_resets, mcr_row, &c);
	if (!err)
		err = vt_adapter_read_hash(&st->a, st->skel->maps.constant_cache_resets, ccr_row, &c);
	if (!err)
		err = vt_adapter_read_hash(&st->a, st->skel->maps.global_serial_incs, gsi_row, &c);
	if (err)
		return err;

	err = vt_adapter_read_entry(&st->a, st->skel->maps.stats, 0, &stats, stats_max,
				    sizeof(stats_max) / sizeof(stats_max[0]));
	if (err)
		return err;
	for (int k = 0; k < VT_GC_KIND_SLOTS && k < VT_GC_KINDS; k++)
		out->gc_collections[k] += stats.gc_collections[k];
	if (stats.last_serial > out->last_serial)
		out->last_serial = stats.last_serial;

	err = vt_adapter_add_pauses(&st->a, out);
	if (err)
		return err;
	pauses_counted(&stats, out);
	size_t nev;
	const struct vt_gc_event *ev = vt_adapter_events(&st->a, &nev);

	if (!ev && st->a.events.n)
		return -ENOMEM;
	err = vt_vmtrace_events_add(out, ev, nev, event_name, st, &timeline_dropped);
	if (err)
		return err;

	for (__u32 signo = 0; signo < VT_SIGNALS; signo++) {
		struct vt_signal_val s;

		err = vt_adapter_read_entry(&st->a, st->skel->maps.signals, signo, &s, signal_max, 1);
		if (err)
			return err;
		uint64_t hist[VT_HIST_BUCKETS] = { 0 };

		if (!s.received && !s.handled)
			continue;
		for (int b = 0; b < VT_HIST_BUCKETS && b < VT_LOG2_BUCKETS; b++)
			hist[b] = s.hist[b];
		err = vt_profile_add_signal(out, (int)signo, s.received, s.handled,
					    s.latency_total_ns, s.latency_max_ns, hist);
		if (err)
			return err;
	}

	err = vt_adapter_read_counters(&st->a, st->skel->maps.losses, VT_LOSS__COUNT, losses);
	if (err)
		return err;
	err = vt_series_collect(&st->series, event_name, st, out);
	if (err)
		return err;
	if (st->live) {
		err = vt_live_collect(&st->a, st->skel, st->live_max, st->temp_ns, event_name, st, out);
		if (err)
			return err;
	}
	losses[VT_LOSS_STR_UNREADABLE] += c.unreadable;
	losses[VT_LOSS_BUS_DROPPED] += stats.bus_dropped_total;
	losses[VT_LOSS_TIMELINE_CAP] += timeline_dropped + st->events_replaced;
	losses[VT_LOSS_BATCH_UNFLUSHED] += st->unflushed;
	losses[VT_LOSS_STR_TRUNCATED] += c.cut;
	losses[VT_LOSS_STACK_CUT] += c.stack_cut;
	losses[VT_LOSS_STACK_MISSING] += c.stack_missing;
	/* a process found running made its past before the recording, which
	 * is no loss of it */
	if (!st->spawned)
		losses[VT_LOSS_BEFORE_COUNTING] = 0;
	for (int i = 0; i < VT_LOSS__COUNT; i++) {
		/* why a name took another way than the names map: it was read
		 * all the same, or is counted as unreadable or cut */
		if (i == VT_LOSS_NAMES_MAP_FULL || i == VT_LOSS_STR_FAULT || i == VT_LOSS_STR_LONG)
			continue;
		err = vt_profile_add_lost(out, loss_names[i], losses[i]);
		if (err)
			return err;
	}
	return 0;
}
