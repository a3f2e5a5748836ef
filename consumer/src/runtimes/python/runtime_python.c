/*
 * runtime_python.c: the adapter for CPython's own USDT probes (provider
 * "python", in the python3.x binary or libpython), with no change to Python.
 *
 * Calls: function__entry / function__return (file, function, line) counted
 * per (file, function) in runtimes/python/python.bpf.c, with a per-thread depth.
 * CPython 3.11 fires function__entry only while a profile or trace function
 * is set (sys.setprofile, cProfile; CPython gh-98894) but function__return
 * on every return and every yield. A function's calls are therefore the
 * larger of its entries and its returns: every call begun or finished
 * during the run, whether or not the target profiles itself. When no entry
 * fired at all, the probes field says "function__entry(silent)". A
 * generator counts one call per start or resume, as CPython's probes do.
 *
 * Functions are keyed by their code object, read from the interpreter's
 * frame (python.bpf.c): a row is the qualified name and file:first line,
 * so two functions of one name stay two rows. Where the frame cannot be
 * read (not CPython 3.11) the probe's own names are the key.
 *
 * GC: gc__start(generation) / gc__done(collected) become collections per
 * generation (the profile's kinds 0, 1, 2) and one pause each, with the
 * objects it collected.
 *
 * Objects: CPython has no allocation probes, and Debian's python3.11 is
 * built with LTO and PGO: its allocation functions (PyObject_Malloc,
 * PyType_GenericAlloc, _PyObject_GC_New, _Py_NewReference, ...) are
 * inlined into hundreds of callers, so uprobes on the exported entry points
 * would see only some objects of some types. The one place every creation
 * passes, free lists included, is tracemalloc's hook in _Py_NewReference,
 * called while the process traces memory: a command vmtrace starts gets
 * PYTHONTRACEMALLOC=1; a process attached by pid must trace already
 * (tracemalloc.start()), else the report says its objects were unseen.
 * _PyTraceMalloc_NewReference is local to the binary: its address is the
 * call in the exported _Py_NewReference (python_interp.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "runtimes/adapter.h"
#include "runtimes/python/python_calls.h"
#include "runtimes/python/python_ext.h"
#include "runtimes/python/python_interp.h"
#include "runtimes/python/python_load.h"
#include "runtimes/python/python_stacks.h"
#include "runtimes/proc_table.h"
#include "profile/profile.h"
#include "runtimes/runtime.h"
#include "runtimes/skeleton.h"
#include "runtimes/python/python_maps.h"
#include "python.skel.h"

#define PROVIDER "python"

static const char *const loss_names[] = {
	[VT_PY_L_UNREADABLE] = "unreadable string",
	[VT_PY_L_TRUNCATED] = "name truncated",
	[VT_PY_L_MAP_FULL] = "function map full (raise --map-entries)",
	[VT_PY_L_GC_UNPAIRED] = "gc__done without gc__start",
	[VT_PY_L_GC_BUF_FULL] = "gc pause buffer full",
	[VT_PY_L_ALLOC_MAP_FULL] = "alloc map full (raise --map-entries)",
	[VT_PY_L_NAMES_FULL] = "type or code map full (unnamed)",
	[VT_PY_L_LINES_FULL] = "line table map full (Python frames at their first line)",
	[VT_PY_L_STACK_CUT] = "stack cut at 127 Python frames",
	[VT_PY_L_STACK_BAD] = "stack ended at an unreadable frame",
	[VT_PY_L_STACKS_FULL] = "stack map full (stack lost)",
	[VT_PY_L_PROC_FULL] = "process table full (events)",
	[VT_PY_L_PROC_HIGH_PTR] = "pointer above 2^47 in --all (events)",
};

struct python_state {
	struct vt_adapter a;    /* its pauses: vt_adapter_count_pause */
	struct python_bpf *skel;
	bool have_entry, have_return, have_gc, have_objects;
	bool py311;              /* CPython 3.11: frames and the object hook */
	bool stacks;             /* --stack vm: whole Python stacks (python_stack.bpf.h) */
	char why_no_objects[160]; /* when !have_objects */
	bool all;                /* record --all: types and codes carry their process's slot */
	struct vt_proc_table procs; /* ... and these are the processes */
};

static int on_gc_event(void *ctx, void *data, size_t size)
{
	struct python_state *st = ctx;
	const struct vt_py_gc_event *e = data;
	struct vt_gc_pause g;

	if (size < sizeof(*e))
		return 0;
	g = (struct vt_gc_pause){
		.kind = (int)e->generation,
		.duration_ns = e->duration_ns,
		.objects_collected = e->collected,
		.at_ns = (int64_t)(e->end_ns - e->duration_ns), /* its start, on the kernel's clock */
		.tid = e->tid,
	};
	vt_adapter_count_pause(&st->a, &g);
	return 0;
}

/* "qualname" and "file:firstline" of a code object, from the codes map. */
static void code_names(struct python_state *st, const struct vt_py_code_id *id, char *name,
		       size_t nlen, char *where, size_t wlen)
{
	struct vt_py_code c;

	if (bpf_map__lookup_elem(st->skel->maps.codes, id, sizeof(*id), &c, sizeof(c), 0)) {
		snprintf(name, nlen, "<code 0x%" PRIx64 ">", (uint64_t)id->code);
		where[0] = '\0';
		return;
	}
	vt_key_string(name, nlen, c.qualname, sizeof(c.qualname));
	vt_key_string(where, wlen, c.file, sizeof(c.file));
	snprintf(where + strlen(where), wlen - strlen(where), ":%u", c.firstlineno);
}

struct rows {
	struct python_state *st;
	struct vt_profile *out;
	struct type_total { uint64_t type, count; } *types;
	size_t ntypes;
	int err;
};

/* One allocation row: type, function (qualname, file:first line). */
static int alloc_row(const void *key, const void *val, void *ctx)
{
	const struct vt_py_alloc_key *k = key;
	const struct vt_py_alloc_val *sum = val;
	struct rows *r = ctx;
	struct vt_py_type t;
	char klass[VT_PY_NAME + 32], func[VT_PY_NAME], where[VT_PY_FILE + 16];
	uint32_t proc = 0;
	size_t i;

	if (!sum->count)
		return 0;
	if (r->st->all) {
		int err = vt_proc_table_proc(&r->st->procs, vt_proc_slot_of(k->type), r->out, &proc);

		if (err)
			return err;
	}
	if (!bpf_map__lookup_elem(r->st->skel->maps.types, &k->type, sizeof(k->type), &t, sizeof(t), 0))
		vt_key_string(klass, sizeof(klass), t.name, sizeof(t.name));
	else
		snprintf(klass, sizeof(klass), "<type 0x%" PRIx64 ">", (uint64_t)vt_proc_ptr_of(k->type));
	if (k->code.code) {
		code_names(r->st, &k->code, func, sizeof(func), where, sizeof(where));
	} else {
		func[0] = '\0';
		where[0] = '\0';
	}
	for (i = 0; i < r->ntypes && r->types[i].type != k->type; i++)
		;
	if (i == r->ntypes) {
		void *m = realloc(r->types, (i + 1) * sizeof(*r->types));

		if (!m)
			return -ENOMEM;
		r->types = m;
		r->types[r->ntypes++] = (struct type_total){ k->type, 0 };
	}
	r->types[i].count += sum->count;
	uint32_t sid = 0;
	uint64_t missing = 0; /* counted in BPF, as stack map full */

	if (k->stack && r->st->stacks) {
		struct vt_py_stack_maps m = { r->st->skel->maps.py_stacks, r->st->skel->maps.codes,
					      r->st->skel->maps.py_lines };
		int err = vt_py_stack_of(&m, k->stack, r->out, sum->count, &sid, &missing);

		if (err)
			return err;
	}
	return vt_profile_add_alloc_proc(r->out, proc, klass, func, where, sid, sum->count, sum->bytes,
					 sum->count);
}

/* str's text is written after its object is made, so its bytes are the
 * fixed part only (variable-size types count their items, python.bpf.c):
 * a row saying so, for the str objects counted. */
static int variable_size_rows(struct rows *r)
{
	for (size_t i = 0; i < r->ntypes; i++) {
		struct vt_py_type t;
		char name[VT_PY_NAME], what[VT_PY_NAME + 96];
		int err;

		if (bpf_map__lookup_elem(r->st->skel->maps.types, &r->types[i].type,
					 sizeof(r->types[i].type), &t, sizeof(t), 0))
			continue;
		vt_key_string(name, sizeof(name), t.name, sizeof(t.name));
		if (strcmp(name, "str") != 0)
			continue;
		snprintf(what, sizeof(what), "bytes of %s objects: fixed part only (their items unseen)",
			 name);
		err = vt_profile_add_lost(r->out, what, r->types[i].count);
		if (err)
			return err;
	}
	return 0;
}

static int python_collect(void *state, struct vt_profile *out)
{
	struct python_state *st = state;
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
	out->has_allocations = st->have_objects;
	struct rows rows = { .st = st, .out = out };
	struct vt_py_call_maps calls = { st->skel->maps.funcs, st->skel->maps.funcs_named,
					 st->skel->maps.codes };

	err = vt_py_add_calls(&st->a, &calls, out);
	if (!err && st->have_objects)
		err = vt_adapter_read_hash(&st->a, st->skel->maps.allocs, alloc_row, &rows);
	if (!err)
		err = variable_size_rows(&rows);
	free(rows.types);
	if (err)
		return err;
	if (st->have_objects && !st->all && !c[VT_PY_C_OBJECTS])
		err = vt_profile_add_lost(out, "objects unseen: the target does not trace memory "
					  "(PYTHONTRACEMALLOC=1 or tracemalloc.start(); "
					  "vmtrace record -- python sets it)",
					  c[VT_PY_C_RETURNS] ? c[VT_PY_C_RETURNS] : 1);
	else if (!st->have_objects)
		err = vt_profile_add_lost(out, st->why_no_objects, 1);
	if (err)
		return err;

	for (int g = 0; g < VT_PY_GENS && g < VT_GC_KINDS; g++)
		out->gc_collections[g] += c[VT_PY_C_GC0 + g];
	err = vt_adapter_pauses_counted(&st->a, st->skel->maps.pause_counts);
	if (!err)
		err = vt_adapter_add_pauses(&st->a, out);
	if (err)
		return err;
	return vt_adapter_add_losses(out, loss_names, c, VT_PY_L_UNREADABLE, VT_PY_COUNTERS);
}

static void python_destroy(void *skel)
{
	python_bpf__destroy(skel);
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

/* the batch buffers are sized for the function map, the larger */
_Static_assert(sizeof(struct vt_py_alloc_key) <= sizeof(struct vt_py_func_key) &&
	       sizeof(struct vt_py_alloc_val) <= sizeof(struct vt_py_func_val), "batch sizes");

static int python_open(const struct vt_opts *opts, void **state, char *errbuf, size_t errlen)
{
	struct python_state *st;
	const char *path = python_module(opts->probes);
	int err;

	*state = NULL;
	if (opts->sample_period) {
		snprintf(errbuf, errlen, "--sample: CPython's objects carry no sampling weight "
			 "(sampling needs vmtrace's provider)");
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
			      opts->gc_pauses,
			      errbuf, errlen);
	if (err)
		goto fail;
	st->skel = python_bpf__open();
	err = vt_skeleton_opened(&st->a, st->skel, python_destroy, NULL, errbuf, errlen);
	if (err)
		goto fail;
	vt_adapter_size_map(st->skel->maps.funcs, opts->map_entries, VT_COUNT_MAP_DEFAULT);
	vt_adapter_size_map(st->skel->maps.funcs_named, opts->map_entries, VT_COUNT_MAP_DEFAULT);
	/* a row per (type, function[, stack]): with stacks, an interpreter's
	 * start alone makes over ten thousand */
	vt_adapter_size_map(st->skel->maps.allocs, opts->map_entries, VT_ALLOC_MAP_CEILING);
	uint64_t hook_offset = 0, bias = 0;

	struct vt_py_interp interp;

	if (!vt_py_find_interp(path, &interp, st->why_no_objects, sizeof(st->why_no_objects))) {
		st->py311 = true;
		hook_offset = interp.hook_offset;
		st->skel->rodata->runtime_link = interp.runtime;
		st->skel->rodata->hook_link = interp.hook;
		st->skel->rodata->code_type_link = interp.code_type;
	}
	if (opts->stacks & VT_STACK_NATIVE) {
		snprintf(errbuf, errlen, "--stack %s: CPython's native stacks are not walked "
			 "(--stack vm walks its Python frames)",
			 opts->stacks == VT_STACK_BOTH ? "both" : "native");
		err = -ENOTSUP;
		goto fail;
	}
	if (opts->stacks && !st->py311) {
		snprintf(errbuf, errlen, "--stack vm: Python's frames cannot be walked here (%s)",
			 st->why_no_objects);
		err = -ENOTSUP;
		goto fail;
	}
	st->stacks = opts->stacks != 0;
	st->skel->rodata->walk_stacks = st->stacks;
	st->all = opts->all;
	VT_PROCS_AUTOLOAD(st->skel, st->all);
	err = VT_SKELETON_LOAD(st, errbuf, errlen);
	if (err)
		goto fail;
	bool hook = st->py311;

	if (st->py311 && st->all && !vt_py_load_bias(path, -1, &bias)) {
		/* the bias learnt at the hook's first hit is one process's */
		hook = false;
		snprintf(st->why_no_objects, sizeof(st->why_no_objects), "--all: %s is "
			 "position-independent, its load address differs per process", path);
	}
	if (st->py311 && vt_py_load_bias(path, opts->pid, &bias)) {
		st->skel->bss->bias = bias;
		st->skel->bss->bias_known = 1;
		/* by pid: check against the running process what the walk relies on */
		if (st->stacks && !opts->spawned &&
		    vt_py_check_code_type(opts->pid, &interp, bias, st->why_no_objects,
					  sizeof(st->why_no_objects))) {
			snprintf(errbuf, errlen, "--stack vm: Python's frames cannot be walked here: %s",
				 st->why_no_objects);
			err = -ENOTSUP;
			goto fail;
		}
	}
	if (hook) {
		err = vt_adapter_attach_uprobe(&st->a, st->skel->progs.py_new_object, path, NULL,
					       hook_offset, 0, 0, errbuf, errlen);
		if (err)
			goto fail;
		st->have_objects = true;
	}
	err = vt_adapter_buffers(&st->a, sizeof(struct vt_py_func_key), sizeof(struct vt_py_func_val),
				 st->skel->maps.gc_events, on_gc_event, st, errbuf, errlen);
	if (err)
		goto fail;

	const struct {
		const char *probe;
		struct bpf_program *prog, *frame_prog;
		bool *have;
		bool method;         /* left out by --no-methods */
	} table[] = {
		{ "function__entry", st->skel->progs.py_function_entry, st->skel->progs.py_frame_entry,
		  &st->have_entry, true },
		{ "function__return", st->skel->progs.py_function_return,
		  st->skel->progs.py_frame_return, &st->have_return, true },
		{ "gc__start", st->skel->progs.py_gc_start, NULL, &st->have_gc, false },
		{ "gc__done", st->skel->progs.py_gc_done, NULL, &st->have_gc, false },
	};

	for (size_t t = 0; t < sizeof(table) / sizeof(table[0]); t++) {
		uint64_t func_off, sem_off;

		if (table[t].method && opts->no_methods)
			continue;
		if (!vt_usdt_has_probe(opts->probes, PROVIDER, path, table[t].probe))
			continue;
		/* CPython 3.11: the probe's helper, given the frame itself */
		if (st->py311 && table[t].frame_prog &&
		    !vt_py_frame_helper(opts->probes, PROVIDER, path, table[t].probe, &func_off, &sem_off))
			err = vt_adapter_attach_uprobe(&st->a, table[t].frame_prog, path, NULL, func_off,
						       0, sem_off, errbuf, errlen);
		else
			err = vt_adapter_attach(&st->a, table[t].prog, path, table[t].probe, 0, errbuf,
						errlen);
		if (err)
			goto fail;
		*table[t].have = true;
	}
	*state = st;
	return 0;

fail:
	vt_skeleton_close(st);
	return err < 0 ? err : -EINVAL;
}

/* A command vmtrace starts traces memory from its first object, so
 * tracemalloc's hook sees every object (unless the user set it already). */
static int python_spawn_env(void *state, const char **env, const char **note, char *errbuf,
			    size_t errlen)
{
	struct python_state *st = state;

	(void)errbuf;
	(void)errlen;
	*env = NULL;
	*note = NULL;
	if (!st->have_objects || getenv("PYTHONTRACEMALLOC"))
		return 0;
	*env = "PYTHONTRACEMALLOC=1";
	*note = "set PYTHONTRACEMALLOC=1 in the spawned process so its objects are seen";
	return 0;
}

static const char *const python_programs[] = { "python3", "/usr/bin/python3", NULL };

const struct vt_runtime vt_runtime_python = {
	.name = "python",
	.provider = PROVIDER,
	.open = python_open,
	.collect = python_collect,
	.close = vt_skeleton_close,
	.poll = vt_skeleton_poll,
	.spawn_env = python_spawn_env,
	.load_provider = vt_python_load_provider,
	.own_probes = "CPython's own probes",
	.inside = &vt_python_inside,
	.stacks = true,
	.programs = python_programs,
	.follow_env = vt_python_follow_env,
	.follow_keeps = vt_python_follow_keeps,
	.at_exec = vt_python_at_exec,
};
