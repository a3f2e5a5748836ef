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

#include <bpf/libbpf.h>

#include "adapter.h"
#include "profile.h"
#include "runtime.h"
#include "../bpf/python_maps.h"
#include "python.skel.h"

#define PROVIDER "python"
#define DEFAULT_MAP_ENTRIES 10240

static const char *const loss_names[] = {
	[VT_PY_L_UNREADABLE] = "unreadable string",
	[VT_PY_L_TRUNCATED] = "name truncated",
	[VT_PY_L_MAP_FULL] = "function map full",
	[VT_PY_L_GC_UNPAIRED] = "gc__done without gc__start",
	[VT_PY_L_GC_BUF_FULL] = "gc pause buffer full",
};

struct python_state {
	struct vt_adapter a;    /* events: struct vt_gc_pause */
	struct python_bpf *skel;
	bool have_entry, have_return, have_gc;
};

static int on_gc_event(void *ctx, void *data, size_t size)
{
	struct python_state *st = ctx;
	const struct vt_py_gc_event *e = data;
	struct vt_gc_pause *p;

	if (size < sizeof(*e))
		return 0;
	p = vt_adapter_event_slot(&st->a);
	if (!p)
		return 0;
	*p = (struct vt_gc_pause){
		.kind = (int)e->generation,
		.duration_ns = e->duration_ns,
		.objects_collected = e->collected,
	};
	return 0;
}

/* One function row: its calls, when it has any. */
static int func_row(const void *key, const void *val, void *ctx)
{
	const struct vt_py_func_key *k = key;
	const struct vt_py_func_val *sum = val;
	struct vt_profile *out = ctx;
	char file[VT_PY_FILE], func[VT_PY_NAME];
	uint64_t calls;

	/* entries and returns agree, unless entries are silent
	 * (3.11 without a profiler) or a frame spans the run's edge */
	calls = sum->entries > sum->returns ? sum->entries : sum->returns;
	if (!calls)
		return 0;
	vt_key_string(file, sizeof(file), k->file, sizeof(k->file));
	vt_key_string(func, sizeof(func), k->func, sizeof(k->func));
	return vt_profile_add_call(out, func, file, calls);
}

static int python_collect(void *state, struct vt_profile *out)
{
	struct python_state *st = state;
	const struct vt_gc_pause *pauses = st->a.events.v;
	uint64_t c[VT_PY_COUNTERS] = { 0 };
	char probes[256];
	int err;

	err = vt_adapter_drain(&st->a);
	if (err)
		return err;
	err = vt_adapter_read_counters(&st->a, st->skel->maps.counters, VT_PY_COUNTERS, c);
	if (err)
		return err;
	/* CPython 3.11 without a profiler: entries silent, returns fire */
	snprintf(probes, sizeof(probes), "%s%s%s",
		 !st->have_entry ? "" : c[VT_PY_C_ENTRIES] ? "function__entry," : "function__entry(silent),",
		 st->have_return ? "function__return," : "",
		 st->have_gc ? "gc__start,gc__done" : "");
	if (probes[0] && probes[strlen(probes) - 1] == ',')
		probes[strlen(probes) - 1] = '\0';
	err = vt_profile_set_meta(out, "python", probes, out->target, st->a.pid);
	if (err)
		return err;
	out->has_allocations = false;
	err = vt_adapter_read_hash(&st->a, st->skel->maps.funcs, func_row, out);
	if (err)
		return err;

	for (int g = 0; g < VT_PY_GENS && g < VT_GC_KINDS; g++)
		out->gc_collections[g] += c[VT_PY_C_GC0 + g];
	for (size_t i = 0; i < st->a.events.n; i++) {
		err = vt_profile_add_gc_pause(out, &pauses[i]);
		if (err)
			return err;
	}
	return vt_adapter_add_losses(out, loss_names, c, VT_PY_L_UNREADABLE, VT_PY_COUNTERS);
}

static int python_poll(void *state, int timeout_ms)
{
	struct python_state *st = state;

	return vt_adapter_poll(&st->a, timeout_ms);
}

static void python_close(void *state)
{
	struct python_state *st = state;

	if (!st)
		return;
	vt_adapter_release(&st->a);
	python_bpf__destroy(st->skel);
	free(st);
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
	err = vt_adapter_init(&st->a, PROVIDER, PROVIDER ":", opts->pid, sizeof(struct vt_gc_pause),
			      errbuf, errlen);
	if (err)
		goto fail;
	st->skel = python_bpf__open();
	if (!st->skel) {
		err = vt_adapter_open_failed(errbuf, errlen);
		goto fail;
	}
	bpf_map__set_max_entries(st->skel->maps.funcs,
				 opts->map_entries ? opts->map_entries : DEFAULT_MAP_ENTRIES);
	err = python_bpf__load(st->skel);
	if (err) {
		vt_adapter_load_failed(err, errbuf, errlen);
		goto fail;
	}
	err = vt_adapter_buffers(&st->a, sizeof(struct vt_py_func_key), sizeof(struct vt_py_func_val),
				 st->skel->maps.gc_events, on_gc_event, st, errbuf, errlen);
	if (err)
		goto fail;

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
		if (table[t].method && opts->no_methods)
			continue;
		if (!vt_usdt_has_probe(opts->probes, PROVIDER, path, table[t].probe))
			continue;
		err = vt_adapter_attach(&st->a, table[t].prog, path, table[t].probe, 0, errbuf, errlen);
		if (err)
			goto fail;
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
