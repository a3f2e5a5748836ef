/*
 * jvm_agent.h: vmtrace's JVMTI agent (provider/jvm) as the consumer sees
 * it: libvmtrace inside a HotSpot JVM, loaded into a java vmtrace starts
 * (-agentpath, through JAVA_TOOL_OPTIONS) or into a running one through
 * the attach mechanism (runtimes/jvm/jvm_attach.h).
 */
#ifndef VT_JVM_AGENT_H
#define VT_JVM_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "process/usdt_notes.h"
#include "runtimes/runtime.h"

#define VT_JVM_AGENT_FILE "libvmtrace_jvm.so"
/* a copy placed in a container's /tmp: libvmtrace_jvm-PID-N.so */
#define VT_JVM_AGENT_PLACED "libvmtrace_jvm-"
#define VT_JVM_AGENT_MAX_BYTES (64 << 20)
/* the option that tells the agent to remove its placed copy as the JVM ends */
#define VT_JVM_AGENT_REMOVE "remove-at-exit"
/* what a running JVM is sampled at when --sample does not say (bytes) */
#define VT_JVM_AGENT_ATTACH_PERIOD (512u * 1024)

/* The agent's path: $VMTRACE_JVM_AGENT_DIR, the build tree beside this
 * vmtrace, or where `cmake --install` put it. 0, or -ENOENT. */
int vt_jvm_agent_find(char *path, size_t len);

/* True when path is the agent (or a copy of it placed for a JVM). */
bool vt_jvm_agent_is(const char *path);

/* Load the agent at path into the running JVM pid through its attach
 * mechanism. A JVM below another root (a container's) cannot open path: a
 * copy is made in its /tmp, as its user, mode 0500, under a name nothing
 * held yet, and the agent removes it as the JVM ends (removed at once when
 * the JVM refuses it). 0, or -errno with the reason in err. */
int vt_jvm_agent_load(pid_t pid, const char *path, char *err, size_t errlen);

/* A JDK launcher (exe) stopped at its exec, traced (follow.h), given the
 * agent at path at its start, counting every allocation or sampled at
 * sample_period bytes: -agentpath (or -J-agentpath) inserted as its first
 * argument, the agent placed in its /tmp as for vt_jvm_agent_load
 * when its root is another, and the agent's probes added to probes. 0;
 * -ENOENT for a program that is no JDK launcher; or -errno (nothing
 * changed in the process, the placed copy removed). */
int vt_jvm_agent_at_exec(pid_t pid, const char *exe, const char *path, bool no_methods,
			 uint64_t sample_period, struct vt_usdt_list *probes);

/* "JAVA_TOOL_OPTIONS=-agentpath:PATH[ old]" that loads the agent at path
 * into a JVM about to start, in buf. 0, or -EINVAL (a path with white
 * space), -ENAMETOOLONG. */
int vt_jvm_agent_tool_options(const char *path, char *buf, size_t len);

/* The argument (VT_SPAWN_ARG, runtime.h) that loads the agent at path,
 * with options ("" or "no-methods"), into the JVM a JDK launcher starts:
 * "-agentpath:PATH[=OPTIONS]" for `java`, "-J-agentpath:..." for the
 * JDK's other tools (javac, jar, jshell, ...), which hand -J options to
 * their JVM. Unlike JAVA_TOOL_OPTIONS, which the JVM announces on stderr
 * ("Picked up ..."), it leaves the program's output and environment as
 * they are. 0; -ENOENT for a program that is no JDK launcher; -EINVAL,
 * -ENAMETOOLONG. */
int vt_jvm_agent_argument(const char *path, const char *launcher, const char *options, char *buf,
			  size_t len);

/* The agent as the session and the vmtrace adapter see it (jvm_inside.c) */
extern const struct vt_inside vt_jvm_inside;
/* runtime.h's load_provider: the attach mechanism of a running JVM */
int vt_jvm_load_provider(pid_t pid, const struct vt_usdt_list *probes, bool asked, char *note, size_t len);
/* runtime.h's list_line for HotSpot's probes */
int vt_jvm_list_line(char *line, size_t len);

#endif
