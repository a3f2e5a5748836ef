/*
 * python_load.h: vmtrace's CPython extension loaded into a running CPython
 * that never imported it (runtime.h, load_provider): a pending call,
 * queued from one of its threads stopped for three calls, imports it when
 * the main thread next runs Python code (runtimes/provider_load.h).
 */
#ifndef VMTRACE_PYTHON_LOAD_H
#define VMTRACE_PYTHON_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "process/usdt_notes.h"

int vt_python_load_provider(pid_t pid, const struct vt_usdt_list *probes, bool asked, char *note,
			     size_t len);

/* vmtrace's package pip-installed for the CPython pid runs, below its root
 * (its site directories; no link followed): the module's path as vmtrace
 * and the kernel reach it (/proc/PID/root/...: the file opened, by its
 * inode; vt_tfs_maps_path gives the process's name for it) in module, the
 * module opened read-only in *module_fd (the caller closes it). 0 or
 * -ENOENT. */
int vt_python_installed_in_root(pid_t pid, char *module, size_t len, int *module_fd);

#endif
