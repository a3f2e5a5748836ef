/*
 * vmtrace_state.h: the state of the adapter for vmtrace's own provider,
 * shared by its two halves: runtime_vmtrace.c (load, attach, poll, finish)
 * and vmtrace_collect.c (the maps and events read into a profile).
 */
#ifndef VT_VMTRACE_STATE_H
#define VT_VMTRACE_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "runtimes/adapter.h"
#include "profile/profile.h"
#include "process/native_symbols.h"
#include "runtimes/proc_table.h"
#include "runtimes/runtime.h"
#include "runtimes/vmtrace/vmtrace_batch.h"
#include "runtimes/vmtrace/vmtrace_names.h"
#include "runtimes/vmtrace/vmtrace_series.h"
#include "runtimes/vmtrace/vmtrace_stacks.h"

struct vmtrace_state {
	struct vt_adapter a;        /* events: struct vt_gc_event */
	struct vmtrace_bpf *skel;
	uint64_t sample_period;
	bool live;                  /* --live: the addresses too (live__batch, or per event) */
	uint64_t live_max, temp_ns;
	struct vt_series_rec series; /* record's timeline; empty unless asked for */
	struct vt_batch_end batch;  /* the kinds attached through alloc__batch / free__batch */
	uint64_t unflushed;         /* rounds that never came (vt_batch_finish) */
	struct vt_symbolizer *syms; /* --stack native: the target's mappings and symbols */
	struct vt_vm_stacks vm_stacks; /* --stack vm/both: the stacks' frames, mapped */
	struct timespec maps_read;  /* when syms last read them */
	struct vt_names names;      /* set up once the maps are loaded */
	bool all;                   /* record --all: keys carry their process's slot */
	bool spawned;               /* a command vmtrace starts: what its runtime made before
				       counting began is a figure of the report */
	struct vt_proc_table procs; /* ... and these are the processes */
	bool names_ready;
	char probes_used[512];
	char period_env[64];        /* VMTRACE_SAMPLE_PERIOD=N for a spawned command */
	char live_env[64];          /* VMTRACE_LIVE_TEMP_NS=N for a spawned command (--live) */
	const struct vt_inside *inside; /* the provider inside a runtime among the probes
				       (the Ruby extension, the JVM agent, ...), or NULL */
	char inside_path[4096];     /* ... its module */
	struct vt_inside_spawn inside_spawn; /* what a command vmtrace starts is told */
	char launcher[256];         /* a spawned command's name: how its runtime gets it */
	char load_env[8192];        /* RUBYLIB=..., PYTHONPATH=... or JAVA_TOOL_OPTIONS=... that
				       loads it into a spawned runtime, and what it says */
	uint64_t prev_alloc_total;  /* alloc_total of the last GC record */
	uint64_t events_replaced;   /* timeline events the bounded log let go */
};

/* The ring buffer's callback: a GC pause counted, a timeline event logged. */
int vt_vmtrace_on_gc_event(void *ctx, void *data, size_t size);

/* The adapter's collect: every map and the event log into out. */
int vt_vmtrace_collect(void *state, struct vt_profile *out);

/* The provider inside a runtime among opts's probes taken into st (its
 * module, what a command vmtrace starts is told); what it cannot count
 * refused, a running one told --no-methods. 0 or a negative errno. */
int vt_vmtrace_take_inside(struct vmtrace_state *st, const struct vt_opts *opts, char *errbuf,
			   size_t errlen);
/* "VMTRACE_SAMPLE_PERIOD=N", which libvmtrace reads from its environment
 * as it loads (and removes): snprintf's result. */
int vt_vmtrace_period_env(char *buf, size_t len, uint64_t period);
/* The adapter's spawn_early and spawn_env (runtime.h). */
int vt_vmtrace_spawn_early(const struct vt_opts *opts, char *buf, size_t len, const char **env,
			   const char **note, char *errbuf, size_t errlen);
int vt_vmtrace_spawn_env(void *state, const char **env, const char **note, char *errbuf, size_t errlen);

#endif /* VT_VMTRACE_STATE_H */
