/*
 * profile.h: what one recording holds, whatever collected it.
 *
 * `vmtrace record` fills a vt_profile from the BPF maps, writes it to a
 * record file and prints it; `vmtrace report` reads it back and prints it.
 * All strings are owned by the profile (copied in by the add functions).
 * Counts and bytes of allocations are estimates when sample_period != 0.
 */
#ifndef VMTRACE_PROFILE_H
#define VMTRACE_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile_stack.h"

/* The gc__begin kind argument: 0 = minor, 1 = major for vmtrace's provider;
 * Ruby's mark and sweep phases and CPython's generations 0, 1, 2 use the
 * same slots (vt_gc_kind_name names them per runtime). */
#define VT_GC_KINDS 3
#define VT_MAX_SIGNAL 65
#define VT_HIST_BUCKETS 64 /* log2 buckets: bucket i holds [2^i, 2^(i+1)) ns */

struct vt_alloc {               /* one (class, method, site), under one stack */
	char *klass, *method, *site; /* site "" when the runtime gave none */
	uint64_t count, bytes;       /* scaled by the sampling weights */
	uint64_t samples;            /* probe hits behind this row */
	uint32_t stack;              /* 0: no stack; else stacks.v[stack - 1] */
	uint32_t proc;               /* 0: the one target; else procs.v[proc - 1] */
};

struct vt_process {             /* one of several processes recorded at once */
	int32_t pid;
	char *comm;                  /* its /proc/PID/comm */
	char *cgroup;                /* its cgroup path at attach ("/": the root) */
	char *runtime;               /* the adapters that counted it, "ruby,vmtrace"; NULL:
					not said (record files keep none) */
};


struct vt_keyed_count {         /* a count per one or two names */
	char *name, *name2;          /* name2 "" where the key has one name */
	uint64_t count;
};

struct vt_gc_pause {            /* one collection, in order of its end */
	int kind;
	uint64_t duration_ns;
	uint64_t heap_bytes;         /* heap size at gc__end */
	uint64_t allocated_bytes;    /* bytes allocated since the previous collection */
	uint64_t objects_collected;  /* objects freed by it, 0 when the runtime does not say */
	int64_t at_ns;               /* its start, ns after start_unix_ns (when tid != 0) */
	uint32_t tid;                /* the collecting thread; 0 = not known */
};

/* Every pause of one GC kind, exactly, however many the pause list keeps. */
struct vt_gc_stats {
	uint64_t count, total_ns, max_ns;
	uint64_t allocated_bytes, allocated_max; /* bytes allocated between collections */
	uint64_t objects_collected;
	uint64_t hist[VT_HIST_BUCKETS];          /* pauses by log2 of microseconds */
};

/* Pauses the list keeps by default (--gc-pauses): the longest ones. */
#define VT_GC_PAUSES_DEFAULT 4096
#define VT_GC_PAUSES_MAX (1u << 24)

/* A moment on the timeline (--format perfetto) besides the GC pauses. */
enum vt_event_kind {
	VT_EVENT_SIGNAL,             /* a signal handled: arg signo, dur_ns its latency, at_ns
					when it was handled */
	VT_EVENT_METHOD_CACHE_RESET, /* name class, name2 method ("" = whole class) */
	VT_EVENT_CONSTANT_CACHE_RESET, /* name the constant */
	VT_EVENT__COUNT
};

#define VT_TIMELINE_MAX 200000   /* events kept at most; later ones are counted as lost */

struct vt_event {
	int kind;                    /* enum vt_event_kind */
	uint32_t tid;
	int64_t at_ns;               /* ns after start_unix_ns */
	uint64_t dur_ns;
	int64_t arg;
	uint64_t serial;             /* cache resets: the serial the runtime gave */
	char *name, *name2;          /* "" where the kind has none */
};

struct vt_signal {              /* one signal number */
	int signo;
	uint64_t received, handled;
	uint64_t latency_total_ns, latency_max_ns;
	uint64_t latency_hist[VT_HIST_BUCKETS];
};

struct vt_free {                /* objects freed (object__free), per class */
	char *klass;
	uint64_t count, bytes;
};

/* Objects allocated and not freed at the end (--live, docs/live.md), per
 * (class, method, site); count and bytes are weighted like allocations
 * (pprof's inuse_objects and inuse_space). */
struct vt_live {
	char *klass, *method, *site;
	uint64_t count, bytes;       /* still alive at the end */
	uint64_t objects;            /* tracked objects behind the row (samples) */
	uint64_t temp_count, temp_bytes; /* freed within live_info.temp_ns of their allocation */
};

struct vt_live_info {
	bool on;                     /* the recording tracked the live heap */
	uint64_t max_tracked;        /* --live-max */
	uint64_t temp_ns;            /* --temp */
	uint64_t peak_bytes;         /* the most live bytes at any moment */
	int64_t peak_at_ns;          /* when, ns after start_unix_ns */
	uint64_t age_hist[VT_HIST_BUCKETS]; /* objects alive at the end by log2 age (ns) */
};

/* One class in one step of the recording (the timeline): what it
 * allocated and freed in [step, step + 1) × series_step_ns, and its bytes
 * allocated less freed since the start at the step's end (its live bytes
 * when every object freed was allocated while tracing). */
struct vt_series {
	char *klass;
	uint32_t step;
	uint64_t allocs, alloc_bytes, frees, free_bytes;
	int64_t live_bytes;
};

struct vt_lost {                /* events or strings not counted where they belong */
	char *what;                  /* e.g. "alloc map full", "unreadable string" */
	uint64_t count;
};

#define VT_VEC(type) struct { type *v; size_t n, cap; }

/* A bounded list of pauses: the longest ones, in the order they came. */
struct vt_gc_pauses {
	struct vt_gc_pause *v;
	size_t n, cap;
	uint64_t floor_ns;           /* the shortest kept, once n is at the bound */
};

struct vt_profile {
	char *runtime;               /* "vmtrace", "ruby", "python" */
	char *probes;                /* the probes used, comma separated */
	char *target;                /* the command line of the target */
	int32_t pid;
	double duration_s;
	uint64_t start_unix_ns;       /* wall clock when recording began; 0 = unknown */
	uint64_t sample_period;      /* 0 = exact */
	bool has_allocations;        /* false: the runtime has no allocation probes */
	VT_VEC(struct vt_alloc) allocs;
	VT_VEC(struct vt_keyed_count) method_cache_resets;   /* class, method ("" = whole class) */
	VT_VEC(struct vt_keyed_count) constant_cache_resets; /* name */
	VT_VEC(struct vt_keyed_count) global_serial_incs;    /* reason */
	uint64_t last_serial;
	uint64_t gc_collections[VT_GC_KINDS];
	struct vt_gc_pauses gc_pauses;                       /* the gc_pauses_limit longest */
	size_t gc_pauses_limit;      /* 0 = every pause (the default of vt_profile_init) */
	/* of a collection (vt_session_collect): the longest pauses since the
	 * previous one, which `record --every` lists for its interval */
	struct vt_gc_pauses gc_fresh;
	struct vt_gc_stats gc_stats[VT_GC_KINDS];            /* every pause, kept or not */
	VT_VEC(struct vt_signal) signals;
	VT_VEC(struct vt_keyed_count) calls;                 /* function or method calls: name, file */
	VT_VEC(struct vt_lost) lost;                         /* every loss counter, zeros included */
	VT_VEC(struct vt_free) frees;
	VT_VEC(struct vt_event) events;                      /* in the order they happened */
	struct vt_stack_table stacks;                        /* each stack once */
	VT_VEC(struct vt_live) live;                         /* with live_info.on */
	VT_VEC(struct vt_series) series;                     /* by class, then step */
	uint64_t series_step_ns;     /* the timeline's step (records before version 4: 1 s) */
	VT_VEC(struct vt_process) procs;                     /* -p PID,PID...: allocs' proc */
	struct vt_live_info live_info;
	void *index;                 /* private: the adders' lookup tables */
};

/* The adders keep an index into the vectors: read them freely, but change
 * them only through the adders (never reorder or remove rows). */
void vt_profile_init(struct vt_profile *p); /* empty, has_allocations = true */
void vt_profile_free(struct vt_profile *p); /* accepts NULL */

/* Setters and adders copy their strings; adding an existing key adds to it.
 * Each returns 0, -ENOMEM, or -EOVERFLOW (nothing added) when a value would
 * take the sum of its column over all rows past 2^64-1: every total a report
 * prints then fits in 64 bits. */
int vt_profile_set_meta(struct vt_profile *p, const char *runtime, const char *probes,
			const char *target, int32_t pid);
int vt_profile_add_alloc(struct vt_profile *p, const char *klass, const char *method,
			 const char *site, uint64_t count, uint64_t bytes, uint64_t samples);
/* ... counted under stack (0: none; else a number from vt_profile_add_stack) */
int vt_profile_add_alloc_stack(struct vt_profile *p, const char *klass, const char *method,
			       const char *site, uint32_t stack, uint64_t count, uint64_t bytes,
			       uint64_t samples);
/* ... in process proc (0: none; else a number from vt_profile_add_process) */
int vt_profile_add_alloc_proc(struct vt_profile *p, uint32_t proc, const char *klass,
			      const char *method, const char *site, uint32_t stack, uint64_t count,
			      uint64_t bytes, uint64_t samples);
/* A process of a recording of several (profile_merge.c): *id gets its
 * number, the same for the same pid. 0, -ENOMEM, -EINVAL (pid <= 0). */
int vt_profile_add_process(struct vt_profile *p, int32_t pid, const char *comm,
			   const char *cgroup, uint32_t *id);
/* Names runtime ("a", or a list "a,b") among those that counted process id,
 * each once. 0 or -ENOMEM. */
int vt_profile_process_runtime(struct vt_profile *p, uint32_t id, const char *runtime);
/* Adds everything src counted to dst, its allocations under process proc
 * (0: none); src's timeline, events and pause list are left out (its GC
 * summary is added). 0, -ENOMEM, -EOVERFLOW. */
int vt_profile_merge(struct vt_profile *dst, const struct vt_profile *src, uint32_t proc);
/* As proc of the two above: each allocation stays under its own process of
 * src (record --all: one source of many processes). */
#define VT_PROFILE_OWN_PROCS UINT32_MAX
/* Adds src's rows to dst: allocations (under process proc, 0: none, with
 * their stacks), cache resets, calls, lost, frees and signals; not its
 * header, GC figures, timeline or pauses. 0, -ENOMEM, -EOVERFLOW. */
int vt_profile_add_rows(struct vt_profile *dst, const struct vt_profile *src, uint32_t proc);
/* Intern a stack (frames root first, depth >= 1, copied): *id gets its
 * number, the same for the same frames. 0, -ENOMEM, -EINVAL (depth 0). */
int vt_profile_add_stack(struct vt_profile *p, const struct vt_frame *frames, uint32_t depth,
			 bool cut, uint32_t *id);
/* The number in dst of src's stack id (interned into dst); 0 stays 0. */
int vt_profile_stack_from(struct vt_profile *dst, const struct vt_profile *src, uint32_t id,
			  uint32_t *out);
int vt_profile_add_method_cache_reset(struct vt_profile *p, const char *klass,
				      const char *method, uint64_t count);
int vt_profile_add_constant_cache_reset(struct vt_profile *p, const char *name, uint64_t count);
int vt_profile_add_global_serial_inc(struct vt_profile *p, const char *reason, uint64_t count);
/* Keep g in l if it is among the limit longest seen (0 = no limit): at the
 * bound the shortest kept one goes (of equal ones the latest), or g does
 * when it is no longer. The list stays in the order the pauses came. */
int vt_gc_pauses_keep(struct vt_gc_pauses *l, size_t limit, const struct vt_gc_pause *g);
/* Put l in order of start where the pauses have one (tid != 0); equal
 * starts, and pauses without one, stay in the order they came. */
void vt_gc_pauses_by_start(struct vt_gc_pauses *l);
/* Counts the pause in gc_stats and keeps it in gc_pauses (vt_gc_pauses_keep
 * with gc_pauses_limit). */
int vt_profile_add_gc_pause(struct vt_profile *p, const struct vt_gc_pause *pause);
/* Only one of the two: keep a pause already counted, or add counts whose
 * pauses are not all kept (s->count pauses of kind). */
int vt_profile_keep_gc_pause(struct vt_profile *p, const struct vt_gc_pause *pause);
int vt_profile_add_gc_stats(struct vt_profile *p, int kind, const struct vt_gc_stats *s);
/* Pauses of kind counted in gc_stats but not in the list (0 while it is complete). */
uint64_t vt_gc_not_kept(const struct vt_profile *p, int kind);
/* Does gc_stats count at least the pauses the list holds, per kind? */
bool vt_gc_list_fits(const struct vt_profile *p);
/* Count one pause into s (the adapters' running summaries use it too). */
void vt_gc_stats_add(struct vt_gc_stats *s, const struct vt_gc_pause *g);
/* received/handled/latency add to the signal's row; hist may be NULL */
int vt_profile_add_signal(struct vt_profile *p, int signo, uint64_t received, uint64_t handled,
			  uint64_t latency_ns_total, uint64_t latency_ns_max,
			  const uint64_t hist[VT_HIST_BUCKETS]);
int vt_profile_add_call(struct vt_profile *p, const char *name, const char *file, uint64_t count);
int vt_profile_add_lost(struct vt_profile *p, const char *what, uint64_t count);
int vt_profile_add_free(struct vt_profile *p, const char *klass, uint64_t count, uint64_t bytes);
/* The live row of (klass, method, site), appended zeroed when new; NULL on
 * ENOMEM. vt_profile_live_of finds one without adding (NULL: none). */
struct vt_live *vt_profile_live_row(struct vt_profile *p, const char *klass, const char *method,
				    const char *site);
const struct vt_live *vt_profile_live_of(const struct vt_profile *p, const char *klass,
					 const char *method, const char *site);
/* Adds to the live row of (klass, method, site) (profile_live.c); sets live_info.on. */
int vt_profile_add_live(struct vt_profile *p, const struct vt_live *row);
/* Appends one timeline row (its class copied) (profile_live.c). */
int vt_profile_add_series(struct vt_profile *p, const struct vt_series *row);
/* The start of the timeline step with index step, in ns from the recording's start. */
uint64_t vt_series_start_ns(const struct vt_profile *p, uint64_t step);
/* Appends e (its strings copied; NULL is ""). */
int vt_profile_add_event(struct vt_profile *p, const struct vt_event *e);
/* "minor"/"major" for vmtrace's provider, "mark"/"sweep" for Ruby,
 * "gen0".."gen2" for CPython. */
const char *vt_gc_kind_name(const struct vt_profile *p, int kind);

/* Record files (docs/record-format.md). write: atomically (temp file in the
 * same directory, fsync, rename); -EEXIST when path exists and !force.
 * read: initializes p (whatever it held is not freed) and fills it; on error
 * p is left empty. -EBADMSG when the file is not a vmtrace record or is
 * truncated or damaged, -EPROTONOSUPPORT when it was written by a newer
 * version of the format, -errno when it cannot be read. */
int vt_profile_write(const struct vt_profile *p, const char *path, bool force);
int vt_profile_read(struct vt_profile *p, const char *path);
/* Would vt_profile_write(path, force) be able to write? Checked before a
 * recording starts, so a bad -o fails at once rather than after the run:
 * -EEXIST, -EISDIR, or the errno of creating a file beside path. A device
 * node, FIFO or socket at path is written into, never replaced. */
int vt_profile_check_output(const char *path, bool force);
/* Would vt_profile_write(path) write a file of its own (a new or regular
 * one), not into a device, FIFO or socket that something else may share? */
bool vt_profile_output_is_file(const char *path);

/* The limits a reader enforces (docs/record-format.md): a line of at most
 * VT_RECORD_LINE_MAX bytes, a duration from 0 to VT_RECORD_DURATION_MAX
 * seconds, column totals that fit in 64 bits. */
#define VT_RECORD_LINE_MAX (1 << 20)
#define VT_RECORD_DURATION_MAX 1e10

/* What was wrong with a record that did not read: the line (1 = the magic
 * line, 0 = the file as a whole) and why, in a few words. */
struct vt_record_error {
	unsigned long line;
	char what[128];
};
/* vt_profile_read, also saying where and why a damaged record failed (e
 * may be NULL). */
int vt_profile_read_detail(struct vt_profile *p, const char *path, struct vt_record_error *e);
/* The same from an open stream (left open), for readers of memory or pipes. */
int vt_profile_read_stream(struct vt_profile *p, FILE *f, struct vt_record_error *e);
/* The whole record into an open stream (left open), as vt_profile_write
 * writes it into its file; 0 or -errno. */
int vt_profile_write_stream(const struct vt_profile *p, FILE *f);

#endif /* VMTRACE_PROFILE_H */
