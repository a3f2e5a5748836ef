/*
 * python_load.h: vmtrace's CPython extension loaded into a running CPython
 * that never imported it (runtime.h, load_provider): a pending call,
 * queued from one of its threads stopped for three calls, imports it when
 * the main thread next runs Python code (runtimes/provider_load.h).
 */
#ifndef VMTRACE_PYTHON_LOAD_H
#define VMTRACE_PYTHON_LOAD_H

#include <stddef.h>
#include <sys/types.h>

int vt_python_load_provider(pid_t pid, char *note, size_t len);

#endif
