/* SPDX-License-Identifier: GPL-2.0 */
/*
 * procs.bpf.h: the process slots of `record --all` (procs_maps.h). Include
 * after common.bpf.h. With targ_all false (one process) vt_proc_slot() is 0
 * and the verifier drops the rest: the single-process path is unchanged.
 */
#ifndef VMTRACE_PROCS_BPF_H
#define VMTRACE_PROCS_BPF_H

#include "runtimes/procs_maps.h"

const volatile bool targ_all = false;   /* attached for every process: slots in the keys */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, VT_PROCS_MAX);
	__type(key, __u32);              /* tgid */
	__type(value, __u32);            /* its slot */
} proc_slots SEC(".maps");

VT_MAP(procs, BPF_MAP_TYPE_ARRAY, __u32, struct vt_proc, VT_PROCS_MAX);

/* A slot for the calling process, seen for the first time. */
static __noinline __u64 vt_proc_new_slot(__u32 tgid)
{
	__u32 zero = 0, slot, *had;
	struct vt_proc *head = bpf_map_lookup_elem(&procs, &zero), *p;
	long err;

	if (!head)
		return VT_PROC_NONE;
	slot = (__u32)__sync_fetch_and_add(&head->handed, 1) + 1;
	p = bpf_map_lookup_elem(&procs, &slot);
	if (!p)
		return VT_PROC_NONE; /* past VT_PROCS_MAX */
	bpf_get_current_comm(p->comm, sizeof(p->comm));
	p->tgid = tgid;
	err = bpf_map_update_elem(&proc_slots, &tgid, &slot, BPF_NOEXIST);
	if (!err)
		return slot;
	p->tgid = 0; /* another CPU gave it one first, or the map is full */
	had = bpf_map_lookup_elem(&proc_slots, &tgid);
	return had ? *had : VT_PROC_NONE;
}

/* The slot of the calling process: 0 for one process, VT_PROC_NONE when
 * the table is full (the caller counts the event lost). */
static __always_inline __u64 vt_proc_slot(void)
{
	__u32 tgid, *slot;

	if (!targ_all)
		return 0;
	tgid = bpf_get_current_pid_tgid() >> 32;
	slot = bpf_map_lookup_elem(&proc_slots, &tgid);
	return slot ? *slot : vt_proc_new_slot(tgid);
}

/* ptr, qualified by the process's slot. */
static __always_inline __u64 vt_proc_qual(__u64 ptr, __u64 slot)
{
	return ptr | slot << VT_PROC_SHIFT;
}

/* The pointer of a qualified one, to read the process's memory at. */
static __always_inline __u64 vt_proc_raw(__u64 q)
{
	return targ_all ? vt_proc_ptr_of(q) : q;
}

/* A pointer of the process that does not fit under the slot bits. */
static __always_inline bool vt_proc_too_high(__u64 ptr)
{
	return targ_all && ptr > VT_PROC_PTR_MASK;
}

/* An exec'd or exited process gives up its slot: its pid may come back as
 * another program, whose pointers mean other strings. The slot's entry in
 * procs stays, so its rows keep their name. Attached only with targ_all. */
static __always_inline int vt_proc_forget(void)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;

	if ((__u32)id == tgid)
		bpf_map_delete_elem(&proc_slots, &tgid);
	return 0;
}

SEC("tracepoint/sched/sched_process_exec")
int vt_proc_exec(void *ctx)
{
	return vt_proc_forget();
}

SEC("tracepoint/sched/sched_process_exit")
int vt_proc_exit(void *ctx)
{
	return vt_proc_forget();
}

#endif /* VMTRACE_PROCS_BPF_H */
