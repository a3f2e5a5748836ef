/*
 * map_sizes.h: the default sizes of the counting maps, one place for the
 * BPF programs and their adapters. A map's size in a BPF program is a
 * placeholder: each adapter sizes it before load (--map-entries, else
 * these; adapter.h, vt_adapter_size_map).
 */
#ifndef VMTRACE_MAP_SIZES_H
#define VMTRACE_MAP_SIZES_H

/* A map keyed by allocation site (class, method, site): a real program has
 * tens of thousands of sites. It is a ceiling, not an allocation: such maps
 * are never preallocated, so they hold what the program has, plus 16 bytes
 * of hash bucket a slot. */
#define VT_ALLOC_MAP_CEILING (1u << 18)
/* ... and the other counting maps (functions, methods, names, resets) */
#define VT_COUNT_MAP_DEFAULT 16384

#endif
