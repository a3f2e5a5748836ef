/*
 * layout_check.c: compiled, never linked, against the VM's own structure
 * definitions of the Ruby it builds for: the build fails when layout.h's
 * row does not describe that Ruby. 3.1 installs them in its MJIT header
 * (RUBY_MJIT_HEADER); later versions install none, and are checked against
 * the headers of their source (RUBY_SOURCE_HEADERS: the source tree, built
 * with -I it and its include/).
 */
#ifdef RUBY_MJIT_HEADER
#include RUBY_MJIT_HEADER
#else
#include "ruby/ruby.h"
#include "vm_core.h"
#include "method.h"
#include "ractor_core.h"
#include "internal/class.h"
#endif
#include "layout.h"

_Static_assert(offsetof(rb_callable_method_entry_t, owner) == VT_RB_CME_OWNER, "cme owner");
_Static_assert(imemo_ment == VT_RB_IMEMO_MENT && imemo_iseq == VT_RB_IMEMO_ISEQ, "imemo types");
_Static_assert(offsetof(rb_execution_context_t, vm_stack) == VT_RB_EC_STACK, "ec stack");
_Static_assert(offsetof(rb_execution_context_t, vm_stack_size) == VT_RB_EC_STACK_SIZE, "ec stack size");
_Static_assert(offsetof(rb_execution_context_t, cfp) == VT_RB_EC_CFP, "ec cfp");
_Static_assert(sizeof(rb_control_frame_t) == VT_RB_CFP_SIZE, "cfp size");
_Static_assert(offsetof(rb_control_frame_t, pc) == VT_RB_CFP_PC, "cfp pc");
_Static_assert(offsetof(rb_control_frame_t, iseq) == VT_RB_CFP_ISEQ, "cfp iseq");
_Static_assert(offsetof(rb_control_frame_t, ep) == VT_RB_CFP_EP, "cfp ep");
_Static_assert(VM_FRAME_FLAG_CFRAME == VT_RB_FRAME_CFRAME && VM_ENV_DATA_INDEX_FLAGS == 0, "frame flags");
_Static_assert(VM_ENV_DATA_INDEX_ME_CREF == VT_RB_EP_ME, "method entry of a frame");
_Static_assert(offsetof(struct rb_trace_arg_struct, event) == VT_RB_TRACEARG_EVENT &&
	       sizeof(rb_event_flag_t) == 4, "trace arg event");
_Static_assert(offsetof(struct rb_trace_arg_struct, ec) == VT_RB_TRACEARG_EC, "trace arg ec");
_Static_assert(offsetof(struct rb_trace_arg_struct, data) == VT_RB_TRACEARG_DATA, "trace arg data");

#if defined(VT_RB_CLASS_SERIAL)
_Static_assert(offsetof(struct RClass, ptr) == VT_RB_CLASS_EXT, "class ext");
_Static_assert(offsetof(struct RClass, class_serial) == VT_RB_CLASS_SERIAL, "class serial");
_Static_assert(offsetof(struct rb_classext_struct, iv_index_tbl) == VT_RB_EXT_IV_INDEX_TBL,
	       "iv index table");
_Static_assert(offsetof(struct st_table, num_entries) == VT_RB_ST_NUM_ENTRIES, "st entries");
_Static_assert(ROBJECT_EMBED_LEN_MAX == VT_RB_EMBED_LEN_MAX, "embedded ivars");
_Static_assert(__builtin_types_compatible_p(rb_serial_t, vt_rb_serial_t), "serial type");
_Static_assert(offsetof(rb_vm_t, ractor.main_ractor) == VT_RB_VM_MAIN_RACTOR, "main ractor");
_Static_assert(offsetof(rb_vm_t, objspace) == VT_RB_VM_OBJSPACE, "objspace");
_Static_assert(offsetof(struct rb_ractor_struct, pub.hooks) == VT_RB_RACTOR_HOOKS, "ractor hooks");
_Static_assert(offsetof(rb_hook_list_t, hooks) == VT_RB_HOOKS_HEAD && offsetof(rb_hook_list_t, events) ==
	       VT_RB_HOOKS_EVENTS, "hook list");
#else
_Static_assert(offsetof(struct RClass_and_rb_classext_t, classext.classpath) == VT_RB_CLASS_PATH,
	       "class path");
#endif
