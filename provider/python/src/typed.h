/*
 * typed.h: the key of an object's allocation by its type and site.
 */
#ifndef VMTRACE_PY_TYPED_H
#define VMTRACE_PY_TYPED_H

#include "vmtrace/vmtrace.h"
#include "primitives.h"

/* One (site, type): the type's name kept, and the key cache. Made once,
 * never moved or freed. */
struct typed {
	const void *site, *type;
	const char *name;
	struct vmtrace_key_cache cache;
};

/* The entry of (site, type), made at its first call with the type's name
 * (name_of(type), a kept copy); NULL when there is no memory for it. The
 * caller keeps type alive (a reference), so its address names no other. */
struct typed *typed_of(const void *site, const void *type, const char *(*name_of)(const void *type)) VMTRACE_HIDDEN;

#endif
