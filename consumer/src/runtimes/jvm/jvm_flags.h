/*
 * jvm_flags.h: the -XX flags that switch HotSpot's probes on
 * (DTraceAllocProbes, DTraceMethodProbes, ExtendedDTraceProbes), as a JVM
 * about to start will see them or as a running JVM holds them.
 */
#ifndef VMTRACE_JVM_FLAGS_H
#define VMTRACE_JVM_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* the allocation probe's site in libjvm.so, whose entry the adapter probes */
#define SYM_ALLOC_BASE "_ZN13SharedRuntime24dtrace_object_alloc_baseEP6ThreadP7oopDesci"
/* JDK 18+: the site takes the object's size (size_t), right in the probe */
#define SYM_ALLOC_SIZED "_ZN13SharedRuntime19dtrace_object_allocEP10JavaThreadP7oopDescm"

/* The flags that switch HotSpot's probes on. */
struct jvm_flags {
	bool alloc, methods;
};

/* A command about to start (argv[0] the launcher): its flags from
 * JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS, its options and _JAVA_OPTIONS. */
struct jvm_flags vt_jvm_command_flags(char *const *argv);

/* A running JVM whose libjvm.so is at path: its flags, read from its memory
 * (both on when the library is stripped and cannot tell). 0, or -errno with
 * a message in errbuf. */
int vt_jvm_process_flags(pid_t pid, const char *path, struct jvm_flags *out, char *errbuf,
			 size_t errlen);

#endif /* VMTRACE_JVM_FLAGS_H */
