/*
 * intern.h: one kept copy of each text, for the providers that live inside
 * a runtime (provider/ruby, provider/python, provider/jvm). libvmtrace's
 * keys are the addresses of the names an event carries, so a name is made
 * once and never moves or goes away.
 *
 * Not thread-safe: the caller serialises (Ruby's GVL, CPython's GIL, the
 * JVM agent's lock). The strings are never freed.
 */
#ifndef VMTRACE_INTERN_H
#define VMTRACE_INTERN_H

#include <stddef.h>
#include <stdint.h>

#include "primitives.h"

/* Zero-initialise one; it grows as texts come. */
struct vt_interned {
	const char **slot;      /* open addressing by the text's hash, at most half full */
	size_t cap, n;
};

/* The kept copy of the len bytes at s (need not be NUL-terminated), made
 * at its first call; NULL when there is no memory for it. */
const char *vt_intern(struct vt_interned *t, const char *s, size_t len) VMTRACE_HIDDEN;

/* The same for a NUL-terminated text. */
const char *vt_intern_str(struct vt_interned *t, const char *s) VMTRACE_HIDDEN;

/* A 64-bit finaliser (MurmurHash3's), for the providers' tables keyed by
 * pointers: their low bits alone place entries badly. */
static inline uint64_t vt_mix64(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

/* A frame's hash for vmtrace_frames_hashed(), from its caller's
 * (VT_FRAME_HASH_ROOT for the outermost), its interned name and file (by
 * pointer), its line and its depth from the outermost: a provider's
 * kept chains carry it, so libvmtrace names a stack with no walk. */
#define VT_FRAME_HASH_ROOT 0x9E3779B97F4A7C15ull
static inline uint64_t vt_frame_hash(uint64_t caller, const char *name, const char *file, int32_t line,
				     uint64_t depth)
{
	uint64_t h = (caller ^ (uint64_t)(uintptr_t)name) * 0xC2B2AE3D27D4EB4Full;

	h = (h ^ (uint64_t)(uintptr_t)file) * 0x165667B19E3779F9ull;
	return vt_mix64(h ^ ((uint64_t)(uint32_t)line << 32) ^ depth);
}

#endif
