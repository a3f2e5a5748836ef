/*
 * batch_keys.h: the keys hosts cache at their allocation sites
 * (vmtrace_alloc_cached, <vmtrace/vmtrace.h>), and each thread's counts by
 * key id (batch_keys.c), delivered with the thread's tables (batch.c).
 *
 * Who touches what. A key is interned once and never changes. A thread's
 * counts are added to by that thread alone (the host's inline path, one
 * instruction an add, so its signal handlers cannot split one); a flush,
 * under the thread's lock, reads them and delivers what each key gained
 * since its last delivery (`sent`), like a table's.
 */
#ifndef VMTRACE_BATCH_KEYS_H
#define VMTRACE_BATCH_KEYS_H

#include <stdint.h>

#include "vmtrace/vmtrace.h"
#include "batch_table.h"

/* One thread's counts (mmap'ed, never freed; kept with its record). */
struct vt_keyed {
	uint64_t counts[VMTRACE__KEYS_MAX][2]; /* count, bytes: the owner's adds */
	uint64_t sent[VMTRACE__KEYS_MAX][2];   /* what flushes delivered; under the lock */
};

/* The id of (klass, method, site), interned (a free's site is
 * VMTRACE__FREE_SITE); 0 when every id is taken, or when a signal handler
 * interrupted an intern on its thread (the caller counts the event the
 * table's way). Async-signal-safe. */
uint32_t vt_key_intern(const char *klass, const char *method, const char *site);

/* Ids below this are interned; entry id of the registry. */
uint32_t vt_key_count(void);
const struct vmtrace__key *vt_key_get(uint32_t id);

/* A thread's empty counts; NULL when out of memory. */
struct vt_keyed *vt_keyed_new(void);
void vt_keyed_free(struct vt_keyed *kd);

/* Deliver what each key of kind (enum vmtrace_batch_kind) gained since its
 * last delivery into f. Under the owner's lock. */
void vt_keyed_flush(struct vt_keyed *kd, int kind, struct vt_flush *f);

#endif /* VMTRACE_BATCH_KEYS_H */
