/*
 * follow_env.h: the environment of a command vmtrace follows to the
 * runtime it starts (follow.h): what it gets for the runtimes it may start,
 * and, once a process is taken at its exec, what is taken back from it.
 */
#ifndef VMTRACE_FOLLOW_ENV_H
#define VMTRACE_FOLLOW_ENV_H

#include <stddef.h>
#include <sys/types.h>

#include "process/usdt_notes.h"

/* What the command's environment gets (at most max entries, then NULL):
 * set before its first exec, as no adapter is open yet to say it. */
void vt_follow_env(const char **env, size_t max, const char *runtime);

/* The process pid, taken at its exec for the runtime named runtime (its
 * probes those), keeps what that runtime uses of vt_follow_env's entries
 * and can reach below its root; the rest is put back as the command had it
 * (exec_env.h). A Ruby below a root that holds vmtrace's gem for it, but
 * not vmtrace's own extension, loads the gem's instead: probes then holds
 * that extension's probes in place of the other's. */
void vt_give_back_env(pid_t pid, const char *runtime, struct vt_usdt_list *probes);

#endif /* VMTRACE_FOLLOW_ENV_H */
