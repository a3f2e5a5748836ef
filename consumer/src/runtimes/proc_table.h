/*
 * proc_table.h: the processes of `record --all` as one adapter's BPF side
 * numbered them (procs_maps.h: a slot per process, in its keys' top bits).
 * A process is learnt when the first key of its slot is read, or sooner
 * (vt_proc_table_refresh, from the adapter's poll): its cgroup is read from
 * /proc while it lives; its comm is the one the kernel saw at its first
 * event, so a process gone by the end keeps its name.
 */
#ifndef VMTRACE_PROC_TABLE_H
#define VMTRACE_PROC_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/profile.h"
#include "runtimes/procs_maps.h"

struct vt_proc_info {
	pid_t pid;                   /* 0: an unused slot */
	char *comm, *cgroup;         /* cgroup NULL: it was gone before it could be read */
};

struct vt_proc_table {
	int procs_fd, slots_fd;      /* the BPF procs and proc_slots maps */
	struct vt_proc_info *v;      /* v[slot], slot 1..n-1 */
	size_t n;
};

void vt_proc_table_init(struct vt_proc_table *t, int procs_fd, int slots_fd);
struct vt_adapter;
struct bpf_map;
struct bpf_program;
/* init with the procs and proc_slots maps of an adapter's skeleton, and
 * attach its exec and exit programs (procs.bpf.h) through a. 0 or -errno
 * with the reason in err. */
int vt_proc_table_open(struct vt_proc_table *t, struct vt_adapter *a, struct bpf_map *procs,
		       struct bpf_map *slots, struct bpf_program *on_exec, struct bpf_program *on_exit,
		       char *err, size_t errlen);
/* The same for a skeleton whose object includes procs.bpf.h: before its
 * load, targ_all set and its --all programs loaded only with all; after,
 * the table. */
#define VT_PROCS_AUTOLOAD(skel, all)                                       \
	((skel)->rodata->targ_all = (all),                                 \
	 bpf_program__set_autoload((skel)->progs.vt_proc_exec, (all)),     \
	 bpf_program__set_autoload((skel)->progs.vt_proc_exit, (all)))
#define VT_PROCS_OPEN(t, a, skel, err, errlen)                              \
	vt_proc_table_open((t), (a), (skel)->maps.procs, (skel)->maps.proc_slots, \
			   (skel)->progs.vt_proc_exec, (skel)->progs.vt_proc_exit, (err), (errlen))
void vt_proc_table_free(struct vt_proc_table *t); /* accepts a zeroed struct */
/* Learn the slots handed out since the last call. 0 or -errno. */
int vt_proc_table_refresh(struct vt_proc_table *t);
/* The process of slot, learning it first if need be; NULL when unknown. */
const struct vt_proc_info *vt_proc_table_get(struct vt_proc_table *t, uint32_t slot);
/* Is slot's process still the one running under its pid (it has neither
 * exited nor exec'd)? */
bool vt_proc_table_current(struct vt_proc_table *t, uint32_t slot);
/* The BPF side's entry of slot now (its batch counts). 0 or -errno. */
int vt_proc_table_entry(const struct vt_proc_table *t, uint32_t slot, struct vt_proc *out);
/* The number in p of slot's process (vt_profile_add_process); 0 when the
 * slot names none. 0 or -errno. */
int vt_proc_table_proc(struct vt_proc_table *t, uint32_t slot, struct vt_profile *p,
		       uint32_t *proc);

#endif /* VMTRACE_PROC_TABLE_H */
