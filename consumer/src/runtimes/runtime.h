/*
 * runtime.h: runtime adapters. Each adapter maps one runtime's own USDT
 * probes onto vmtrace's event model (struct vt_profile): it loads its BPF
 * program, attaches it to the probes found in the target, and reads its
 * per-CPU maps back. `record`, `top` and `list` pick the adapter from the
 * providers found in the process (or --runtime), so adding a runtime is
 * adding an entry to the table in runtime.c.
 */
#ifndef VMTRACE_RUNTIME_H
#define VMTRACE_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/profile.h"
#include "runtimes/map_sizes.h"
#include "process/usdt_notes.h"

/* Which events to trace (--events); a runtime takes those it has. */
enum vt_event_set {
	VT_EVENTS_ALLOC = 1 << 0,         /* allocations */
	VT_EVENTS_FREE = 1 << 1,          /* frees */
	VT_EVENTS_GC = 1 << 2,            /* collections and their pauses */
	VT_EVENTS_CACHE = 1 << 3,         /* method/constant cache resets, serial increments */
	VT_EVENTS_SIGNAL = 1 << 4,        /* signals received and handled */
	VT_EVENTS_ALL = (1 << 5) - 1,
};

/* --stack: which stacks allocations are counted under (docs/stacks.md) */
enum vt_stack_mode { VT_STACK_NONE = 0, VT_STACK_VM = 1, VT_STACK_NATIVE = 2, VT_STACK_BOTH = 3 };

/* What the command line asks for, one struct from cli/ to the adapters:
 * the command fills it, the session passes it whole, after setting the
 * target's fields (pid, probes, spawned, all, the period in force). A new
 * option is a field here, set in cli/ and read where it acts. */
struct vt_opts {
	pid_t pid;                        /* -p, 0: none; to an adapter the target, -1 with all */
	char **cmd;                       /* the command after --, or NULL (-p) */
	const char *runtime;              /* --runtime, or NULL: detect */
	bool all;                         /* record --all: every process mapping the probes'
					     files, each row under its own (procs_maps.h) */
	const struct vt_usdt_list *probes; /* every USDT probe mapped by the target (the session's) */
	uint32_t map_entries;             /* size of each counting map (--map-entries), 0 = default */
	uint64_t sample_period;           /* bytes, 0 = exact (--sample); to an adapter the
					     period in force */
	bool sample_set;                  /* --sample was given (0 too) */
	uint32_t events;                  /* enum vt_event_set, 0 = all */
	bool no_methods;                  /* --no-methods: skip per-method attribution */
	bool no_frame_walk;               /* --no-frame-walk: sites and methods from the probes */
	bool spawned;                     /* pid is a command held back before exec (the session's) */
	bool verbose;                     /* -v: libbpf's log */
	uint32_t stacks;                  /* --stack: enum vt_stack_mode bits */
	bool live;                        /* --live: the live heap (docs/live.md) */
	uint32_t live_max;                /* objects tracked at most, 0 = default */
	uint64_t temp_ns;                 /* freed within this is temporary, 0 = default */
	uint64_t series_ns;               /* per-class counts each step (record's timeline), 0 = none */
	bool no_events;                   /* keep no timeline events (serve: nothing shows them) */
	uint32_t gc_pauses;               /* --gc-pauses: pauses kept in the list, 0 = default */
	bool always_on;                   /* serve, --every, --push: left on, sampled by default
					     where the provider inside the runtime samples */
};

#define VT_SPAWN_ENV_MAX 4                /* entries a spawn_env gives at most */
#define VT_SPAWN_ARG "\x01"               /* ... the start of one that is an argument */

/* What a provider given at a followed process's exec (at_exec) is told. */
struct vt_exec_opts {
	const char *asked;       /* --runtime, or NULL */
	bool no_methods;         /* --no-methods */
	uint64_t sample_period;  /* --sample: bytes, 0 for every allocation */
};

/* What a command vmtrace starts is told to load a provider that lives
 * inside its runtime (vt_inside.load_env). */
struct vt_inside_spawn {
	const char *path;        /* the provider's module, as its probes name it */
	const char *launcher;    /* the command's program (argv[0]) */
	bool no_methods;         /* --no-methods */
	uint64_t sample_period;  /* --sample: bytes, 0 for every allocation */
};

/* vmtrace's provider that lives inside a runtime (an extension, an agent):
 * its probes are vmtrace's, read by the vmtrace adapter, and what sets it up
 * lives in the runtime's own folder. */
struct vt_inside {
	const char *what;        /* for a person: "vmtrace's Ruby extension" */
	const char *source;      /* where it is built: "provider/ruby" */
	bool (*is)(const char *path); /* is the module at path this provider? */
	int (*find)(char *path, size_t len); /* built or installed here: 0 with its path */
	/* A command vmtrace starts, running exe with probes: whether it takes
	 * this provider at start, from find's file (whose probes the session
	 * then reads). NULL: it is given otherwise (dlopened, at_exec). */
	bool (*spawn_takes)(const char *exe, const struct vt_usdt_list *probes);
	/* The "NAME=VALUE" entries (or VT_SPAWN_ARG "ARG") that load it into
	 * a command vmtrace starts, their text in buf[len], in env[0],
	 * env[1], ... (up to VT_SPAWN_ENV_MAX - 1, NULL after the last); what
	 * it does in *note (static, or in buf). 0 or a negative errno with
	 * the reason in err. */
	int (*load_env)(const struct vt_inside_spawn *s, char *buf, size_t len, const char **env,
			const char **note, char *err, size_t errlen);
	/* It holds the command it starts in until the probes are attached
	 * (the vmtrace adapter's spawn_early). */
	bool holds;
	/* Optional: why --live cannot count through it (NULL: it can) */
	const char *live_refused;
	/* Optional: the symbol of a 64-bit word in it that a running process
	 * holding it is told --no-methods through (1, else 0) */
	const char *no_methods_symbol;
	uint64_t attach_period;  /* a running process that holds it is sampled at this
				    many bytes unless --sample says; 0: counted exactly */
	bool sample_at_exec;     /* given at a followed exec, it takes --sample */
	bool always_on_samples;  /* --always-on samples a running process that holds it */
	bool frees_dear;         /* a free costs as an allocation: counted only when asked
				    (--events free, --live) */
	/* Optional: when the runtime is traced through its own probes while
	 * this provider is built here, how to have it count inside. */
	const char *hint;
	/* Optional: record --all leaves it dormant, and says so with this */
	const char *all_dormant;
	/* list's line for a process holding it (a printf format, one %s: its path) */
	const char *list_line;
};

struct vt_runtime {
	const char *name;        /* "vmtrace", "ruby", "python": --runtime and the report */
	const char *provider;    /* the USDT provider that identifies it */
	/* Load and attach. On success *state is the adapter's; on failure a
	 * negative errno, with a one-line reason in err (no trailing newline). */
	int (*open)(const struct vt_opts *opts, void **state, char *err, size_t errlen);
	/* Add everything counted so far to out (a fresh profile each call). */
	int (*collect)(void *state, struct vt_profile *out);
	void (*close)(void *state); /* detaches; accepts NULL */
	/* Optional (NULL: nothing to do): wait up to timeout_ms for events that
	 * must be read while the run goes on (ring buffers, strings to read from
	 * the live target) and take them in. `record` and `top` call it in their
	 * loop. 0 or a negative errno (-EINTR when a signal arrived). */
	int (*poll)(void *state, int timeout_ms);
	/* Optional: before the last collect of a recording, make whatever the
	 * target still holds back (batched counts) reach the maps; exited: the
	 * target is gone. What cannot be had is counted as lost. */
	void (*finish)(void *state, bool exited);
	/* Optional: "NAME=VALUE" entries (owned by state) to set in a spawned
	 * command before exec, and why (*note): env[0], env[1], ... up to
	 * VT_SPAWN_ENV_MAX, the first NULL ending them (all NULL on entry).
	 * An entry VT_SPAWN_ARG "ARG" is an argument put right after the
	 * program's name instead (a JVM's -agentpath: no environment to see) */
	int (*spawn_env)(void *state, const char **env, const char **note, char *err, size_t errlen);
	/* Optional: for a spawned command whose counting starts in a module it
	 * loads itself, one that holds it until the probes are attached
	 * (target.h, vt_target_release_held): the command may then start before
	 * open, its runtime booting while the probes load. 1 with the
	 * "NAME=VALUE" entries it needs in env[0], env[1], ... (up to
	 * VT_SPAWN_ENV_MAX, NULL after the last; their text in buf[len]) and
	 * why (*note); 0 when it must wait for open and spawn_env as usual; or
	 * a negative errno. */
	int (*spawn_early)(const struct vt_opts *opts, char *buf, size_t len, const char **env,
			   const char **note, char *err, size_t errlen);
	/* Optional: a library with this runtime's probes that the program exe
	 * loads with dlopen (so the dynamic loader cannot name it before exec):
	 * its path in path[len], 0; or -ENOENT when exe is not such a program. */
	int (*dlopened)(const char *exe, char *path, size_t len);
	/* Optional: what record --all cannot give in a process vmtrace did not
	 * start (a setting only the process's start can make), said once. */
	const char *all_note;
	/* Optional: for a process with none of the probes vmtrace reads,
	 * whether it runs this runtime: 1 with one line in why saying how to
	 * trace it, else 0. */
	int (*unprobed)(pid_t pid, char *why, size_t len);
	/* Optional: the program exe runs this runtime though it has none of
	 * its probes, and the adapter traces it by what it exports: a marker
	 * probe of the runtime's provider (naming exe) added to probes, 1;
	 * else 0. */
	int (*claim)(const char *exe, struct vt_usdt_list *probes);
	/* Optional: a process vmtrace follows, stopped at its exec of exe
	 * (follow.h), given this runtime's provider (an argument inserted, a
	 * file placed in its root) when probes show the runtime and the
	 * runtime asked for (NULL: any) allows it; the provider's probes added
	 * to probes. Nothing changed when it does not apply or fails. */
	void (*at_exec)(pid_t pid, const char *exe, const struct vt_exec_opts *o,
			struct vt_usdt_list *probes);
	/* Optional: load this runtime's provider (the one that lives inside
	 * it) into pid, a running process with probes that has not loaded it:
	 * 1 when its module is mapped now, with a line saying what was done in
	 * note; 0 when pid does not run this runtime (or, not asked for by
	 * --runtime vmtrace, has nothing to load); -errno with a one-line
	 * reason in note. */
	int (*load_provider)(pid_t pid, const struct vt_usdt_list *probes, bool asked, char *note,
			     size_t len);
	/* Optional: its own probes, for a person: "HotSpot's probes" */
	const char *own_probes;
	/* Optional: vmtrace's provider that lives inside this runtime */
	const struct vt_inside *inside;
	/* allocations counted under VM stacks (--stack) */
	bool stacks;
	/* Optional: the programs of this runtime a process started later may
	 * run (record --all watches their files), NULL-ended */
	const char *const *programs;
	/* Optional: list's line saying what record takes from a process with
	 * this runtime's probes: 1 with it in line, else 0 */
	int (*list_line)(char *line, size_t len);
	/* Optional: for a command vmtrace follows to the runtime it starts
	 * (follow.h), what its environment gets for this runtime before its
	 * first exec, as no adapter is open yet to say it: "NAME=VALUE"
	 * entries (static) in env[0..max), their count; asked: --runtime. */
	size_t (*follow_env)(const char *asked, const char **env, size_t max);
	/* Optional, with follow_env: the process pid, taken at its exec for
	 * the runtime chosen, probes its probes: whether it keeps the entry
	 * named name (it may put another copy of the provider into probes). */
	bool (*follow_keeps)(pid_t pid, const char *name, const char *chosen,
			     struct vt_usdt_list *probes);
};

/* The adapter whose provider has probes in the list (vmtrace first), or
 * NULL when none does. */
const struct vt_runtime *vt_runtime_detect(const struct vt_usdt_list *probes);
/* The adapter named name, or NULL. */
const struct vt_runtime *vt_runtime_by_name(const char *name);
/* The line of the first runtime that knows pid's program as its own,
 * though pid has none of its probes (unprobed): 1, or 0 when none does. */
int vt_runtime_unprobed(pid_t pid, char *why, size_t len);
/* The first runtime that claims exe (claim): 1 with its marker probe in
 * probes, or 0. */
int vt_runtime_claim(const char *exe, struct vt_usdt_list *probes);
/* Every runtime's at_exec, in table order. */
void vt_runtime_at_exec(pid_t pid, const char *exe, const struct vt_exec_opts *o,
			struct vt_usdt_list *probes);
/* The first runtime's load_provider that does not answer 0, its answer,
 * that runtime in *which; 0 when none applies. */
int vt_runtime_load_provider(pid_t pid, const struct vt_usdt_list *probes, bool asked, char *note,
			     size_t len, const struct vt_runtime **which);
/* The provider inside a runtime that the module at path is, or NULL. */
const struct vt_inside *vt_inside_of(const char *path);
/* The first of l's vmtrace probes in a provider inside a runtime: that
 * provider, its module in *path; NULL ("" in *path) when none is. */
const struct vt_inside *vt_inside_among(const struct vt_usdt_list *l, const char **path);
/* Every runtime's follow_env: at most max entries in env, NULL after them. */
void vt_runtime_follow_env(const char *asked, const char **env, size_t max);
/* The process pid, taken at its exec for the runtime chosen: what it does
 * not keep (follow_keeps) of vt_runtime_follow_env's entries is put back as
 * the command had it (exec_env.h), so the program sees its own environment. */
void vt_runtime_give_back_env(pid_t pid, const char *chosen, struct vt_usdt_list *probes);
/* The table itself, in detection order (for --runtime's list of names). */
size_t vt_runtime_count(void);
const struct vt_runtime *vt_runtime_at(size_t i); /* NULL past the end */

#endif /* VMTRACE_RUNTIME_H */
