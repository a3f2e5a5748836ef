/*
 * jvm_attach.h: loading a JVMTI agent into a running HotSpot JVM through its
 * attach mechanism, the one `jcmd PID JVMTI.agent_load` uses: a trigger file
 * and SIGQUIT make the JVM open a Unix socket in its /tmp, on which one
 * "load" request names the agent. No restart and no flags.
 */
#ifndef VMTRACE_JVM_ATTACH_H
#define VMTRACE_JVM_ATTACH_H

#include <stddef.h>
#include <sys/types.h>

/* Load the agent library at path (absolute, visible to the JVM) into the
 * JVM pid, with options (may be NULL). 0, or -errno with a one-line reason
 * in err: attach disabled (-XX:+DisableAttachMechanism), no SIGQUIT
 * handler (-Xrs, a JVM still starting), no answer, the agent refused. */
int vt_jvm_attach_load(pid_t pid, const char *path, const char *options, char *err, size_t errlen);

#endif
