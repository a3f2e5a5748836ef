/*
 * names.h: what the agent calls a JVM's classes, methods and allocation
 * sites, made once per id and kept for the life of the process (libvmtrace's
 * keys are the addresses of these names).
 *
 * Lookups never lock: a name is published whole before its id is, so any
 * thread can read the tables while another thread adds to them (under one
 * mutex, with the JVMTI calls that make the names). Nothing here is freed.
 * A name that cannot be made (out of memory, a full table) is NULL, and the
 * agent counts its allocation under a row that says so.
 */
#ifndef VMTRACE_JVM_NAMES_H
#define VMTRACE_JVM_NAMES_H

#include <jvmti.h>
#include <stdint.h>

#include "vmtrace/vmtrace.h"

/* One frame's names: the method ("pkg.Outer$Inner.name"), its source file
 * ("Inner.java") and the line the frame is at (0: none, a native method). */
struct jvm_frame_names {
	const char *method, *file;
	int32_t line;
};

/* An allocation site: a class allocated at (method, bytecode index). */
struct jvm_site {
	const char *klass, *method, *file_line;
	struct vmtrace_key_cache cache;
};

/* The agent's JVMTI environment, before any lookup; 0, or -1 (out of memory). */
int jvm_names_init(jvmtiEnv *jvmti);

/* The name of class k ("java.lang.String", "int[]"), found by the tag the
 * agent gives each class it has named; NULL when it could not be made. */
const char *jvm_class_name(jclass k);

/* The names of a frame at (m, at); 0, or -1 (out of memory, a method the
 * JVM no longer knows). */
int jvm_frame_names(jmethodID m, jlocation at, struct jvm_frame_names *out);

/* The site of an allocation of class klass (from jvm_class_name) in the
 * frame at (m, at); m NULL: no Java frame, and with at < 0 no frame asked
 * for (the site names no method). NULL when it could not be made. */
struct jvm_site *jvm_site_of(const char *klass, jmethodID m, jlocation at);

#endif
