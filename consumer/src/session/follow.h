/*
 * follow.h: a spawned command that is not itself a runtime (a pyenv or
 * rbenv shim, `bundle exec`, `env`, a wrapper script, make) followed
 * through its execs and its children until one of them runs a program
 * with probes; that process becomes the target.
 *
 * How: the command, still held back (target.h), is traced with ptrace
 * (PTRACE_SEIZE, which stops nothing by itself) for its exec, fork and
 * vfork events, then released. Each exec stops the process that made it
 * before its new program runs a single instruction; the caller looks at
 * the program and either takes it (the process stays stopped there, for
 * the probes to be attached, as a command held before exec) or lets it
 * run on. Once one is taken, every other process of the tree is let go
 * (interrupted where running, then detached), so from there on nothing is
 * traced but by the probes. If vmtrace dies meanwhile the tree dies with
 * it (PTRACE_O_EXITKILL): nothing runs half traced.
 */
#ifndef VMTRACE_FOLLOW_H
#define VMTRACE_FOLLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "session/target.h"

/* Whether the process pid, stopped at its exec of exe, is the one. */
typedef bool (*vt_follow_fn)(pid_t pid, const char *exe, void *ctx);

/* Release the held-back command t with env (as vt_target_release) and
 * follow it. 0 with t->pid the process taken, stopped at its exec
 * (t->cmd_pid stays the command's, whose exit ends the recording); then
 * vt_follow_release lets it run. -ENOENT when every process of the tree
 * exited with none taken (err names the programs it ran), -EINTR when
 * interrupted by a signal, or -errno. */
int vt_follow(struct vt_target *t, const char *const *env, vt_follow_fn take, void *ctx,
	      char *err, size_t errlen);

/* Let the process taken run (after its probes are attached). */
void vt_follow_release(struct vt_target *t);

#endif /* VMTRACE_FOLLOW_H */
