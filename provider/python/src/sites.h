/*
 * sites.h: a Python allocation's site, (code, instruction), with its names
 * and key caches (module.c).
 */
#ifndef VMTRACE_PY_SITES_H
#define VMTRACE_PY_SITES_H

#include <stdint.h>

#include "frames.h"
#include "primitives.h"
#include "vmtrace/vmtrace.h"

struct typed;

/* A site's names and key caches: made once, never moved or freed, so a
 * thread's kept frames (frame_chain.h) may point at it. */
struct site {
	const char *method, *file_line, *file;
	int32_t line;
	struct vmtrace_key_cache obj_cache, mem_cache;
	struct typed *last_typed;     /* the type last counted here: most sites make one */
};

/* The site f is at (NULL: none, the interpreter's own code), made at its
 * first call; NULL when there is no memory for its names. */
struct site *site_of(_PyInterpreterFrame *f) VMTRACE_HIDDEN;

/* an interned copy, never freed: libvmtrace's keys are these addresses */
const char *keep(const char *s) VMTRACE_HIDDEN;

#endif
