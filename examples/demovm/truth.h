/*
 * truth.h: demovm's own count of what it did, kept beside the probes and
 * independent of them, and the truth file (--truth) written from it.
 *
 * Each worker counts into its own struct truth (no sharing, no atomics);
 * the main thread merges them after the workers are joined. The strings in
 * the file are exactly the strings the probes were given.
 */
#ifndef DEMOVM_TRUTH_H
#define DEMOVM_TRUTH_H

#include <stdint.h>
#include <stdio.h>

#include "classes.h"
#include "constants.h"

#define VM_SIGNAL_MAX 65
#define VM_LIVE_ROWS 512 /* (class, method, site) keys of the live heap; the program has fewer */

struct truth_count {
	uint64_t count, bytes;
};

/* Objects never freed, per (class, method, site): what a live-heap tracer
 * sees at the end of the run. */
struct truth_live_row {
	const char *site;
	unsigned klass, method;
	struct truth_count n;
};

struct truth {
	struct truth_count alloc[VM_CLASS_MAX][VM_METHOD_MAX]; /* [class][running method] */
	struct truth_count frees[VM_CLASS_MAX];
	uint64_t method_resets[VM_METHOD_MAX];  /* caches of one method */
	uint64_t class_resets[VM_CLASS_MAX];    /* every cache of a class */
	uint64_t constant_resets[VM_CONST__COUNT];
	uint64_t serial_incs[VM_REASON__COUNT];
	uint64_t gc_minor, gc_major;
	uint64_t signals[VM_SIGNAL_MAX];        /* delivered by the bus, per signo */
	struct truth_live_row live[VM_LIVE_ROWS]; /* heap_count_live(), at the end */
	unsigned nlive;
	uint64_t live_overflow;                 /* objects past VM_LIVE_ROWS keys (never, as written) */
};

/* What the run was asked to do, echoed at the top of the file. */
struct vm_paths;
struct truth_run {
	uint64_t seed, ops;
	unsigned threads;
	uint64_t global_serial;
	struct vm_paths *const *paths;          /* each thread's, for "stacks"; NULL: none */
};

static inline void truth_alloc(struct truth *t, unsigned klass, unsigned method, uint64_t size)
{
	t->alloc[klass][method].count++;
	t->alloc[klass][method].bytes += size;
}

static inline void truth_free(struct truth *t, unsigned klass, uint64_t size)
{
	t->frees[klass].count++;
	t->frees[klass].bytes += size;
}

/* count one object still alive at the end */
void truth_live(struct truth *t, unsigned klass, unsigned method, const char *site, uint64_t size);

void truth_merge(struct truth *into, const struct truth *from);
uint64_t truth_total_allocs(const struct truth *t, uint64_t *bytes);
uint64_t truth_total_frees(const struct truth *t, uint64_t *bytes);

/* Write the JSON truth file; 0 or -errno. */
int truth_write(const char *path, const struct truth *t, const struct truth_run *run);
/* The same JSON to an open stream. */
void truth_print(FILE *out, const struct truth *t, const struct truth_run *run);

#endif /* DEMOVM_TRUTH_H */
