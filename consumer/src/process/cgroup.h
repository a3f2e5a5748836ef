/*
 * cgroup.h: which cgroup a process is in, the container id its path shows,
 * and the processes of a cgroup (record's --by cgroup and --cgroup).
 */
#ifndef VMTRACE_CGROUP_H
#define VMTRACE_CGROUP_H

#include <stddef.h>
#include <sys/types.h>

/* The cgroup of pid, as /proc/PID/cgroup names it: the unified (v2) path,
 * or on a host whose v2 path is the root, the first v1 path that is not.
 * 0, or -errno (the process is gone). */
int vt_cgroup_of(pid_t pid, char *path, size_t len);
/* The container id a cgroup path shows (docker-ID.scope, /docker/ID,
 * cri-containerd-ID, crio-ID, libpod-ID, or a last part of 32 or more hex
 * digits), or "" when it shows none. */
void vt_container_id(const char *path, char *id, size_t len);
/* The processes of the cgroup at path (relative to a cgroup mount, "/a/b",
 * or a directory under /sys/fs/cgroup): *pids malloc'ed, *n of them.
 * 0, or -errno (-ENOENT: no such cgroup). */
int vt_cgroup_procs(const char *path, pid_t **pids, size_t *n);

#endif /* VMTRACE_CGROUP_H */
