/* SPDX-License-Identifier: GPL-2.0 */
/*
 * live.bpf.h: the live heap of vmtrace.bpf.c (--live, docs/live.md).
 *
 * object__alloc puts the object's address into `live_objs` with its
 * allocation key, size, weight and time; object__free takes it out, and
 * counts it as temporary when it lived less than targ_temp_ns. What is left
 * at the end is what is still alive. The map is bounded (--live-max): an
 * object that finds it full is not tracked and is counted in Lost, and so
 * is its free later (it is then "untracked", like objects allocated before
 * tracing began). Live bytes and their peak are one shared counter, added
 * to atomically, so the peak is the true maximum of the sum; a live batch
 * adds its net change once, and its highest point within the batch. The
 * untracked frees of a batch are counted per free: they are rare.
 * In a live batch, most allocations are held by the provider: their bytes
 * come as NET records and their frees as HELD_FREE, counted with no
 * operation on live_objs; only those handed over (TRACK) enter it
 * (vmtrace/batch.h). A batch's temporaries are summed per key before they
 * meet live_temps.
 * Objects the host counts by a word it keeps in each have no addresses:
 * KEY records bring what each key's share of them gained (into live_keys)
 * and the temporaries among them, NET records their bytes, and AGES
 * records the process's last snapshot of their ages (live_ages).
 */
#ifndef VT_LIVE_BPF_H
#define VT_LIVE_BPF_H

const volatile bool targ_live = false;
const volatile __u64 targ_temp_ns = VT_LIVE_DEFAULT_TEMP_NS;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VT_LIVE_DEFAULT_MAX); /* --live-max, set before load */
	/* entries as objects are handed over: with the provider holding the
	 * young ones, few are, and a preallocated 1M would cost every start */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct vt_live_obj);
} live_objs SEC(".maps");

VT_COUNT_MAP(live_temps, struct vt_alloc_key, struct vt_live_temp);
VT_COUNT_MAP(live_keys, struct vt_alloc_key, struct vt_live_key);

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VT_LIVE_AGES_PROCS);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* 512 bytes an entry, mostly one used */
	__type(key, __u32);                  /* tgid */
	__type(value, struct vt_live_ages);
} live_ages SEC(".maps");

VT_MAP(live_stats, BPF_MAP_TYPE_ARRAY, __u32, struct vt_live_stats, 1);

static __always_inline struct vt_live_stats *live_stats_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&live_stats, &zero);
}

/* Track one object; ts: when it was allocated (bpf_ktime_get_ns(), or the
 * provider's CLOCK_MONOTONIC time in a live batch: the same clock). The
 * bytes it adds to the live heap, 0 when it could not be tracked. */
static __always_inline __s64 live_track(__u64 addr, __u64 klass, __u64 method, __u64 site, __u64 size,
					__u64 weight, __u64 ts)
{
	struct vt_live_obj o = { klass, method, site, 0, size, weight, ts };

	if (!targ_live || !addr)
		return 0;
	if (bpf_map_update_elem(&live_objs, &addr, &o, BPF_ANY)) {
		lose(VT_LOSS_LIVE_MAP_FULL);
		return 0;
	}
	return (__s64)(size * weight);
}

/* Add delta to the live bytes; max_rise: the highest the running sum rose
 * above its start within the change, at time max_ns. Two CPUs may both see
 * a new peak: each stores a sum that was true at its moment, so the peak
 * kept is never more than the truth. */
static __always_inline void live_account(__s64 delta, __s64 max_rise, __u64 max_ns)
{
	struct vt_live_stats *ls = live_stats_get();
	__s64 before;

	if (!ls || (!delta && max_rise <= 0))
		return;
	before = __sync_fetch_and_add(&ls->live_bytes, delta);
	if (max_rise > 0 && before + max_rise > 0 && (__u64)(before + max_rise) > ls->peak_bytes) {
		ls->peak_bytes = (__u64)(before + max_rise);
		ls->peak_ns = max_ns;
	}
}

static __always_inline void live_alloc(__u64 addr, __u64 klass, __u64 method, __u64 site, __u64 size,
				       __u64 weight, __u64 ts)
{
	__s64 d = live_track(addr, klass, method, site, size, weight, ts);

	live_account(d, d, ts);
}

/* Add count temporaries of bytes to the key's row; a full map loses the
 * frees they came from (records). */
static __always_inline void live_temp_add(__u64 klass, __u64 method, __u64 site, __u64 count, __u64 bytes,
					  __u64 records)
{
	static const struct vt_live_temp zero;
	struct vt_alloc_key key = { klass, method, site };
	struct vt_live_temp *t;
	enum vt_got got;

	t = vt_get_or_insert(&live_temps, &key, &zero, &got);
	if (t) {
		t->count += count;
		t->bytes += bytes;
	} else {
		lose_n(VT_LOSS_LIVE_TEMP_FULL, records);
	}
}

/* Count a freed object as temporary when it lived less than targ_temp_ns. */
static __always_inline void live_temp(__u64 klass, __u64 method, __u64 site, __u64 weight, __u64 bytes,
				      __u64 age)
{
	if (age < targ_temp_ns)
		live_temp_add(klass, method, site, weight, bytes, 1);
}

/* A live batch's temporaries, summed per key before they meet live_temps:
 * most of a batch's frees are of a few keys, and a map update costs more
 * than the rest of a record. Direct-mapped by class; one per CPU, as
 * batch_scratch, and empty between batches. */
#define LIVE_TEMP_WAYS 8
struct live_temp_sum {
	__u64 klass, method, site;
	__u64 count, bytes;
	__u64 records;               /* 0: empty; else what Lost counts if the map is full */
};
struct live_temp_sums {
	struct live_temp_sum way[LIVE_TEMP_WAYS];
};
VT_MAP(live_temp_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct live_temp_sums, 1);

static __always_inline void live_temp_flush(struct live_temp_sum *e)
{
	if (!e->records)
		return;
	live_temp_add(e->klass, e->method, e->site, e->count, e->bytes, e->records);
	e->records = e->count = e->bytes = 0;
}

/* live_temp, summed in sums (NULL: straight to the map). */
static __always_inline void live_temp_sum(struct live_temp_sums *sums, __u64 klass, __u64 method, __u64 site,
					  __u64 weight, __u64 bytes, __u64 age)
{
	struct live_temp_sum *e;

	if (!sums) {
		live_temp(klass, method, site, weight, bytes, age);
		return;
	}
	if (age >= targ_temp_ns)
		return;
	e = &sums->way[(klass >> 4) & (LIVE_TEMP_WAYS - 1)];
	if (e->records && (e->klass != klass || e->method != method || e->site != site))
		live_temp_flush(e);
	if (!e->records) {
		e->klass = klass;
		e->method = method;
		e->site = site;
	}
	e->count += weight;
	e->bytes += bytes;
	e->records++;
}

static __always_inline void live_temp_flush_all(struct live_temp_sums *sums)
{
	if (!sums)
		return;
	for (int i = 0; i < LIVE_TEMP_WAYS; i++)
		live_temp_flush(&sums->way[i]);
}

/* Stop tracking the object at addr, freed at now: the bytes it took from
 * the live heap (<= 0). */
static __always_inline __s64 live_untrack(__u64 addr, __u64 now)
{
	struct vt_live_obj *o;
	__u64 bytes;

	if (!targ_live || !addr)
		return 0;
	o = bpf_map_lookup_elem(&live_objs, &addr);
	if (!o) {
		struct vt_live_stats *ls = live_stats_get();

		if (ls)
			__sync_fetch_and_add(&ls->untracked_frees, 1);
		return 0;
	}
	bytes = o->size * o->weight;
	live_temp(o->klass, o->method, o->site, o->weight, bytes, now - o->ts_ns);
	bpf_map_delete_elem(&live_objs, &addr);
	return -(__s64)bytes;
}

/* A pair's free (VT_LIVE_PAIR_FREE, VT_LIVE_HELD_FREE): its object never
 * was in live_objs. */
static __always_inline __s64 live_pair_free(struct vt_live_rec *r, struct live_temp_sums *sums)
{
	__u64 bytes = r->size * r->weight;

	if (!targ_live)
		return 0;
	live_temp_sum(sums, r->klass, r->method, r->site, r->weight, bytes, r->time_ns - r->addr);
	return -(__s64)bytes;
}

static __always_inline void live_free(__u64 addr, __u64 now)
{
	live_account(live_untrack(addr, now), 0, 0);
}

/* A KEY record: what a key's word-tracked objects gained, and the
 * temporaries among those freed. Their bytes came in NET records. */
static __always_inline void live_key(const struct vt_live_rec *r)
{
	static const struct vt_live_key zero;
	struct vt_alloc_key key = { r->klass, r->method, r->site };
	struct vt_live_key *k;
	enum vt_got got;

	if (r->addr || r->size) {
		k = vt_get_or_insert(&live_keys, &key, &zero, &got);
		if (k) {
			k->count += (__s64)r->addr;
			k->bytes += (__s64)r->size;
		} else {
			lose(VT_LOSS_LIVE_KEYS_FULL);
		}
	}
	/* the temporaries of many frees: a full map loses them all */
	if (r->weight)
		live_temp_add(r->klass, r->method, r->site, r->weight, r->time_ns, r->weight);
}

/* An AGES record: one bucket of the process's snapshot; the first record
 * of a snapshot starts it from zero. */
static __always_inline void live_ages_set(const struct vt_live_rec *r)
{
	static const struct vt_live_ages zero;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct vt_live_ages *a;
	enum vt_got got;

	if (r->weight == 1) {
		if (bpf_map_update_elem(&live_ages, &tgid, &zero, BPF_ANY)) {
			lose(VT_LOSS_LIVE_AGES_FULL);
			return;
		}
		a = bpf_map_lookup_elem(&live_ages, &tgid);
	} else {
		a = vt_get_or_insert(&live_ages, &tgid, &zero, &got);
	}
	if (!a) {
		lose(VT_LOSS_LIVE_AGES_FULL);
		return;
	}
	a->hist[r->addr & (VT_LOG2_BUCKETS - 1)] = r->size;
}

/* bpf_loop's body: record i of a live batch (live_batch_walk). */
struct live_walk {
	char *b;
	struct live_temp_sums *temps; /* NULL: each temporary to live_temps at once */
	__s64 sum, max_rise;         /* the batch's running change of live bytes, its highest */
	__u64 max_ns;
};

static long live_record(__u32 i, void *ctx)
{
	struct live_walk *w = ctx;
	__u64 off = sizeof(struct vt_batch_hdr) + (__u64)i * sizeof(struct vt_live_rec);
	struct vt_live_rec *r;

	if (off > VT_BATCH_MAX_BYTES - sizeof(struct vt_live_rec))
		return 1;
	r = (struct vt_live_rec *)(w->b + off);
	if (r->op == VT_LIVE_ALLOC || r->op == VT_LIVE_PAIR_ALLOC) {
		if (r->op == VT_LIVE_ALLOC)
			w->sum += live_track(r->addr, r->klass, r->method, r->site, r->size, r->weight,
					     r->time_ns);
		else if (targ_live)
			w->sum += (__s64)(r->size * r->weight);
		if (w->sum > w->max_rise) {
			w->max_rise = w->sum;
			w->max_ns = r->time_ns;
		}
	} else if (r->op == VT_LIVE_FREE) {
		w->sum += live_untrack(r->addr, r->time_ns);
	} else if (r->op == VT_LIVE_PAIR_FREE) {
		w->sum += live_pair_free(r, w->temps);
	} else if (r->op == VT_LIVE_HELD_FREE) {
		live_pair_free(r, w->temps); /* its bytes come in a NET */
	} else if (r->op == VT_LIVE_NET && targ_live) {
		if (w->sum + (__s64)r->size > w->max_rise) {
			w->max_rise = w->sum + (__s64)r->size;
			w->max_ns = r->time_ns;
		}
		w->sum += (__s64)r->addr;
	} else if (r->op == VT_LIVE_TRACK && targ_live) {
		/* its bytes came with its PAIR_ALLOC: take them back if it
		 * cannot be tracked, so the live bytes stay what is tracked */
		w->sum += live_track(r->addr, r->klass, r->method, r->site, r->size, r->weight, r->time_ns) -
			  (__s64)(r->size * r->weight);
	} else if (r->op == VT_LIVE_KEY && targ_live) {
		live_key(r);
	} else if (r->op == VT_LIVE_AGES && targ_live) {
		live_ages_set(r);
	} else if (r->op > VT_LIVE_AGES) {
		/* a newer provider's op: its bytes would go uncounted, so say so */
		lose(VT_LOSS_LIVE_BAD_OP);
	}
	return 0;
}

#endif /* VT_LIVE_BPF_H */
