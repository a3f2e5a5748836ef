/*
 * sampling.h: the allocation sampling period of a running process that links
 * libvmtrace (docs/sampling.md). The consumer writes the provider's exported
 * variable vmtrace_sample_period through /proc/PID/mem; the provider uses it
 * only while some consumer holds the sample__armed probe's semaphore, so the
 * process falls back to exact tracing on its own when that consumer detaches
 * or dies. Needs the right to ptrace pid (root, or the same user).
 */
#ifndef VMTRACE_SAMPLING_H
#define VMTRACE_SAMPLING_H

#include <stdint.h>
#include <sys/types.h>

#include "process/usdt_notes.h"

/* Write `period` (mean bytes between samples, 0 = exact) into the libvmtrace
 * of pid that holds the vmtrace probes in `probes` (from vt_usdt_read_pid).
 * 0, -ENOENT (no vmtrace module, or its symbol table lacks the variable),
 * -ESRCH, -EPERM/-EACCES, -EIO. */
int vt_sample_set_period(pid_t pid, const struct vt_usdt_list *probes, uint64_t period);

/* Read back what vt_sample_set_period wrote. Same errors. */
int vt_sample_get_period(pid_t pid, const struct vt_usdt_list *probes, uint64_t *period);

/* The sample__armed semaphore of pid: how many uprobes consumers hold on it
 * now (0 = the provider ignores the period). Same errors. */
int vt_sample_armed_count(pid_t pid, const struct vt_usdt_list *probes, uint16_t *count);

/* Write the 64-bit variable `symbol` of the libvmtrace of pid (as
 * vt_sample_set_period does its period). Same errors. */
int vt_provider_write_u64(pid_t pid, const struct vt_usdt_list *probes, const char *symbol,
			  uint64_t value);

/* The same, at offset bytes into the variable (a field of a struct). */
int vt_provider_write_u64_at(pid_t pid, const struct vt_usdt_list *probes, const char *symbol,
			     uint64_t offset, uint64_t value);

/* Read len bytes of the variable `symbol` of the libvmtrace of pid. Same
 * errors. */
int vt_provider_read(pid_t pid, const struct vt_usdt_list *probes, const char *symbol, void *buf,
		     size_t len);

/* The same in two steps, for a variable read again and again: its address
 * in pid (the module's maps and symbols read once), then each read. */
int vt_provider_locate(pid_t pid, const struct vt_usdt_list *probes, const char *symbol, uint64_t *addr);
int vt_provider_read_at(pid_t pid, uint64_t addr, void *buf, size_t len);

#endif /* VMTRACE_SAMPLING_H */
