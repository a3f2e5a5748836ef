/*
 * proc_tree.h: the processes below others, read from /proc, for -p PID
 * --children: from the roots down by each thread's children
 * (/proc/PID/task/TID/children), or where the kernel has no such file by
 * every process's parent (/proc/PID/stat).
 */
#ifndef VMTRACE_PROC_TREE_H
#define VMTRACE_PROC_TREE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Every live descendant of the n processes roots (the roots not among
 * them), in *out (malloc'ed, the caller frees), their number in *nout.
 * 0 or -errno. */
int vt_proc_descendants(const pid_t *roots, size_t n, pid_t **out, size_t *nout);

/* Milliseconds since process pid started, or -1 when it cannot be read. */
int64_t vt_proc_age_ms(pid_t pid);

#endif /* VMTRACE_PROC_TREE_H */
