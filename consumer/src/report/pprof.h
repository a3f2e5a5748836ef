/*
 * pprof.h: a profile as pprof's profile.proto, gzipped, the form `go tool
 * pprof`, Pyroscope and Parca read (docs/exports.md).
 */
#ifndef VMTRACE_PPROF_H
#define VMTRACE_PPROF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"

/* Encodes p (every allocation row, whatever --by and --top say: pprof
 * groups by itself) into a malloc'd gzip buffer the caller frees.
 * 0 or -ENOMEM / -EIO (zlib). */
int vt_pprof_encode(const struct vt_profile *p, uint8_t **buf, size_t *len);

#endif /* VMTRACE_PPROF_H */
