/*
 * header_types.h: a new object's type read from its header, on a CPython
 * with no reference tracer (3.11, 3.12). The type is set right after the
 * allocator returns, so a block held from its allocation is read at the
 * thread's next allocation or at its free: the words where an object
 * starts (after no pre-header, the collector's, or the collector's and the
 * managed dict's) are taken for an object only when they hold a plausible
 * reference count and a type among those held here, whose pre-header is
 * that offset. A type is read through only
 * once it is known held, so a stale or foreign word is never followed.
 */
#ifndef VMTRACE_PY_HEADER_TYPES_H
#define VMTRACE_PY_HEADER_TYPES_H

#include "frames.h"
#include "primitives.h"

/* The type of the object made in block (size bytes), or NULL when it holds
 * none yet. dying: the block is being freed or moved, so a count of zero
 * is the object's own. likely: a type alive for good (the one last counted
 * at the block's site), taken without a look in the set. A new type
 * object found is held from then on. */
PyTypeObject *header_type(const void *block, size_t size, int dying, const void *likely) VMTRACE_HIDDEN;

/* Armed: every type alive is held (a walk of object's subclasses with
 * type.__subclasses__ itself, with the GIL, before the allocators are
 * wrapped). Disarmed: all let go. */
void header_types_arm(void) VMTRACE_HIDDEN;
void header_types_disarm(void) VMTRACE_HIDDEN;

#endif
