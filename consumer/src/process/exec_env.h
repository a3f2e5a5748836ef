/*
 * exec_env.h: the environment of a process stopped by ptrace at its exec,
 * before its new program runs an instruction: what vmtrace put there for
 * a runtime the program turned out not to need is taken back, so the
 * program sees the environment it would have had without vmtrace.
 *
 * The environment is the envp array on the new stack (after argc and
 * argv, before the auxiliary vector) and the strings it points at. An
 * entry is removed by closing the array over it and moving the auxiliary
 * vector behind it down as well (the C library finds that vector just past
 * envp's NULL); a value is put back in place, over the longer one vmtrace
 * set. Every read of the tracee is bounded.
 */
#ifndef VMTRACE_EXEC_ENV_H
#define VMTRACE_EXEC_ENV_H

#include <sys/types.h>

/* In pid (stopped at its exec, traced by us), set name to value, or remove
 * it when value is NULL. value must be no longer than the value it has.
 * 0 (also when name is not there), -ENOSPC (value longer), -E2BIG (a stack
 * larger than this reads), or -errno. */
int vt_exec_env_put(pid_t pid, const char *name, const char *value);

/* In pid (stopped at its exec, traced by us), arg inserted as argv[at]
 * (1 <= at <= argc), for the new program to find among its arguments: the
 * string and a table one entry longer are written below the stack the
 * kernel made, and the stack pointer moved to it (the old table and
 * strings stay, so /proc/PID/cmdline still reads as exec'd). 0, -EINVAL
 * (at out of range), -E2BIG, or -errno. */
int vt_exec_arg_insert(pid_t pid, size_t at, const char *arg);

#endif /* VMTRACE_EXEC_ENV_H */
