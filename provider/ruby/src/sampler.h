/*
 * sampler.h: sampled allocations with Ruby's allocations on their fast path
 * between samples (sampler.c).
 */
#ifndef VMTRACE_RUBY_SAMPLER_H
#define VMTRACE_RUBY_SAMPLER_H

#include <stdint.h>

/* Under the GVL. Init at load; start: sample at the period in force; stop:
 * the sampler's hook removed. */
void vt_rb_sampler_init(void);
void vt_rb_sampler_start(void);
void vt_rb_sampler_stop(void);

/* Ruby's count of the objects it made (GC.stat(:total_allocated_objects));
 * in a NEWOBJ hook, counting the object the hook is called for. GVL;
 * after vt_rb_sampler_init. */
uint64_t vt_rb_objects_made(void);

struct vt_rb_sampler_stats {
	uint64_t samples;              /* objects counted */
	uint64_t late;                 /* sampling points found passed: not counted */
	uint64_t hooked;               /* objects the hook saw */
	uint64_t ticks;                /* of those, met while allocations took the fast path */
	int gate;                      /* the last start kept allocations on the fast path (has_hook) */
};
void vt_rb_sampler_stats(struct vt_rb_sampler_stats *out);

#endif
