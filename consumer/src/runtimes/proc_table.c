/*
 * proc_table.c: the processes of `record --all` (proc_table.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "runtimes/adapter.h"
#include "process/cgroup.h"
#include "runtimes/proc_table.h"

void vt_proc_table_init(struct vt_proc_table *t, int procs_fd, int slots_fd)
{
	memset(t, 0, sizeof(*t));
	t->procs_fd = procs_fd;
	t->slots_fd = slots_fd;
}

bool vt_proc_table_current(struct vt_proc_table *t, uint32_t slot)
{
	const struct vt_proc_info *pi = vt_proc_table_get(t, slot);
	uint32_t tgid, now;

	if (!pi)
		return false;
	tgid = (uint32_t)pi->pid;
	return bpf_map_lookup_elem(t->slots_fd, &tgid, &now) == 0 && now == slot;
}

int vt_proc_table_open(struct vt_proc_table *t, struct vt_adapter *a, struct bpf_map *procs,
		       struct bpf_map *slots, struct bpf_program *on_exec, struct bpf_program *on_exit,
		       char *err, size_t errlen)
{
	int r;

	vt_proc_table_init(t, bpf_map__fd(procs), bpf_map__fd(slots));
	a->procs = t; /* refreshed and freed by the skeleton (skeleton.h) */
	r = vt_adapter_attach_program(a, on_exec, err, errlen);
	return r ? r : vt_adapter_attach_program(a, on_exit, err, errlen);
}

void vt_proc_table_free(struct vt_proc_table *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i].comm);
		free(t->v[i].cgroup);
	}
	free(t->v);
	memset(t, 0, sizeof(*t));
}

/* Slot s as the BPF side has it: pid and comm, and the cgroup from /proc. */
static int learn(struct vt_proc_table *t, uint32_t s)
{
	struct vt_proc_info *pi = &t->v[s];
	struct vt_proc bp;
	char cg[4096], comm[VT_PROC_COMM + 1];

	if (pi->pid)
		return 0;
	if (bpf_map_lookup_elem(t->procs_fd, &s, &bp))
		return -errno;
	if (!bp.tgid)
		return 0;
	pi->pid = (pid_t)bp.tgid;
	vt_key_string(comm, sizeof(comm), bp.comm, sizeof(bp.comm));
	pi->comm = strdup(comm);
	if (!vt_cgroup_of(pi->pid, cg, sizeof(cg)))
		pi->cgroup = strdup(cg);
	return pi->comm ? 0 : -ENOMEM;
}

int vt_proc_table_refresh(struct vt_proc_table *t)
{
	struct vt_proc head;
	uint32_t zero = 0;
	size_t handed;

	if (bpf_map_lookup_elem(t->procs_fd, &zero, &head))
		return -errno;
	handed = head.handed < VT_PROCS_MAX ? (size_t)head.handed + 1 : VT_PROCS_MAX;
	if (handed > t->n) {
		struct vt_proc_info *v = realloc(t->v, handed * sizeof(*v));

		if (!v)
			return -ENOMEM;
		memset(v + t->n, 0, (handed - t->n) * sizeof(*v));
		t->v = v;
		t->n = handed;
	}
	/* a slot whose tgid is still 0 may be one being filled in: look again */
	for (uint32_t s = 1; s < t->n; s++) {
		int err = learn(t, s);

		if (err)
			return err;
	}
	return 0;
}

int vt_proc_table_entry(const struct vt_proc_table *t, uint32_t slot, struct vt_proc *out)
{
	return bpf_map_lookup_elem(t->procs_fd, &slot, out) ? -errno : 0;
}

const struct vt_proc_info *vt_proc_table_get(struct vt_proc_table *t, uint32_t slot)
{
	if ((slot >= t->n || !t->v[slot].pid) && vt_proc_table_refresh(t))
		return NULL;
	return slot < t->n && t->v[slot].pid ? &t->v[slot] : NULL;
}

int vt_proc_table_proc(struct vt_proc_table *t, uint32_t slot, struct vt_profile *p,
		       uint32_t *proc)
{
	const struct vt_proc_info *pi = vt_proc_table_get(t, slot);

	*proc = 0;
	if (!pi)
		return 0;
	return vt_profile_add_process(p, (int32_t)pi->pid, pi->comm, pi->cgroup ? pi->cgroup : "/",
				      proc);
}
