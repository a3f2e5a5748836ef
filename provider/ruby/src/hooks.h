/*
 * hooks.h: Ruby's internal events that feed libvmtrace (hooks.c), and which
 * of them the probes' gates want on right now.
 */
#ifndef VMTRACE_RUBY_HOOKS_H
#define VMTRACE_RUBY_HOOKS_H

enum {
	VT_RB_HOOK_NEWOBJ = 1 << 0,   /* allocations: a tracer or subscriber of them, or their batch */
	VT_RB_HOOK_FREEOBJ = 1 << 1,  /* frees, likewise */
	VT_RB_HOOK_GC = 1 << 2,       /* collections */
};

/* Make the tracepoints (disabled) and read the slot size; under the GVL. */
void vt_rb_hooks_init(void);
/* The hooks the gates want now (VT_RB_HOOK_*): any thread, no GVL. */
unsigned vt_rb_hooks_wanted(void);
/* Turn the hooks to match want; under the GVL. */
void vt_rb_hooks_apply(unsigned want);

#endif
