/*
 * jvm_names.h: HotSpot's internal class names as Java writes them.
 */
#ifndef VMTRACE_JVM_NAMES_H
#define VMTRACE_JVM_NAMES_H

#include <stddef.h>

/* "java/lang/String" -> "java.lang.String", "[I" -> "int[]",
 * "[[Ljava/lang/Object;" -> "java.lang.Object[][]". A name that is not a
 * well-formed descriptor is copied with its slashes made dots. Always
 * NUL-terminates dst (cut to fit). */
void vt_java_class_name(const char *internal, char *dst, size_t dlen);

#endif /* VMTRACE_JVM_NAMES_H */
