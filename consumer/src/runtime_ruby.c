/*
 * runtime_ruby.c: the adapter for Ruby's own USDT probes (provider "ruby",
 * in libruby.so or a static ruby binary), with no change to Ruby.
 *
 * Allocations: object__create and string/array/hash__create, per (class,
 * innermost Ruby-level method, file:line). Ruby's probes carry no object
 * size, so bytes are 0.
 *
 * Methods: method__entry/method__return maintain a per-thread stack in BPF
 * (bpf/ruby.bpf.c); cmethod__* are left out so C methods (Class#new, ...)
 * never replace the Ruby method that called them. Since Ruby 2.5 these two
 * probes fire only while some TracePoint on :call/:return is enabled in the
 * process (Ruby bug #14582); when they stay silent the allocations are
 * counted with no method and the loss row below says why. --no-methods
 * leaves them out: class and site only, no trap per call.
 *
 * GC: the profile's kind 0 is Ruby's mark phase (gc__mark__begin/end) and
 * kind 1 its sweep phase (gc__sweep__begin/end); gc_collections[0] counts
 * mark phases (one per GC cycle), gc_collections[1] sweep steps (lazy
 * sweeping runs several per cycle). Each completed phase is one pause.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "percpu.h"
#include "profile.h"
#include "runtime.h"
#include "../bpf/ruby_maps.h"
#include "ruby.skel.h"

#define PROVIDER "ruby"
#define DEFAULT_MAP_ENTRIES 10240
#define BATCH_ROWS 256
#define MAX_LINKS 16

static const char *const loss_names[] = {
	[VT_RB_L_UNREADABLE] = "unreadable string",
	[VT_RB_L_TRUNCATED] = "name truncated",
	[VT_RB_L_MAP_FULL] = "alloc map full",
	[VT_RB_L_THREADS_FULL] = "thread map full (methods unknown)",
	[VT_RB_L_STACK_DEEP] = "method deeper than the frame ring",
	[VT_RB_L_GC_UNPAIRED] = "gc phase end without begin",
	[VT_RB_L_GC_BUF_FULL] = "gc pause buffer full",
};

struct ruby_state {
	struct ruby_bpf *skel;
	struct bpf_link *links[MAX_LINKS];
	size_t nlinks;
	struct ring_buffer *rb;
	pid_t pid;
	int ncpus;
	bool methods;
	char probes_used[512];
	struct {
		struct vt_gc_pause *v;
		size_t n, cap;
		int err;
	} pauses;
	void *keys, *vals;
};

static int on_gc_event(void *ctx, void *data, size_t size)
{
	struct ruby_state *st = ctx;
	const struct vt_rb_gc_event *e = data;

	if (size < sizeof(*e))
		return 0;
	if (st->pauses.n == st->pauses.cap) {
		size_t ncap = st->pauses.cap ? st->pauses.cap * 2 : 256;
		struct vt_gc_pause *v = realloc(st->pauses.v, ncap * sizeof(*v));

		if (!v) {
			st->pauses.err = -ENOMEM;
			return 0;
		}
		st->pauses.v = v;
		st->pauses.cap = ncap;
	}
	st->pauses.v[st->pauses.n++] = (struct vt_gc_pause){
		.kind = (int)e->phase,
		.duration_ns = e->duration_ns,
	};
	return 0;
}

/* Fixed-size key field -> C string (the BPF side NUL-terminates, but a
 * field is never trusted to). */
static void field(char *dst, size_t dlen, const char *src, size_t slen)
{
	size_t n = strnlen(src, slen);

	if (n >= dlen)
		n = dlen - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static int add_alloc_row(struct vt_profile *out, const struct vt_rb_alloc_key *k, uint64_t count)
{
	char klass[VT_RB_NAME], mklass[VT_RB_NAME], meth[VT_RB_NAME], file[VT_RB_FILE];
	char method[2 * VT_RB_NAME + 2], site[VT_RB_FILE + 16];

	field(klass, sizeof(klass), k->klass, sizeof(k->klass));
	field(mklass, sizeof(mklass), k->mklass, sizeof(k->mklass));
	field(meth, sizeof(meth), k->method, sizeof(k->method));
	field(file, sizeof(file), k->file, sizeof(k->file));
	if (meth[0] && mklass[0])
		snprintf(method, sizeof(method), "%s#%s", mklass, meth);
	else
		snprintf(method, sizeof(method), "%s", meth);
	if (file[0])
		snprintf(site, sizeof(site), "%s:%u", file, k->line);
	else
		site[0] = '\0';
	return vt_profile_add_alloc(out, klass, method, site, count, 0, count);
}

static int read_allocs(struct ruby_state *st, struct vt_profile *out)
{
	int fd = bpf_map__fd(st->skel->maps.allocs);
	size_t stride = vt_percpu_stride(sizeof(struct vt_rb_alloc_val));
	__u64 in_tok = 0, out_tok = 0;
	bool first = true;
	LIBBPF_OPTS(bpf_map_batch_opts, opts);

	for (;;) {
		__u32 count = BATCH_ROWS;
		int err = bpf_map_lookup_batch(fd, first ? NULL : &in_tok, &out_tok,
					       st->keys, st->vals, &count, &opts);

		if (err && err != -ENOENT)
			return err;
		for (__u32 i = 0; i < count; i++) {
			const struct vt_rb_alloc_key *k = (const struct vt_rb_alloc_key *)st->keys + i;
			const unsigned char *v = (const unsigned char *)st->vals +
						 (size_t)i * stride * (size_t)st->ncpus;
			struct vt_rb_alloc_val sum;
			int aerr;

			vt_percpu_merge(v, sizeof(sum), st->ncpus, &sum, NULL, 0);
			if (!sum.count)
				continue;
			aerr = add_alloc_row(out, k, sum.count);
			if (aerr)
				return aerr;
		}
		if (err == -ENOENT)
			return 0;
		in_tok = out_tok;
		first = false;
	}
}

static int read_counters(struct ruby_state *st, uint64_t c[VT_RB_COUNTERS])
{
	int fd = bpf_map__fd(st->skel->maps.counters);
	size_t stride = vt_percpu_stride(sizeof(__u64));
	unsigned char *buf = malloc(stride * (size_t)st->ncpus);

	if (!buf)
		return -ENOMEM;
	for (__u32 i = 0; i < VT_RB_COUNTERS; i++) {
		if (bpf_map_lookup_elem(fd, &i, buf)) {
			int err = -errno;

			free(buf);
			return err;
		}
		vt_percpu_merge(buf, sizeof(__u64), st->ncpus, &c[i], NULL, 0);
	}
	free(buf);
	return 0;
}

static int ruby_collect(void *state, struct vt_profile *out)
{
	struct ruby_state *st = state;
	uint64_t c[VT_RB_COUNTERS] = { 0 };
	int err;

	ring_buffer__consume(st->rb);
	if (st->pauses.err)
		return st->pauses.err;
	err = vt_profile_set_meta(out, "ruby", st->probes_used, out->target, st->pid);
	if (err)
		return err;
	out->has_allocations = true;
	err = read_allocs(st, out);
	if (!err)
		err = read_counters(st, c);
	if (err)
		return err;

	out->gc_collections[VT_RB_GC_MARK] += c[VT_RB_C_GC_MARK];
	out->gc_collections[VT_RB_GC_SWEEP] += c[VT_RB_C_GC_SWEEP];
	for (size_t i = 0; i < st->pauses.n; i++) {
		err = vt_profile_add_gc_pause(out, &st->pauses.v[i]);
		if (err)
			return err;
	}

	for (int i = VT_RB_L_UNREADABLE; i < VT_RB_COUNTERS; i++) {
		err = vt_profile_add_lost(out, loss_names[i], c[i]);
		if (err)
			return err;
	}
	/* Ruby >= 2.5 fires method__entry only under a TracePoint(:call) */
	if (st->methods)
		err = vt_profile_add_lost(out, "allocations with method probes silent "
					  "(the target needs a TracePoint on :call, :return)",
					  c[VT_RB_C_METHOD_ENTRIES] ? 0 : c[VT_RB_C_ALLOCS]);
	return err;
}

static int ruby_poll(void *state, int timeout_ms)
{
	struct ruby_state *st = state;
	/* the BPF side submits without a wakeup (a wakeup costs the target
	 * microseconds per GC phase): wait out the slice, then drain */
	int n = ring_buffer__poll(st->rb, timeout_ms);

	if (n >= 0)
		n = ring_buffer__consume(st->rb);
	if (n < 0)
		return n;
	return st->pauses.err;
}

static void ruby_close(void *state)
{
	struct ruby_state *st = state;

	if (!st)
		return;
	for (size_t i = st->nlinks; i-- > 0;)
		bpf_link__destroy(st->links[i]);
	ring_buffer__free(st->rb);
	ruby_bpf__destroy(st->skel);
	free(st->pauses.v);
	free(st->keys);
	free(st->vals);
	free(st);
}

static bool permission_error(int err)
{
	return err == -EPERM || err == -EACCES;
}

/* The module holding the ruby provider (libruby.so, or ruby itself when
 * linked statically), as the target maps it. */
static const char *ruby_module(const struct vt_usdt_list *pl)
{
	for (size_t i = 0; pl && i < pl->n; i++)
		if (pl->v[i].provider && strcmp(pl->v[i].provider, PROVIDER) == 0 &&
		    pl->v[i].name && strcmp(pl->v[i].name, "object__create") == 0)
			return pl->v[i].path;
	return NULL;
}

static bool has_probe(const struct vt_usdt_list *pl, const char *path, const char *name)
{
	for (size_t i = 0; i < pl->n; i++)
		if (strcmp(pl->v[i].provider, PROVIDER) == 0 && strcmp(pl->v[i].name, name) == 0 &&
		    strcmp(pl->v[i].path, path) == 0)
			return true;
	return false;
}

static int ruby_open(const struct vt_attach_opts *opts, void **state, char *errbuf, size_t errlen)
{
	struct ruby_state *st;
	const char *path = ruby_module(opts->probes);
	int err;

	*state = NULL;
	if (opts->sample_period) {
		snprintf(errbuf, errlen, "--sample: Ruby's probes carry no sampling weight "
			 "(sampling needs vmtrace's provider)");
		return -ENOTSUP;
	}
	if (!path) {
		snprintf(errbuf, errlen, "pid %d has no ruby:object__create probe (is libruby built "
			 "with --enable-dtrace?)", (int)opts->pid);
		return -ENOENT;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->pid = opts->pid;
	st->methods = !opts->no_methods;
	st->ncpus = libbpf_num_possible_cpus();
	if (st->ncpus <= 0) {
		err = st->ncpus ? st->ncpus : -EINVAL;
		snprintf(errbuf, errlen, "cannot count the CPUs: %s", strerror(-err));
		goto fail;
	}

	st->skel = ruby_bpf__open();
	if (!st->skel) {
		err = errno ? -errno : -EINVAL;
		snprintf(errbuf, errlen, "cannot open the BPF object: %s", strerror(-err));
		goto fail;
	}
	st->skel->rodata->track_methods = st->methods;
	bpf_map__set_max_entries(st->skel->maps.allocs,
				 opts->map_entries ? opts->map_entries : DEFAULT_MAP_ENTRIES);
	err = ruby_bpf__load(st->skel);
	if (err) {
		if (permission_error(err))
			snprintf(errbuf, errlen, "BPF not permitted (run as root or with CAP_BPF+CAP_PERFMON)");
		else
			snprintf(errbuf, errlen, "cannot load the BPF programs: %s", strerror(-err));
		goto fail;
	}
	st->keys = malloc(sizeof(struct vt_rb_alloc_key) * BATCH_ROWS);
	st->vals = malloc(vt_percpu_stride(sizeof(struct vt_rb_alloc_val)) * (size_t)st->ncpus *
			  BATCH_ROWS);
	st->rb = ring_buffer__new(bpf_map__fd(st->skel->maps.gc_events), on_gc_event, st, NULL);
	if (!st->keys || !st->vals || !st->rb) {
		err = -ENOMEM;
		snprintf(errbuf, errlen, "out of memory");
		goto fail;
	}

	const struct {
		const char *probe;
		struct bpf_program *prog;
		__u64 cookie;
		bool method;         /* left out by --no-methods */
	} table[] = {
		{ "object__create", st->skel->progs.rb_object_create, 0, false },
		{ "string__create", st->skel->progs.rb_builtin_create, VT_RB_STRING, false },
		{ "array__create", st->skel->progs.rb_builtin_create, VT_RB_ARRAY, false },
		{ "hash__create", st->skel->progs.rb_builtin_create, VT_RB_HASH, false },
		{ "method__entry", st->skel->progs.rb_method_entry, 0, true },
		{ "method__return", st->skel->progs.rb_method_return, 0, true },
		{ "gc__mark__begin", st->skel->progs.rb_gc_begin, VT_RB_GC_MARK, false },
		{ "gc__mark__end", st->skel->progs.rb_gc_end, VT_RB_GC_MARK, false },
		{ "gc__sweep__begin", st->skel->progs.rb_gc_begin, VT_RB_GC_SWEEP, false },
		{ "gc__sweep__end", st->skel->progs.rb_gc_end, VT_RB_GC_SWEEP, false },
	};
	size_t used = 0;

	for (size_t t = 0; t < sizeof(table) / sizeof(table[0]); t++) {
		LIBBPF_OPTS(bpf_usdt_opts, uopts, .usdt_cookie = table[t].cookie);
		struct bpf_link *link;

		if (table[t].method && !st->methods)
			continue;
		if (!has_probe(opts->probes, path, table[t].probe))
			continue;
		link = bpf_program__attach_usdt(table[t].prog, opts->pid, path, PROVIDER,
						table[t].probe, &uopts);
		err = libbpf_get_error(link);
		if (err) {
			if (permission_error(err))
				snprintf(errbuf, errlen, "BPF not permitted (run as root or with CAP_BPF+CAP_PERFMON)");
			else
				snprintf(errbuf, errlen, "cannot attach ruby:%s in %s: %s",
					 table[t].probe, path, strerror(-err));
			goto fail;
		}
		st->links[st->nlinks++] = link;
		used += (size_t)snprintf(st->probes_used + used, sizeof(st->probes_used) - used,
					 "%s%s", used ? "," : "", table[t].probe);
		if (used >= sizeof(st->probes_used))
			used = sizeof(st->probes_used) - 1;
	}
	*state = st;
	return 0;

fail:
	ruby_close(st);
	return err < 0 ? err : -EINVAL;
}

const struct vt_runtime vt_runtime_ruby = {
	.name = "ruby",
	.provider = PROVIDER,
	.open = ruby_open,
	.collect = ruby_collect,
	.close = ruby_close,
	.poll = ruby_poll,
};
