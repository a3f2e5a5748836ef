/*
 * runtime_vmtrace.c: the adapter for vmtrace's own provider (probes/vmtrace.d).
 *
 * open: load runtimes/vmtrace/vmtrace.bpf.c with the target's pid in its rodata, size the
 * counting maps (--map-entries), then attach one program per probe name to
 * every module that holds vmtrace probes (libbpf attaches every site of the
 * name in that file; the kernel bumps each probe's semaphore, the low half
 * of the provider's gate, and drops it again when the link closes or this
 * process dies). sample__armed is attached last and only with --sample, after
 * the period is written into the target, because holding its semaphore is
 * what turns sampling on.
 *
 * The maps are keyed by the target's string pointers (vmtrace_maps.h);
 * vmtrace_collect.c reads them into a profile. Names come from
 * vmtrace_names.c: its cache, the BPF `names` and `long_names` maps, the target's memory through /proc/PID/mem (the kernel
 * cannot fault a page in from a uprobe; a read from /proc can), and finally
 * "<unreadable 0x...>", counted; a name longer than could be read ends in
 * "...(truncated)", counted. poll() reads the pointers the kernel could not
 * while the target still lives, and drains the GC ring buffer so no pause
 * is lost. --stack vm holds stacks__armed (vmtrace_stacks.c);
 * --stack native takes allocations through the per-event probe instead of
 * the batches, so the kernel can take each one's user stack.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "runtimes/adapter.h"
#include "profile/profile.h"
#include "runtimes/runtime.h"
#include "runtimes/skeleton.h"
#include "runtimes/vmtrace/vmtrace_batch.h"
#include "process/native_symbols.h"
#include "runtimes/vmtrace/vmtrace_names.h"
#include "runtimes/vmtrace/vmtrace_stacks.h"
#include "runtimes/vmtrace/vmtrace_series.h"
#include "runtimes/vmtrace/vmtrace_maps.h"
#include "vmtrace.skel.h"

#if defined(__has_include)
#if __has_include("sampling.h")
#include "runtimes/vmtrace/sampling.h"
#include "runtimes/vmtrace/host_armed.h"
#define VT_HAVE_SAMPLING 1
#endif
#endif

#define PROVIDER "vmtrace"
#define PROC_PID_INIT_INO 0xEFFFFFFCu
/* struct vmtrace_live_clock (vmtrace/vmtrace.h): the fields a consumer writes */
#define LIVE_CLOCK_SYMBOL "vmtrace_live"
#define LIVE_CLOCK_SESSION offsetof(struct vmtrace_live_clock, session)
#define LIVE_CLOCK_TEMP_NS offsetof(struct vmtrace_live_clock, temp_ns)


#include "vmtrace/vmtrace.h"
#include "runtimes/vmtrace/vmtrace_state.h"


static int vmtrace_poll(void *state, int timeout_ms)
{
	struct vmtrace_state *st = state;
	int n;

	/* the target's mappings (at most every 100 ms) as the slice begins:
	 * nothing wakes the wait early, and a short-lived target may be gone
	 * when it ends */
	if (st->syms)
		vt_native_maps_refresh(st->syms, &st->maps_read);
	/* the BPF side submits without a wakeup: wait out the slice, then drain */
	n = ring_buffer__poll(st->a.rb, timeout_ms);
	if (n >= 0)
		n = ring_buffer__consume(st->a.rb);
	if (st->names_ready)
		vt_names_drain(&st->names);
	if (st->all)
		vt_proc_table_refresh(&st->procs); /* cgroups read while the processes live */
	vt_series_tick(&st->series, &st->a, st->skel);
	if (n < 0)
		return n;
	return st->a.events.err;
}

static int poll_some(void *state, int ms)
{
	return vmtrace_poll(state, ms);
}

static void vmtrace_finish(void *state, bool exited)
{
	struct vmtrace_state *st = state;

	if (st->all) {
		st->unflushed += vt_batch_finish_all(&st->batch, &st->procs, poll_some, st, 3000);
		return;
	}
	if (vt_batch_finish(&st->batch, exited, poll_some, st, 3000))
		st->unflushed++;
}

static void vmtrace_destroy(void *skel)
{
	vmtrace_bpf__destroy(skel);
}

static void vmtrace_release(void *state)
{
	struct vmtrace_state *st = state;

	if (st->names_ready)
		vt_names_free(&st->names);
	vt_symbolizer_free(st->syms);
	vt_vm_stacks_unmap(&st->vm_stacks);
	vt_series_free(&st->series);
}

/* probe name -> program, and the events (--events) it serves */
struct probe_prog {
	const char *probe;
	struct bpf_program *prog;
	uint32_t events;
};

static void note_used(struct vmtrace_state *st, const char *probe)
{
	size_t len = strlen(st->probes_used);
	char needle[64];

	snprintf(needle, sizeof(needle), ",%s,", probe);
	/* keep a leading comma while building, so the search is exact */
	if (len == 0) {
		snprintf(st->probes_used, sizeof(st->probes_used), ",%s,", probe);
		return;
	}
	if (strstr(st->probes_used, needle))
		return;
	snprintf(st->probes_used + len, sizeof(st->probes_used) - len, "%s,", probe);
}

static void finish_used(struct vmtrace_state *st)
{
	size_t len = strlen(st->probes_used);

	if (len >= 2) {
		memmove(st->probes_used, st->probes_used + 1, len - 1);
		st->probes_used[len - 2] = '\0';
	}
}

/* The pid namespace vmtrace runs in, when it is not the initial one: pids
 * the kernel hands BPF are global, the target's pid is ours. */
static void set_pid_filter(struct vmtrace_bpf *skel, pid_t pid)
{
	struct stat sb;

	skel->rodata->targ_tgid = (__u32)pid;
	if (stat("/proc/self/ns/pid", &sb) == 0 && sb.st_ino != PROC_PID_INIT_INO) {
		skel->rodata->targ_use_ns = true;
		skel->rodata->targ_ns_dev = sb.st_dev;
		skel->rodata->targ_ns_ino = sb.st_ino;
	}
}

/* --live through live__batch: give the provider --temp and a new
 * recording before live__batch is attached, so objects that carry a word
 * are counted per key from then on. temp_ns first: the provider reads it
 * once it sees the new session. A command not yet exec'd gets it in its
 * environment; a libvmtrace without vmtrace_live (-ENOENT) sends only
 * address records, as before. */
static int live_handshake(struct vmtrace_state *st, const struct vt_opts *opts)
{
	if (opts->spawned) {
		snprintf(st->live_env, sizeof(st->live_env), "VMTRACE_LIVE_TEMP_NS=%" PRIu64, st->temp_ns);
		return 0;
	}
#ifdef VT_HAVE_SAMPLING
	struct timespec now;
	uint64_t session;
	int err;

	clock_gettime(CLOCK_MONOTONIC, &now);
	/* new each run, never 0 (none), top bit clear */
	session = (((uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec) | 1) & ~(1ull << 63);
	err = vt_provider_write_u64_at(opts->pid, opts->probes, LIVE_CLOCK_SYMBOL, LIVE_CLOCK_TEMP_NS,
				       st->temp_ns);
	if (!err)
		err = vt_provider_write_u64_at(opts->pid, opts->probes, LIVE_CLOCK_SYMBOL,
					       LIVE_CLOCK_SESSION, session);
	return err == -ENOENT ? 0 : err;
#else
	return 0;
#endif
}

/* The events of the allocation and free probes: attaching those turns the
 * target's counting on. */
#define VT_ARMING_EVENTS (VT_EVENTS_ALLOC | VT_EVENTS_FREE)

/* Whether probe i of pl is the first of its (provider, name, module): one
 * attach per name and module, as libbpf takes every site of the name. */
static bool first_of_name(const struct vt_usdt_list *pl, size_t i)
{
	const struct vt_usdt_probe *p = &pl->v[i];

	for (size_t j = 0; j < i; j++)
		if (strcmp(pl->v[j].provider, p->provider) == 0 && strcmp(pl->v[j].name, p->name) == 0 &&
		    strcmp(pl->v[j].path, p->path) == 0)
			return false;
	return true;
}

/* Attach the target's probes of table that events asks for: those that arm
 * counting (of VT_ARMING_EVENTS only), or all the others. Sets *armed_somewhere when
 * a module has sample__armed. 0, or a negative errno with errbuf set. */
/* Whether probe i of the target's list is attached (sample__armed aside):
 * the first of its name, and not replaced by another of this recording. */
static bool probe_taken(const struct vmtrace_state *st, const struct vt_opts *opts, size_t i)
{
	const struct vt_usdt_list *pl = opts->probes;
	const struct vt_usdt_probe *p = &pl->v[i];

	if (strcmp(p->provider, PROVIDER) != 0 || strcmp(p->name, "sample__armed") == 0 ||
	    !first_of_name(pl, i))
		return false;
	/* Sampling exists so unsampled objects never trap; an exact
	 * object__free would trap on nearly every one of them again. */
	if (opts->sample_period && !st->live &&
	    (strcmp(p->name, "object__free") == 0 || strcmp(p->name, "free__batch") == 0))
		return false;
	/* --live needs each object's address: live__batch carries them in
	 * batches beside the counts; a libvmtrace without it gets the
	 * per-event probes, which carry them too */
	bool live_batched = st->live && vt_usdt_has_probe(pl, PROVIDER, p->path, "live__batch");
	if (strcmp(p->name, "live__batch") == 0 && !live_batched)
		return false;
	if (st->live && !live_batched &&
	    (strcmp(p->name, "alloc__batch") == 0 || strcmp(p->name, "free__batch") == 0))
		return false;
	if (strcmp(p->name, "alloc__batch") == 0 && st->syms)
		return false;
	if ((!st->live || live_batched) &&
	    ((strcmp(p->name, "object__alloc") == 0 && !st->syms &&
	      vt_usdt_has_probe(pl, PROVIDER, p->path, "alloc__batch")) ||
	     (strcmp(p->name, "object__free") == 0 && vt_usdt_has_probe(pl, PROVIDER, p->path, "free__batch"))))
		return false;
	return true;
}

/* table entry t takes probe, with the events asked for */
static bool entry_takes(const struct probe_prog *t, const char *probe, uint32_t events)
{
	return strcmp(t->probe, probe) == 0 && (t->events & events);
}

/* ... in this pass (the arming probes last) */
static bool entry_serves(const struct probe_prog *t, const char *probe, uint32_t events, bool arming)
{
	return entry_takes(t, probe, events) && ((t->events & ~(uint32_t)VT_ARMING_EVENTS) == 0) == arming;
}

/* The table's programs that no probe of this recording will take are not
 * loaded: the verifier's time is every attach's (a CPython or Ruby with
 * the batch probes never takes object__alloc's walker). A program serves
 * several entries: all are put out, then those some probe takes back in. */
static void load_only_taken(const struct vmtrace_state *st, const struct probe_prog *table, size_t ntable,
			    uint32_t events, const struct vt_opts *opts)
{
	for (size_t t = 0; t < ntable; t++)
		bpf_program__set_autoload(table[t].prog, false);
	for (size_t i = 0; i < opts->probes->n; i++) {
		if (!probe_taken(st, opts, i))
			continue;
		for (size_t t = 0; t < ntable; t++)
			if (entry_takes(&table[t], opts->probes->v[i].name, events))
				bpf_program__set_autoload(table[t].prog, true);
	}
}

static int attach_probes(struct vmtrace_state *st, const struct probe_prog *table, size_t ntable,
			 uint32_t events, const struct vt_opts *opts, bool arming,
			 bool *armed_somewhere, char *errbuf, size_t errlen)
{
	const struct vt_usdt_list *pl = opts->probes;
	int err;

	for (size_t i = 0; i < pl->n; i++) {
		const struct vt_usdt_probe *p = &pl->v[i];

		if (strcmp(p->provider, PROVIDER) == 0 && strcmp(p->name, "sample__armed") == 0)
			*armed_somewhere = true;
		if (!probe_taken(st, opts, i))
			continue;
		for (size_t t = 0; t < ntable; t++) {
			if (!entry_serves(&table[t], p->name, events, arming))
				continue;
			err = vt_adapter_attach(&st->a, table[t].prog, p->path, p->name, 0, errbuf, errlen);
			if (err)
				return err;
			note_used(st, p->name);
			if (strcmp(p->name, "alloc__batch") == 0)
				st->batch.kind[VT_BATCH_ALLOC - 1] = true;
			if (strcmp(p->name, "free__batch") == 0)
				st->batch.kind[VT_BATCH_FREE - 1] = true;
		}
	}
	return 0;
}

static int vmtrace_open(const struct vt_opts *opts, void **state, char *errbuf, size_t errlen)
{
	struct vmtrace_state *st;
	uint32_t entries = opts->map_entries ? opts->map_entries : VT_COUNT_MAP_DEFAULT;
	int err;

	*state = NULL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->sample_period = opts->sample_period;
	st->live = opts->live;
	st->live_max = opts->live_max ? opts->live_max : VT_LIVE_DEFAULT_MAX;
	st->temp_ns = opts->temp_ns ? opts->temp_ns : VT_LIVE_DEFAULT_TEMP_NS;
	/* the log holds the timeline's events; pauses go to the adapter's lists */
	err = vt_adapter_init(&st->a, PROVIDER, "", opts->pid, sizeof(struct vt_gc_event),
			      VT_TIMELINE_MAX, errbuf, errlen);
	if (err)
		goto fail;
	st->a.gc_keep = opts->gc_pauses ? opts->gc_pauses : VT_GC_PAUSES_DEFAULT;

	st->skel = vmtrace_bpf__open();
	err = vt_skeleton_opened(&st->a, st->skel, vmtrace_destroy, vmtrace_release, errbuf, errlen);
	if (err)
		goto fail;
	st->all = opts->all;
	st->spawned = opts->spawned;
	if ((err = vt_vmtrace_take_inside(st, opts, errbuf, errlen)))
		goto fail;
	/* with --all no pid filter: every process is one */
	VT_PROCS_AUTOLOAD(st->skel, st->all);
	if (!st->all)
		set_pid_filter(st->skel, opts->pid);
	/* native stacks are taken by the kernel at each event: per-event probes;
	 * with both, the VM chain is walked in the same program (vm_walk.bpf.h) */
	st->skel->rodata->native_stacks = (opts->stacks & VT_STACK_NATIVE) != 0;
	st->skel->rodata->vm_walk = opts->stacks == VT_STACK_BOTH;
	if (opts->stacks & VT_STACK_NATIVE) {
		st->syms = vt_symbolizer_new(opts->pid);
		if (!st->syms) {
			err = -ENOMEM;
			goto fail;
		}
	}
	st->skel->rodata->nr_cpus = (__u32)st->a.ncpus;
	st->skel->rodata->targ_events = !opts->no_events;
	struct bpf_map *counting[] = { st->skel->maps.frees, st->skel->maps.method_cache_resets,
				       st->skel->maps.constant_cache_resets,
				       st->skel->maps.global_serial_incs };
	for (size_t i = 0; i < sizeof(counting) / sizeof(counting[0]); i++)
		vt_adapter_size_map(counting[i], opts->map_entries, VT_COUNT_MAP_DEFAULT);
	vt_adapter_size_map(st->skel->maps.allocs, opts->map_entries, VT_ALLOC_MAP_CEILING);
	/* a real program has tens of thousands of VM stacks (pydoc over four
	 * modules: 24k); entries are made only as stacks arrive */
	vt_adapter_size_map(st->skel->maps.stacks, opts->map_entries, VT_ALLOC_MAP_CEILING);
	if (opts->stacks & VT_STACK_VM) {
		/* frames of every stack: about 24 per stack in pydoc and rdoc. The
		 * array is made whole at the start: --map-entries 16777216 would
		 * ask 12 GiB of it, which took the kernel 40 s to make here */
		uint64_t frames = opts->map_entries ? 32ull * opts->map_entries : VT_STACK_FRAMES_DEFAULT;

		st->skel->rodata->stack_frames_max = frames > VT_STACK_FRAMES_MAX ? VT_STACK_FRAMES_MAX
										  : (uint32_t)frames;
		bpf_map__set_max_entries(st->skel->maps.stack_frames, st->skel->rodata->stack_frames_max);
	}
	st->skel->rodata->targ_live = st->live;
	st->skel->rodata->targ_temp_ns = st->temp_ns;
	/* without --live the map stays, one entry small */
	bpf_map__set_max_entries(st->skel->maps.live_objs, st->live ? (uint32_t)st->live_max : 1);
	bpf_map__set_max_entries(st->skel->maps.live_temps, st->live ? entries : 1);
	bpf_map__set_max_entries(st->skel->maps.live_keys, st->live ? entries : 1);
	bpf_map__set_max_entries(st->skel->maps.live_ages, st->live ? VT_LIVE_AGES_PROCS : 1);
	/* a name per class, method and site: as many as allocation rows */
	bpf_map__set_max_entries(st->skel->maps.names, !opts->map_entries ? VT_ALLOC_MAP_CEILING
						       : entries > UINT32_MAX / 2 ? UINT32_MAX
										  : 2 * entries);

	/* where the module has them, the batch probes replace the per-event
	 * ones: the events are then counted in the target, without a trap */
	const struct probe_prog table[] = {
		{ "object__alloc", st->skel->progs.on_alloc, VT_EVENTS_ALLOC },
		{ "alloc__batch", st->skel->progs.on_batch, VT_EVENTS_ALLOC },
		{ "object__free", st->skel->progs.on_free, VT_EVENTS_FREE },
		{ "free__batch", st->skel->progs.on_batch, VT_EVENTS_FREE },
		{ "live__batch", st->skel->progs.on_live_batch, VT_EVENTS_ALLOC },
		{ "method__cache__reset", st->skel->progs.on_method_cache_reset, VT_EVENTS_CACHE },
		{ "constant__cache__reset", st->skel->progs.on_constant_cache_reset, VT_EVENTS_CACHE },
		{ "global__serial__inc", st->skel->progs.on_global_serial_inc, VT_EVENTS_CACHE },
		{ "gc__begin", st->skel->progs.on_gc_begin, VT_EVENTS_GC },
		{ "gc__end", st->skel->progs.on_gc_end, VT_EVENTS_GC },
		{ "signal__received", st->skel->progs.on_signal_received, VT_EVENTS_SIGNAL },
		{ "signal__handled", st->skel->progs.on_signal_handled, VT_EVENTS_SIGNAL },
		/* losses of the target's bus: always */
		{ "bus__dropped", st->skel->progs.on_bus_dropped, VT_EVENTS_ALL },
		/* method__entry/return: a trap on every call, and the report
		 * attributes allocations by the probe's own method argument */
	};
	size_t ntable = sizeof(table) / sizeof(table[0]);
	const struct vt_usdt_list *pl = opts->probes;
	uint32_t events = opts->events ? opts->events : VT_EVENTS_ALL;
	bool armed_somewhere = false;
#ifdef VT_HAVE_SAMPLING
	uint64_t armings; /* the host's before attaching (host_armed.h) */
#endif

	/* A provider inside a runtime whose frees cost as its allocations (a
	 * hook call each in Ruby, a block's size remembered in CPython) counts
	 * them when they are asked for (--events free) or the live heap needs
	 * them (--live). */
	if (st->inside && st->inside->frees_dear && !opts->events && !opts->live)
		events &= ~(uint32_t)VT_EVENTS_FREE;

	/* programs this recording never attaches are not loaded: the
	 * verifier's time is every start's (the live heap's is the largest) */
	bpf_program__set_autoload(st->skel->progs.on_live_batch, st->live);
	bpf_program__set_autoload(st->skel->progs.on_stacks_armed, opts->stacks == VT_STACK_BOTH);
	if (!st->all) /* --all takes the probes of every process that comes */
		load_only_taken(st, table, ntable, events, opts);
	err = vt_skeleton_load(&st->a, st->skel->skeleton, st->skel->obj, errbuf, errlen);
	if (err)
		goto fail;
	err = vt_vm_stacks_map(&st->vm_stacks, bpf_map__fd(st->skel->maps.stacks),
			       bpf_map__fd(st->skel->maps.stack_frames), st->skel->rodata->stack_frames_max);
	if (err) {
		snprintf(errbuf, errlen, "cannot map the stacks' frames: %s", strerror(-err));
		goto fail;
	}
	vt_names_init(&st->names, opts->pid, bpf_map__fd(st->skel->maps.names),
		      bpf_map__fd(st->skel->maps.long_names), bpf_map__fd(st->skel->maps.unresolved));
	st->names_ready = true;
	if (st->all) {
		vt_names_set_procs(&st->names, &st->procs);
		err = VT_PROCS_OPEN(&st->procs, &st->a, st->skel, errbuf, errlen);
		if (err)
			goto fail;
	}

	/* batch buffers: the largest key, and the largest value of a hash map or
	 * array read whole (the names map's, read before each collection) */
	err = vt_adapter_buffers(&st->a, sizeof(struct vt_alloc_key),
				 sizeof(struct vt_name) > sizeof(struct vt_signal_val) ? sizeof(struct vt_name)
										: sizeof(struct vt_signal_val),
				 st->skel->maps.gc_events, vt_vmtrace_on_gc_event, st, errbuf, errlen);
	if (err)
		goto fail;

#ifdef VT_HAVE_SAMPLING
	armings = opts->spawned || opts->all ? 0 : vt_host_armings(opts->pid, opts->probes);
#endif
	st->batch.pid = opts->pid;
	st->batch.probes = opts->probes;
	st->batch.state_fd = bpf_map__fd(st->skel->maps.batch_state);

	if (st->live && (events & VT_EVENTS_ALLOC) && vt_usdt_probe_path(pl, PROVIDER, "live__batch")) {
		err = live_handshake(st, opts);
		if (err) {
			snprintf(errbuf, errlen, "--live: cannot start the live heap's recording in pid %d: %s",
				 (int)opts->pid, strerror(-err));
			goto fail;
		}
	}

	/* the probes that turn counting on go last: the program then counts
	 * from its first object under everything else (stacks, the sampling
	 * period) and runs on with no probe attached after, which takes its
	 * memory map's lock while it runs */
	err = attach_probes(st, table, ntable, events, opts, false, &armed_somewhere, errbuf, errlen);
	if (err)
		goto fail;
	if (opts->stacks & VT_STACK_VM) {
		const char *armed_in = NULL;

		err = vt_vm_stacks_arm(&st->a,
				       opts->stacks == VT_STACK_BOTH ? st->skel->progs.on_stacks_armed
								     : st->skel->progs.on_sample_armed,
				       opts, &armed_in, errbuf, errlen);
		if (err)
			goto fail;
		note_used(st, "stacks__armed");
	}
	if (opts->sample_period) {
		if (!armed_somewhere) {
			err = -ENOTSUP;
			snprintf(errbuf, errlen, "--sample: the target's libvmtrace has no sample__armed probe");
			goto fail;
		}
#ifdef VT_HAVE_SAMPLING
		/* a command not yet exec'd has no libvmtrace mapped to write
		 * into: it gets the period in its environment (spawn_env) */
		if (opts->spawned)
			vt_vmtrace_period_env(st->period_env, sizeof(st->period_env), opts->sample_period);
		else
			err = vt_sample_set_period(opts->pid, opts->probes, opts->sample_period);
		if (err) {
			snprintf(errbuf, errlen, "--sample: cannot set the sampling period in pid %d: %s",
				 (int)opts->pid, strerror(-err));
			goto fail;
		}
#else
		err = -ENOTSUP;
		snprintf(errbuf, errlen, "--sample: this build has no sampling support");
		goto fail;
#endif
		for (size_t i = 0; i < pl->n; i++) {
			const struct vt_usdt_probe *p = &pl->v[i];

			if (strcmp(p->provider, PROVIDER) || strcmp(p->name, "sample__armed") ||
			    !first_of_name(pl, i))
				continue;
			err = vt_adapter_attach(&st->a, st->skel->progs.on_sample_armed, p->path,
						p->name, 0, errbuf, errlen);
			if (err)
				goto fail;
			note_used(st, p->name);
		}
	}
	err = attach_probes(st, table, ntable, events, opts, true, &armed_somewhere, errbuf, errlen);
	if (err)
		goto fail;
	if (vt_adapter_attached(&st->a) == (st->all ? 2u : 0u)) {
		err = -ENOENT;
		snprintf(errbuf, errlen, "pid %d has no vmtrace probes that vmtrace counts", (int)opts->pid);
		goto fail;
	}
	finish_used(st);
#ifdef VT_HAVE_SAMPLING
	/* "recording" is said once a host that arms from a thread of its own
	 * counts: else what it makes meanwhile would be missed unsaid */
	if (!opts->spawned && !opts->all && (events & VT_EVENTS_ALLOC) &&
	    vt_host_wait_armed(opts->pid, opts->probes, armings) == -ETIMEDOUT)
		fprintf(stderr, "vmtrace: pid %d: its provider had not turned counting on after 2 s; "
			"what it makes until it does is not counted\n", (int)opts->pid);
#endif
	if (opts->series_ns)
		vt_series_start(&st->series, opts->series_ns);
	*state = st;
	return 0;

fail:
	vt_skeleton_close(st);
	return err < 0 ? err : -EINVAL;
}

const struct vt_runtime vt_runtime_vmtrace = {
	.name = "vmtrace",
	.provider = PROVIDER,
	.open = vmtrace_open,
	.collect = vt_vmtrace_collect,
	.close = vt_skeleton_close,
	.poll = vmtrace_poll,
	.spawn_env = vt_vmtrace_spawn_env,
	.spawn_early = vt_vmtrace_spawn_early,
	.finish = vmtrace_finish,
	.stacks = true,
};
