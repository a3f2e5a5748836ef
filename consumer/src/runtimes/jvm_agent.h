/*
 * jvm_agent.h: vmtrace's JVMTI agent (provider/jvm) as the consumer sees
 * it: libvmtrace inside a HotSpot JVM, loaded into a java vmtrace starts
 * (-agentpath, through JAVA_TOOL_OPTIONS) or into a running one through
 * the attach mechanism (runtimes/hotspot/jvm_attach.h).
 */
#ifndef VT_JVM_AGENT_H
#define VT_JVM_AGENT_H

#include <stdbool.h>
#include <stddef.h>

#define VT_JVM_AGENT_FILE "libvmtrace_jvm.so"
/* what a running JVM is sampled at when --sample does not say (bytes) */
#define VT_JVM_AGENT_ATTACH_PERIOD (512u * 1024)

/* The agent's path: $VMTRACE_JVM_AGENT_DIR, the build tree beside this
 * vmtrace, or where `cmake --install` put it. 0, or -ENOENT. */
int vt_jvm_agent_find(char *path, size_t len);

/* True when path is the agent. */
bool vt_jvm_agent_is(const char *path);

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

#endif
