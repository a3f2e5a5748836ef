/*
 * hooks.h: Ruby's internal events that feed libvmtrace (hooks.c), and which
 * of them the probes' gates want on right now.
 */
#ifndef VMTRACE_RUBY_HOOKS_H
#define VMTRACE_RUBY_HOOKS_H

#include <stdint.h>

enum {
	VT_RB_HOOK_NEWOBJ = 1 << 0,   /* allocations: a tracer or subscriber of them, or their batch */
	VT_RB_HOOK_FREEOBJ = 1 << 1,  /* frees, likewise */
	VT_RB_HOOK_GC = 1 << 2,       /* collections */
	VT_RB_HOOK_SAMPLED = 1 << 3,  /* sampled allocations only: the sampler's hook (sampler.h) */
};

/* Make the tracepoints (disabled) and read the slot size; under the GVL. */
void vt_rb_hooks_init(void);
/* The hooks the gates want now (VT_RB_HOOK_*): any thread, no GVL. */
unsigned vt_rb_hooks_wanted(void);
/* Turn the hooks to match want; under the GVL. VT_RB_HOOK_SAMPLED is the
 * sampler's to turn (sampler.h). */
void vt_rb_hooks_apply(unsigned want);
/* Nonzero when allocations are wanted sampled only: a period in force, no
 * live heap, no subscriber of every allocation. Any thread. */
int vt_rb_sampled_by_count(void);
/* Count a NEWOBJ event's object as sampled at `period` on a clock of
 * objects of `unit` bytes (vmtrace_alloc_sampled_unit); its bytes. GVL. */
struct rb_trace_arg_struct;
uint64_t vt_rb_count_sampled(struct rb_trace_arg_struct *arg, uint64_t period, uint64_t unit);
/* A collector's event (GC_START, GC_ENTER, GC_EXIT) to libvmtrace and the
 * bus. GVL. */
void vt_rb_gc_event(struct rb_trace_arg_struct *arg);
/* The size of an object slot: the sampler's clock unit. */
uint64_t vt_rb_slot_bytes(void);

/* One stop of the world for the collector, for the Ruby bus's :gc. */
struct vt_rb_gc_pause {
	int kind;                     /* VMTRACE_GC_MINOR or _MAJOR */
	uint64_t start_ns, duration_ns; /* CLOCK_MONOTONIC */
	uint64_t heap_bytes;          /* live slots' bytes as it ended */
};
/* Nonzero while the Ruby bus has :gc subscribers: the GC hook stays on and
 * keeps each pause (GVL). */
extern volatile int vt_rb_gc_listened;
/* Take up to max kept pauses, oldest first; *dropped: pauses not kept in
 * all (the ring was full). Under the GVL. */
unsigned vt_rb_gc_take(struct vt_rb_gc_pause *out, unsigned max, uint64_t *dropped);

#endif
