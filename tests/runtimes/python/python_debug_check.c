/*
 * python_debug_check.c: the row of consumer/src/runtimes/python/
 * python_debug_rows.h for the CPython whose headers this is compiled
 * against (-DPy_BUILD_CORE, its include and internal directories),
 * compared with what those headers say (attach_test.py builds it in each
 * root). Prints each field; exit 0 when all agree, 1 when one differs, 2
 * when the version has no row.
 */
#include <stddef.h>
#include <stdio.h>

#include "Python.h"
#include "internal/pycore_ceval.h"
#include "internal/pycore_debug_offsets.h"

#include "runtimes/python/python_debug_rows.h"

#define CHECK(field, want)                                                                          \
	do {                                                                                        \
		unsigned long w = (unsigned long)(want);                                            \
		printf("%-26s row %-6lu headers %-6lu %s\n", #field, (unsigned long)r->field, w,    \
		       r->field == w ? "ok" : "DIFFERS");                                           \
		bad |= r->field != w;                                                               \
	} while (0)

int main(void)
{
	const struct vt_py_debug_row *r = NULL;
	int bad = 0;

	for (size_t i = 0; i < VT_PY_DEBUG_ROWS; i++)
		if (vt_py_debug_rows[i].version == PY_VERSION_HEX >> 16)
			r = &vt_py_debug_rows[i];
	if (!r) {
		printf("no row for CPython %s\n", PY_VERSION);
		return 2;
	}
	printf("CPython %s\n", PY_VERSION);
	CHECK(interpreters_head, offsetof(_Py_DebugOffsets, runtime_state.interpreters_head));
	CHECK(threads_main, offsetof(_Py_DebugOffsets, interpreter_state.threads_main));
	CHECK(eval_breaker, offsetof(_Py_DebugOffsets, debugger_support.eval_breaker));
	CHECK(remote_debugger_support, offsetof(_Py_DebugOffsets, debugger_support.remote_debugger_support));
	CHECK(remote_debugging_enabled, offsetof(_Py_DebugOffsets, debugger_support.remote_debugging_enabled));
	CHECK(debugger_pending_call, offsetof(_Py_DebugOffsets, debugger_support.debugger_pending_call));
	CHECK(debugger_script_path, offsetof(_Py_DebugOffsets, debugger_support.debugger_script_path));
	CHECK(debugger_script_path_size, offsetof(_Py_DebugOffsets, debugger_support.debugger_script_path_size));
	CHECK(please_stop_bit, _PY_EVAL_PLEASE_STOP_BIT);
	return bad;
}
