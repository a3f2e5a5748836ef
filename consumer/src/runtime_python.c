/*
 * runtime_python.c: the adapter for CPython's own USDT probes (provider
 * "python", in the python3.x binary or libpython), with no change to Python.
 *
 * Calls: function__entry / function__return (file, function, line) counted
 * per (file, function) in bpf/python.bpf.c, with a per-thread depth.
 * CPython 3.11 fires function__entry only while a profile or trace function
 * is set (sys.setprofile, cProfile; CPython gh-98894) but function__return
 * on every return and every yield. A function's calls are therefore the
 * larger of its entries and its returns: every call begun or finished
 * during the run, whether or not the target profiles itself. When no entry
 * fired at all, the probes field says "function__entry(silent)". A
 * generator counts one call per start or resume, as CPython's probes do.
 *
 * GC: gc__start(generation) / gc__done(collected) become collections per
 * generation (the profile's kinds 0, 1, 2) and one pause each, with the
 * objects it collected. CPython has no allocation probes: has_allocations
 * is false and the report says so.
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
#include "../bpf/python_maps.h"
#include "python.skel.h"

#define PROVIDER "python"
#define DEFAULT_MAP_ENTRIES 10240
#define BATCH_ROWS 256
#define MAX_LINKS 8

static const char *const loss_names[] = {
	[VT_PY_L_UNREADABLE] = "unreadable string",
	[VT_PY_L_TRUNCATED] = "name truncated",
	[VT_PY_L_MAP_FULL] = "function map full",
	[VT_PY_L_GC_UNPAIRED] = "gc__done without gc__start",
	[VT_PY_L_GC_BUF_FULL] = "gc pause buffer full",
};

struct python_state {
	struct python_bpf *skel;
	struct bpf_link *links[MAX_LINKS];
	size_t nlinks;
	struct ring_buffer *rb;
	pid_t pid;
	int ncpus;
	bool have_entry, have_return, have_gc;
	struct {
		struct vt_gc_pause *v;
		size_t n, cap;
		int err;
	} pauses;
	void *keys, *vals;
};

static int on_gc_event(void *ctx, void *data, size_t size)
{
	struct python_state *st = ctx;
	const struct vt_py_gc_event *e = data;

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
		.kind = (int)e->generation,
		.duration_ns = e->duration_ns,
		.objects_collected = e->collected,
	};
	return 0;
}

static void field(char *dst, size_t dlen, const char *src, size_t slen)
{
	size_t n = strnlen(src, slen);

	if (n >= dlen)
		n = dlen - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* Add every function row to out. */
static int read_funcs(struct python_state *st, struct vt_profile *out)
{
	int fd = bpf_map__fd(st->skel->maps.funcs);
	size_t stride = vt_percpu_stride(sizeof(struct vt_py_func_val));
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
			const struct vt_py_func_key *k = (const struct vt_py_func_key *)st->keys + i;
			const unsigned char *v = (const unsigned char *)st->vals +
						 (size_t)i * stride * (size_t)st->ncpus;
			struct vt_py_func_val sum;
			char file[VT_PY_FILE], func[VT_PY_NAME];
			uint64_t calls;
			int aerr;

			vt_percpu_merge(v, sizeof(sum), st->ncpus, &sum, NULL, 0);
			/* entries and returns agree, unless entries are silent
			 * (3.11 without a profiler) or a frame spans the run's edge */
			calls = sum.entries > sum.returns ? sum.entries : sum.returns;
			if (!calls)
				continue;
			field(file, sizeof(file), k->file, sizeof(k->file));
			field(func, sizeof(func), k->func, sizeof(k->func));
			aerr = vt_profile_add_call(out, func, file, calls);
			if (aerr)
				return aerr;
		}
		if (err == -ENOENT)
			return 0;
		in_tok = out_tok;
		first = false;
	}
}

static int read_counters(struct python_state *st, uint64_t c[VT_PY_COUNTERS])
{
	int fd = bpf_map__fd(st->skel->maps.counters);
	size_t stride = vt_percpu_stride(sizeof(__u64));
	unsigned char *buf = malloc(stride * (size_t)st->ncpus);

	if (!buf)
		return -ENOMEM;
	for (__u32 i = 0; i < VT_PY_COUNTERS; i++) {
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

static int python_collect(void *state, struct vt_profile *out)
{
	struct python_state *st = state;
	uint64_t c[VT_PY_COUNTERS] = { 0 };
	char probes[256];
	int err;

	ring_buffer__consume(st->rb);
	if (st->pauses.err)
		return st->pauses.err;
	err = read_counters(st, c);
	if (err)
		return err;
	/* CPython 3.11 without a profiler: entries silent, returns fire */
	snprintf(probes, sizeof(probes), "%s%s%s",
		 !st->have_entry ? "" : c[VT_PY_C_ENTRIES] ? "function__entry," : "function__entry(silent),",
		 st->have_return ? "function__return," : "",
		 st->have_gc ? "gc__start,gc__done" : "");
	if (probes[0] && probes[strlen(probes) - 1] == ',')
		probes[strlen(probes) - 1] = '\0';
	err = vt_profile_set_meta(out, "python", probes, out->target, st->pid);
	if (err)
		return err;
	out->has_allocations = false;
	err = read_funcs(st, out);
	if (err)
		return err;

	for (int g = 0; g < VT_PY_GENS && g < VT_GC_KINDS; g++)
		out->gc_collections[g] += c[VT_PY_C_GC0 + g];
	for (size_t i = 0; i < st->pauses.n; i++) {
		err = vt_profile_add_gc_pause(out, &st->pauses.v[i]);
		if (err)
			return err;
	}
	for (int i = VT_PY_L_UNREADABLE; i < VT_PY_COUNTERS; i++) {
		err = vt_profile_add_lost(out, loss_names[i], c[i]);
		if (err)
			return err;
	}
	return 0;
}

static int python_poll(void *state, int timeout_ms)
{
	struct python_state *st = state;
	/* the BPF side submits without a wakeup (a wakeup costs the target
	 * microseconds per GC phase): wait out the slice, then drain */
	int n = ring_buffer__poll(st->rb, timeout_ms);

	if (n >= 0)
		n = ring_buffer__consume(st->rb);
	if (n < 0)
		return n;
	return st->pauses.err;
}

static void python_close(void *state)
{
	struct python_state *st = state;

	if (!st)
		return;
	for (size_t i = st->nlinks; i-- > 0;)
		bpf_link__destroy(st->links[i]);
	ring_buffer__free(st->rb);
	python_bpf__destroy(st->skel);
	free(st->pauses.v);
	free(st->keys);
	free(st->vals);
	free(st);
}

static bool permission_error(int err)
{
	return err == -EPERM || err == -EACCES;
}

/* The module holding the python provider (the python binary or libpython). */
static const char *python_module(const struct vt_usdt_list *pl)
{
	for (size_t i = 0; pl && i < pl->n; i++)
		if (pl->v[i].provider && strcmp(pl->v[i].provider, PROVIDER) == 0 &&
		    pl->v[i].name && (strcmp(pl->v[i].name, "function__return") == 0 ||
				      strcmp(pl->v[i].name, "gc__start") == 0))
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

static int python_open(const struct vt_attach_opts *opts, void **state, char *errbuf, size_t errlen)
{
	struct python_state *st;
	const char *path = python_module(opts->probes);
	int err;

	*state = NULL;
	if (opts->sample_period) {
		snprintf(errbuf, errlen, "--sample: CPython has no allocation probes to sample");
		return -ENOTSUP;
	}
	if (!path) {
		snprintf(errbuf, errlen, "pid %d has no python:function__return or python:gc__start "
			 "probe (is python built --with-dtrace?)", (int)opts->pid);
		return -ENOENT;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->pid = opts->pid;
	st->ncpus = libbpf_num_possible_cpus();
	if (st->ncpus <= 0) {
		err = st->ncpus ? st->ncpus : -EINVAL;
		snprintf(errbuf, errlen, "cannot count the CPUs: %s", strerror(-err));
		goto fail;
	}
	st->skel = python_bpf__open();
	if (!st->skel) {
		err = errno ? -errno : -EINVAL;
		snprintf(errbuf, errlen, "cannot open the BPF object: %s", strerror(-err));
		goto fail;
	}
	bpf_map__set_max_entries(st->skel->maps.funcs,
				 opts->map_entries ? opts->map_entries : DEFAULT_MAP_ENTRIES);
	err = python_bpf__load(st->skel);
	if (err) {
		if (permission_error(err))
			snprintf(errbuf, errlen, "BPF not permitted (run as root or with CAP_BPF+CAP_PERFMON)");
		else
			snprintf(errbuf, errlen, "cannot load the BPF programs: %s", strerror(-err));
		goto fail;
	}
	st->keys = malloc(sizeof(struct vt_py_func_key) * BATCH_ROWS);
	st->vals = malloc(vt_percpu_stride(sizeof(struct vt_py_func_val)) * (size_t)st->ncpus *
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
		bool *have;
		bool method;         /* left out by --no-methods */
	} table[] = {
		{ "function__entry", st->skel->progs.py_function_entry, &st->have_entry, true },
		{ "function__return", st->skel->progs.py_function_return, &st->have_return, true },
		{ "gc__start", st->skel->progs.py_gc_start, &st->have_gc, false },
		{ "gc__done", st->skel->progs.py_gc_done, &st->have_gc, false },
	};

	for (size_t t = 0; t < sizeof(table) / sizeof(table[0]); t++) {
		struct bpf_link *link;

		if (table[t].method && opts->no_methods)
			continue;
		if (!has_probe(opts->probes, path, table[t].probe))
			continue;
		link = bpf_program__attach_usdt(table[t].prog, opts->pid, path, PROVIDER,
						table[t].probe, NULL);
		err = libbpf_get_error(link);
		if (err) {
			if (permission_error(err))
				snprintf(errbuf, errlen, "BPF not permitted (run as root or with CAP_BPF+CAP_PERFMON)");
			else
				snprintf(errbuf, errlen, "cannot attach python:%s in %s: %s",
					 table[t].probe, path, strerror(-err));
			goto fail;
		}
		st->links[st->nlinks++] = link;
		*table[t].have = true;
	}
	*state = st;
	return 0;

fail:
	python_close(st);
	return err < 0 ? err : -EINVAL;
}

const struct vt_runtime vt_runtime_python = {
	.name = "python",
	.provider = PROVIDER,
	.open = python_open,
	.collect = python_collect,
	.close = python_close,
	.poll = python_poll,
};
