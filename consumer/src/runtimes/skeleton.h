/*
 * skeleton.h: the adapter skeleton each runtime fills in (runtime.h). An
 * adapter's state begins with its struct vt_adapter; open sets the
 * adapter's skel, destroy and, when the state holds more, release; then
 * poll and close are these, the same for every runtime.
 */
#ifndef VMTRACE_SKELETON_H
#define VMTRACE_SKELETON_H

#include <stddef.h>

#include <bpf/libbpf.h>

struct vt_adapter;
struct vt_proc_table;

/* After NAME_bpf__open(): skel (NULL: the open failed) kept in a for
 * vt_skeleton_close, with destroy (a wrapper of NAME_bpf__destroy) and
 * release (the rest of the state's own, or NULL). 0, or the errno with
 * the reason in errbuf. */
int vt_skeleton_opened(struct vt_adapter *a, void *skel, void (*destroy)(void *skel),
		       void (*release)(void *state), char *errbuf, size_t errlen);

/* The BPF skeleton s of object obj loaded, uprobe_multi's links prepared
 * first (adapter.h): 0, or the errno with the reason in errbuf. */
int vt_skeleton_load(struct vt_adapter *a, struct bpf_object_skeleton *s, struct bpf_object *obj,
		     char *errbuf, size_t errlen);
/* For a state st with a, skel (whose object includes procs.bpf.h), all and
 * procs: the skeleton loaded, then, with record --all, the processes'
 * table opened (proc_table.h). 0 or the errno, the reason in errbuf. */
int vt_skeleton_load_procs(struct vt_adapter *a, struct bpf_object_skeleton *s, struct bpf_object *obj,
			   struct vt_proc_table *procs, struct bpf_map *procs_map, struct bpf_map *slots,
			   struct bpf_program *on_exec, struct bpf_program *on_exit, char *errbuf, size_t errlen);
#define VT_SKELETON_LOAD(st, errbuf, errlen)                                                         \
	vt_skeleton_load_procs(&(st)->a, (st)->skel->skeleton, (st)->skel->obj,                      \
			       (st)->all ? &(st)->procs : NULL, (st)->skel->maps.procs,             \
			       (st)->skel->maps.proc_slots, (st)->skel->progs.vt_proc_exec,         \
			       (st)->skel->progs.vt_proc_exit, (errbuf), (errlen))

/* runtime.h's poll: record --all's processes read while they live (their
 * cgroups), and the ring buffer's events taken in; a runtime with no ring
 * waits the slice out. */
int vt_skeleton_poll(void *state, int timeout_ms);

/* runtime.h's close: detached (adapter.h, vt_adapter_release), the BPF
 * skeleton destroyed, the processes' table freed, the state's own released,
 * the state freed. Accepts NULL. */
void vt_skeleton_close(void *state);

#endif
