/*
 * procs_maps.h: what procs.bpf.h and proc_table.c share for `record --all`
 * (every process that maps a traced library; docs/architecture.md).
 *
 * In that mode the programs are attached to the library file for every
 * process, and each process gets a slot, numbered from 1 in the order its
 * first event came. A key's pointers carry the slot in their top bits
 * (VT_PROC_SHIFT and up: user addresses are below 2^47), so a pointer of one
 * process never names another's string, the keys stay the size they are
 * for one process, and userspace finds each row's process from its key.
 */
#ifndef VMTRACE_PROCS_MAPS_H
#define VMTRACE_PROCS_MAPS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define VT_PROC_SHIFT 47
#define VT_PROC_PTR_MASK ((1ull << VT_PROC_SHIFT) - 1)
#define VT_PROCS_MAX 32768           /* slots of one recording (below 2^17) */
#define VT_PROC_NONE (~0ull)         /* no slot: the table is full */
#define VT_PROC_COMM 16              /* TASK_COMM_LEN */

/* The slot of a qualified pointer, and the pointer itself. */
#define vt_proc_slot_of(q) ((__u32)((q) >> VT_PROC_SHIFT))
#define vt_proc_ptr_of(q) ((q) & VT_PROC_PTR_MASK)

/* procs[slot]; procs[0].handed counts the slots handed out. tgid 0: a slot
 * another CPU claimed for the same process first (unused). */
struct vt_proc {
	__u32 tgid;
	__u32 pad;
	__u64 handed;                /* procs[0] only */
	__u32 batches[2], exits[2];  /* vmtrace: batches of each kind, and EXIT ones, it sent */
	char comm[VT_PROC_COMM];     /* at its first event: names it once /proc is gone */
};

#endif /* VMTRACE_PROCS_MAPS_H */
