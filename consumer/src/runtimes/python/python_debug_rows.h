/*
 * python_debug_rows.h: where, inside the _Py_DebugOffsets that CPython
 * publishes at the start of _PyRuntime, the offsets that PEP 768's remote
 * execution needs are, one row per minor version (data only:
 * python_remote.c reads it, and tests/runtimes/python/python_debug_check.c
 * compiles it against each version's headers and compares). The struct
 * keeps its layout within a minor version only; a new version adds a row.
 */
#ifndef VMTRACE_PYTHON_DEBUG_ROWS_H
#define VMTRACE_PYTHON_DEBUG_ROWS_H

#include <stdint.h>

struct vt_py_debug_row {
	uint32_t version;                  /* PY_VERSION_HEX >> 16: 0x030e for 3.14 */
	uint16_t interpreters_head;        /* runtime_state.interpreters_head */
	uint16_t threads_main;             /* interpreter_state.threads_main */
	uint16_t eval_breaker;             /* debugger_support.eval_breaker */
	uint16_t remote_debugger_support;  /* debugger_support.remote_debugger_support */
	uint16_t remote_debugging_enabled; /* debugger_support.remote_debugging_enabled */
	uint16_t debugger_pending_call;    /* debugger_support.debugger_pending_call */
	uint16_t debugger_script_path;     /* debugger_support.debugger_script_path */
	uint16_t debugger_script_path_size; /* debugger_support.debugger_script_path_size */
	uint32_t please_stop_bit;          /* _PY_EVAL_PLEASE_STOP_BIT: the eval breaker's bit */
};

static const struct vt_py_debug_row vt_py_debug_rows[] = {
	{ 0x030e, 40, 80, 712, 720, 728, 736, 744, 752, 1u << 5 }, /* 3.14 */
};

#define VT_PY_DEBUG_ROWS (sizeof(vt_py_debug_rows) / sizeof(vt_py_debug_rows[0]))

#endif
