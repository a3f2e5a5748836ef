/*
 * adapter.h: the plumbing every runtime adapter shares (runtime.h): counting
 * the CPUs, the one-line reasons a load or an attach fails, the links, the
 * GC ring buffer and the events it delivers, and reading per-CPU maps back.
 * Each adapter embeds a struct vt_adapter in its state.
 */
#ifndef VMTRACE_ADAPTER_H
#define VMTRACE_ADAPTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <bpf/libbpf.h>

#include "profile/profile.h"
#include "process/usdt_notes.h"
#include "runtimes/uprobe_multi.h"

struct vt_proc_table;

#define VT_ADAPTER_BATCH_ROWS 256 /* keys per bpf_map_lookup_batch call */

/* Events taken from the ring buffer, kept until collect reads them: the
 * most recent `limit`, in a ring (vt_adapter_events puts them in order). */
struct vt_event_log {
	void *v;
	size_t n, cap, size;     /* size: bytes of one event */
	size_t limit;            /* events kept at most (vt_adapter_init: 0 = the default) */
	size_t head;             /* the oldest, once the ring is full */
	uint64_t dropped;        /* older events the newer ones replaced */
	int err;                 /* -ENOMEM while storing one */
};

struct vt_adapter {
	const char *provider;    /* the USDT provider attached to */
	const char *attach_label; /* put before a probe's name in an attach error */
	pid_t pid;
	int ncpus;
	struct bpf_link **links;  /* libbpf's, where the kernel makes no uprobe_multi */
	size_t nlinks;
	bool multi;               /* uprobes and USDT probes attach as uprobe_multi links */
	struct vt_uprobe_links mlinks;
	struct ring_buffer *rb;
	struct vt_event_log events;
	struct vt_gc_stats gc[VT_GC_KINDS]; /* every pause, counted as it arrives */
	size_t gc_keep;          /* pauses a profile's list keeps (init: events.limit) */
	struct vt_gc_pauses gc_longest; /* the gc_keep longest of all */
	struct vt_gc_pauses gc_fresh;   /* the gc_keep longest since the last collection */
	/* the skeleton each adapter fills in (skeleton.h): its BPF skeleton,
	 * how it goes, what else its state holds, and record --all's processes */
	void *skel;
	void (*destroy)(void *skel);  /* NAME_bpf__destroy */
	void (*release)(void *state); /* Optional: the rest of the state's own, before it is freed */
	struct vt_proc_table *procs;  /* record --all's (vt_proc_table_open), else NULL */
	void *keys, *vals;       /* batch buffers */
	void *merged;            /* one value, merged across CPUs */
	size_t key_size, val_size; /* the largest key and value they hold */
};

/* Set the provider, pid and CPU count, and keep at most log_limit events
 * (0: VT_GC_PAUSES_DEFAULT); 0, or a negative errno with the reason in errbuf. */
int vt_adapter_init(struct vt_adapter *a, const char *provider, const char *attach_label,
		    pid_t pid, size_t event_size, size_t log_limit, char *errbuf, size_t errlen);
/* After NAME_bpf__open() returned NULL: the errno, with the reason in errbuf. */
int vt_adapter_open_failed(char *errbuf, size_t errlen);
/* Before NAME_bpf__load(): map holds `user` entries at most (--map-entries)
 * or, 0, def; a hash map is made without preallocation, so its size is a
 * ceiling and it costs what it holds. */
void vt_adapter_size_map(struct bpf_map *map, uint32_t user, uint32_t def);
/* Before NAME_bpf__load(): uprobe_multi links for its uprobes and USDT
 * probes where the kernel makes them (uprobe_multi.h). */
void vt_adapter_before_load(struct vt_adapter *a, struct bpf_object *obj);
/* After NAME_bpf__load() failed with err: err, with the reason in errbuf. */
int vt_adapter_load_failed(int err, char *errbuf, size_t errlen);
/* Batch buffers for keys up to key_size and values up to val_size bytes,
 * and the ring buffer of map events, whose samples go to fn(ctx, ...)
 * (events NULL: a runtime with none, which then never drains or polls). */
int vt_adapter_buffers(struct vt_adapter *a, size_t key_size, size_t val_size,
		       struct bpf_map *events, ring_buffer_sample_fn fn, void *ctx,
		       char *errbuf, size_t errlen);
/* Attach prog to every site of provider:probe in the module at path. */
int vt_adapter_attach(struct vt_adapter *a, struct bpf_program *prog, const char *path,
		      const char *probe, uint64_t cookie, char *errbuf, size_t errlen);
/* Attach prog as a uprobe on the function func of the module at path, or,
 * func NULL, at file_offset in it; bpf_get_attach_cookie() returns cookie.
 * ref_ctr_offset, when not 0, is the file offset of a USDT semaphore the
 * kernel raises while the uprobe is attached (so the runtime calls the code
 * behind that probe's gate). */
int vt_adapter_attach_uprobe(struct vt_adapter *a, struct bpf_program *prog, const char *path,
			     const char *func, uint64_t file_offset, uint64_t cookie,
			     uint64_t ref_ctr_offset, char *errbuf, size_t errlen);
/* How many attachments a holds, of every kind. */
size_t vt_adapter_attached(const struct vt_adapter *a);
/* Attach prog where its section says (a tracepoint). */
int vt_adapter_attach_program(struct vt_adapter *a, struct bpf_program *prog, char *errbuf,
			      size_t errlen);
/* Detach (the reverse of attaching) and free the ring buffer and buffers;
 * the caller then destroys its skeleton. */
void vt_adapter_release(struct vt_adapter *a);

/* Room for one more event in a->events: once it holds events.limit, the
 * oldest one's (NULL, and events.err set, on ENOMEM). */
void *vt_adapter_event_slot(struct vt_adapter *a);
/* The events kept, oldest first (*n of them); NULL with *n 0 on ENOMEM. */
void *vt_adapter_events(struct vt_adapter *a, size_t *n);
/* Count a pause into a->gc as it arrives, and keep it if it is among the
 * gc_keep longest (events.err is -ENOMEM when that fails). */
void vt_adapter_count_pause(struct vt_adapter *a, const struct vt_gc_pause *g);
/* Take in what the ring buffer holds: 0 or the error storing an event. */
int vt_adapter_drain(struct vt_adapter *a);
/* poll() for adapters whose BPF side submits without a wakeup. */
int vt_adapter_poll(struct vt_adapter *a, int timeout_ms);

/* Every row of a per-CPU hash map: fn(key, value merged across CPUs, ctx);
 * stops at fn's first non-zero return. */
typedef int (*vt_row_fn)(const void *key, const void *val, void *ctx);
int vt_adapter_read_hash(struct vt_adapter *a, struct bpf_map *map, vt_row_fn fn, void *ctx);
/* One entry of a per-CPU array, merged; max_offs name the fields that are maxima. */
int vt_adapter_read_entry(struct vt_adapter *a, struct bpf_map *map, uint32_t key, void *out,
			  const size_t *max_offs, size_t nmax);
/* Entries 0..n-1 of a per-CPU array of counters, summed across CPUs. */
int vt_adapter_read_counters(struct vt_adapter *a, struct bpf_map *map, uint32_t n, uint64_t *c);
/* A loss row per counter from..to-1, named by names[i]. */
int vt_adapter_add_losses(struct vt_profile *out, const char *const *names, const uint64_t *c,
			  size_t from, size_t to);

/* Does the list hold provider:name in the module at path? */
bool vt_usdt_has_probe(const struct vt_usdt_list *pl, const char *provider, const char *path,
		       const char *name);
/* The module holding provider:name (the first in the list), or NULL. */
const char *vt_usdt_probe_path(const struct vt_usdt_list *pl, const char *provider,
			       const char *name);
/* After vt_adapter_drain: the summary of every GC pause the ring buffer
 * delivered, the gc_keep longest (out->gc_pauses) and the longest since the
 * previous call (out->gc_fresh, which starts again empty), into out. */
int vt_adapter_add_pauses(struct vt_adapter *a, struct vt_profile *out);
/* The pauses a stock runtime's BPF program counted (pauses.bpf.h, its
 * pause_counts map) replace the ring's per kind where they are more: a full
 * ring lost records, not counts. Before vt_adapter_add_pauses. */
int vt_adapter_pauses_counted(struct vt_adapter *a, struct bpf_map *map);
/* Fixed-size key field -> C string (the BPF side NUL-terminates, but a field
 * is never trusted to). */
void vt_key_string(char *dst, size_t dlen, const char *src, size_t slen);

#endif /* VMTRACE_ADAPTER_H */
