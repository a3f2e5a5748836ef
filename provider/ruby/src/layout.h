/*
 * layout.h: the facts about Ruby 3.1's private structures the hooks
 * read, for which Ruby has no allocation-free public call:
 *   - a method entry's owner, to name a frame "Owner#method";
 *   - a class's serial, unique to each class ever made, so a cached name
 *     is never reused for another class at the same address;
 *   - how many instance variables a class's objects get a buffer for at
 *     birth (the bytes of a plain object outside its slot).
 *   - the type of the VM's global serials, which the extension reports as
 *     cache resets;
 *   - where the running thread's innermost Ruby frame is executing (its
 *     execution context's frames), the key of an allocation's site: one
 *     lookup by that address replaces rb_profile_frames() and a line
 *     search on every object after a site's first; a hook finds the
 *     context in its event's argument, without a TLS lookup.
 *   - the collector's own switch between its fast and slow allocation
 *     paths (has_hook), turned on by the sampler's thread near each
 *     sampled object (sampler.c), and what tells that no hook but the
 *     sampler's is there (the ractor's hook list).
 * layout_check.c holds each against Ruby's own headers at build time (the
 * MJIT header of the ruby3.1-dev package): a Ruby whose layout differs does
 * not build.
 */
#ifndef VMTRACE_RUBY_LAYOUT_H
#define VMTRACE_RUBY_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#define VT_RB_CME_OWNER 32        /* rb_callable_method_entry_t.owner */
#define VT_RB_CLASS_EXT 24        /* struct RClass.ptr (rb_classext_t *) */
#define VT_RB_CLASS_SERIAL 32     /* struct RClass.class_serial */
#define VT_RB_EXT_IV_INDEX_TBL 0  /* rb_classext_t.iv_index_tbl (st_table *) */
#define VT_RB_ST_NUM_ENTRIES 16   /* st_table.num_entries */
#define VT_RB_IMEMO_MENT 6        /* enum imemo_type: a method entry */
#define VT_RB_IMEMO_ISEQ 7        /* ... an instruction sequence */
#define VT_RB_EMBED_LEN_MAX 3     /* ROBJECT_EMBED_LEN_MAX: ivars kept in the slot */
#define VT_RB_EC_STACK 0          /* rb_execution_context_t.vm_stack */
#define VT_RB_EC_STACK_SIZE 8     /* ... .vm_stack_size, in VALUEs */
#define VT_RB_EC_CFP 16           /* ... .cfp: the innermost frame */
#define VT_RB_CFP_SIZE 64         /* sizeof(rb_control_frame_t); callers are at higher addresses */
#define VT_RB_CFP_PC 0            /* rb_control_frame_t.pc */
#define VT_RB_CFP_ISEQ 16         /* ... .iseq */
#define VT_RB_CFP_EP 32           /* ... .ep; ep[0] holds the frame's flags */
#define VT_RB_FRAME_CFRAME 0x80   /* VM_FRAME_FLAG_CFRAME: a C function's frame */
#define VT_RB_EP_ME (-2)          /* VM_ENV_DATA_INDEX_ME_CREF: ep[-2], a frame's method entry */
#define VT_RB_TRACEARG_EVENT 0    /* rb_trace_arg_t.event: the event the hook is called for (32 bits) */
#define VT_RB_TRACEARG_EC 8       /* rb_trace_arg_t.ec: the thread's context, at hand in a hook */
#define VT_RB_TRACEARG_DATA 56    /* ... .data: a NEWOBJ or FREEOBJ event's object */
#define VT_RB_VM_MAIN_RACTOR 32   /* rb_vm_t.ractor.main_ractor */

#define VT_RB_VM_OBJSPACE 1104    /* rb_vm_t.objspace */
#define VT_RB_RACTOR_HOOKS 16     /* rb_ractor_t.pub.hooks: the global hooks (rb_hook_list_t) */
#define VT_RB_HOOKS_HEAD 0        /* rb_hook_list_t.hooks: the newest hook first */
#define VT_RB_HOOKS_EVENTS 8      /* ... .events: all of its hooks' */
/* gc.c's rb_objspace_t is in none of Ruby's headers: where its flags and
 * the internal events hooked are, in 3.1 (malloc_params of two words, then
 * the bitfield flags, then hook_events). The sampler holds them against
 * what rb_add_event_hook2 and rb_remove_event_hook do there before it
 * writes the bit (sampler.c), and keeps away when they do otherwise. */
#define VT_RB_OBJSPACE_FLAGS 16   /* the flags bitfield, a 32-bit word */
#define VT_RB_HAS_HOOK (1u << 8)  /* flags.has_hook: allocations take the slow path, which calls the hooks */
#define VT_RB_OBJSPACE_HOOK_EVENTS 20 /* rb_event_flag_t hook_events: the internal events hooked */
#define VT_RB_OBJSPACE_MADE 24    /* size_t total_allocated_objects */

/* rb_serial_t, of the VM's global serials (ruby_vm_class_serial,
 * ruby_vm_global_constant_state, which libruby exports) */
typedef unsigned long long vt_rb_serial_t;

static inline uintptr_t vt_rb_word(uintptr_t base, size_t off)
{
	return *(const uintptr_t *)(base + off);
}

#endif
