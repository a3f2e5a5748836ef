/*
 * layout.h: the facts about Ruby's private structures the hooks read, for
 * which Ruby has no allocation-free public call, one row per Ruby API
 * version:
 *   - a method entry's owner, to name a frame "Owner#method";
 *   - what tells two classes at one address apart (3.1: a class's serial,
 *     unique to each class ever made; 3.3+: its path), so a cached name is
 *     never reused for another class;
 *   - the bytes an object takes at birth (3.1: a plain object's
 *     instance-variable buffer beside its 40-byte slot; 3.3+: its slot's
 *     size, rb_gc_obj_slot_size);
 *   - the type of the VM's global serials, which the extension reports as
 *     cache resets where libruby exports them (3.1);
 *   - where the running thread's innermost Ruby frame is executing (its
 *     execution context's frames), the key of an allocation's site: one
 *     lookup by that address replaces rb_profile_frames() and a line
 *     search on every object after a site's first; a hook finds the
 *     context in its event's argument, without a TLS lookup.
 *   - (3.1) the collector's own switch between its fast and slow allocation
 *     paths (has_hook), turned on by the sampler near each sampled object
 *     (sampler.c), and what tells that no hook but the sampler's is there
 *     (the ractor's hook list).
 * layout_check.c holds each row against that version's own headers at
 * build time (3.1: the MJIT header of ruby3.1-dev; 3.3, 3.4: the VM's
 * headers in Ruby's source, which scripts/matrix/roots.sh fetches from
 * Debian): a Ruby whose layout differs does not build.
 */
#ifndef VMTRACE_RUBY_LAYOUT_H
#define VMTRACE_RUBY_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include <ruby/version.h>

/* ---- the same in every Ruby the extension builds for ---- */
#define VT_RB_CME_OWNER 32        /* rb_callable_method_entry_t.owner */
#define VT_RB_IMEMO_MENT 6        /* enum imemo_type: a method entry */
#define VT_RB_IMEMO_ISEQ 7        /* ... an instruction sequence */
#define VT_RB_EC_STACK 0          /* rb_execution_context_t.vm_stack */
#define VT_RB_EC_STACK_SIZE 8     /* ... .vm_stack_size, in VALUEs */
#define VT_RB_EC_CFP 16           /* ... .cfp: the innermost frame */
#define VT_RB_CFP_PC 0            /* rb_control_frame_t.pc */
#define VT_RB_CFP_ISEQ 16         /* ... .iseq */
#define VT_RB_CFP_EP 32           /* ... .ep; ep[0] holds the frame's flags */
#define VT_RB_FRAME_CFRAME 0x80   /* VM_FRAME_FLAG_CFRAME: a C function's frame */
#define VT_RB_EP_ME (-2)          /* VM_ENV_DATA_INDEX_ME_CREF: ep[-2], a frame's method entry */
#define VT_RB_TRACEARG_EVENT 0    /* rb_trace_arg_t.event: the event the hook is called for (32 bits) */
#define VT_RB_TRACEARG_EC 8       /* rb_trace_arg_t.ec: the thread's context, at hand in a hook */
#define VT_RB_TRACEARG_DATA 56    /* ... .data: a NEWOBJ or FREEOBJ event's object */

/* ---- one row per Ruby API version: a new version adds its row, and its
 * asserts in layout_check.c ---- */
#if RUBY_API_VERSION_MAJOR == 3 && RUBY_API_VERSION_MINOR == 1
#define VT_RB_LAYOUT "3.1"
#define VT_RB_CFP_SIZE 64         /* sizeof(rb_control_frame_t); callers are at higher addresses */
#define VT_RB_CLASS_EXT 24        /* struct RClass.ptr (rb_classext_t *) */
#define VT_RB_CLASS_SERIAL 32     /* struct RClass.class_serial */
#define VT_RB_EXT_IV_INDEX_TBL 0  /* rb_classext_t.iv_index_tbl (st_table *) */
#define VT_RB_ST_NUM_ENTRIES 16   /* st_table.num_entries */
#define VT_RB_EMBED_LEN_MAX 3     /* ROBJECT_EMBED_LEN_MAX: ivars kept in the slot */
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
#define VT_RB_GLOBAL_SERIALS 1    /* libruby exports ruby_vm_global_constant_state and ruby_vm_class_serial */

#elif RUBY_API_VERSION_MAJOR == 3 && (RUBY_API_VERSION_MINOR == 3 || RUBY_API_VERSION_MINOR == 4)
#define VT_RB_LAYOUT "3.3, 3.4"
#define VT_RB_CFP_SIZE 56         /* sizeof(rb_control_frame_t): jit_return replaced two words */
/* no class serial: a class's path (rb_classext_t.classpath, inside the
 * class's slot after struct RClass) tells two classes at one address
 * apart; anonymous ones are named by their address anyway */
#define VT_RB_CLASS_PATH 152      /* offsetof(struct RClass_and_rb_classext_t, classext.classpath) */
#define VT_RB_SLOT_SIZE_CALL 1    /* objects come in slots of 40-640 bytes: rb_gc_obj_slot_size() */

#else
#error "vmtrace: no layout row for this Ruby's API version (layout.h)"
#endif

/* rb_serial_t, of the VM's global serials (ruby_vm_class_serial,
 * ruby_vm_global_constant_state, which libruby 3.1 exports) */
typedef unsigned long long vt_rb_serial_t;

static inline uintptr_t vt_rb_word(uintptr_t base, size_t off)
{
	return *(const uintptr_t *)(base + off);
}

#endif
