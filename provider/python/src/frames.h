/*
 * frames.h: a thread's interpreter frames as each CPython version lays them
 * out, from that version's internal headers (module.c is built against
 * them: the CMake build for the host's 3.11, setup.py for any other),
 * whose internal headers it includes first of all.
 *
 *   3.11, 3.12  f->f_code, f->prev_instr; the thread's frame behind
 *               tstate->cframe
 *   3.13        f->f_executable (the code object), f->instr_ptr;
 *               tstate->current_frame; entry frames of the C stack
 *               (FRAME_OWNED_BY_CSTACK, f_executable None) in the chain
 *   3.14        f_executable a tagged stack reference; the interpreter's
 *               own frames owned FRAME_OWNED_BY_INTERPRETER or CSTACK
 * A shim frame is no Python code: it is passed over, as tracebacks do.
 */
#ifndef VMTRACE_PY_FRAMES_H
#define VMTRACE_PY_FRAMES_H

/* the interpreter's own frame layout: its internal headers, first of all */
#define PY_SSIZE_T_CLEAN
#define Py_BUILD_CORE 1
#include <Python.h>
#include "internal/pycore_frame.h"
#include "internal/pycore_pystate.h"
#if PY_VERSION_HEX >= 0x030E0000
#include "internal/pycore_interpframe.h"
#endif

#if PY_VERSION_HEX < 0x030B0000
#error "vmtrace's CPython extension needs CPython 3.11 or newer"
#endif
#ifdef Py_GIL_DISABLED
#error "vmtrace's CPython extension needs a CPython with the GIL (its tables are the GIL's); a free-threaded build (3.13t, 3.14t) is not supported"
#endif

#if PY_VERSION_HEX >= 0x030E0000
#define VT_FRAME_CODE(f) _PyFrame_GetCode(f)
#define VT_FRAME_INSTR(f) ((const void *)(f)->instr_ptr)
#define VT_FRAME_SHIM(f) ((f)->owner >= FRAME_OWNED_BY_INTERPRETER)
#define VT_CURRENT_FRAME(ts) ((ts)->current_frame)
#elif PY_VERSION_HEX >= 0x030D0000
#define VT_FRAME_CODE(f) _PyFrame_GetCode(f)
#define VT_FRAME_INSTR(f) ((const void *)(f)->instr_ptr)
#define VT_FRAME_SHIM(f) ((f)->owner == FRAME_OWNED_BY_CSTACK)
#define VT_CURRENT_FRAME(ts) ((ts)->current_frame)
#elif PY_VERSION_HEX >= 0x030C0000
#define VT_FRAME_CODE(f) ((f)->f_code)
#define VT_FRAME_INSTR(f) ((const void *)(f)->prev_instr)
#define VT_FRAME_SHIM(f) ((f)->owner == FRAME_OWNED_BY_CSTACK)
#define VT_CURRENT_FRAME(ts) ((ts)->cframe ? (ts)->cframe->current_frame : NULL)
#else
#define VT_FRAME_CODE(f) ((f)->f_code)
#define VT_FRAME_INSTR(f) ((const void *)(f)->prev_instr)
#define VT_FRAME_SHIM(f) 0
#define VT_CURRENT_FRAME(ts) ((ts)->cframe ? (ts)->cframe->current_frame : NULL)
#endif

/* The calling thread's state: inline on 3.11; from 3.12 the thread-local
 * it is kept in is not exported to extensions, so the public call */
#if PY_VERSION_HEX >= 0x030D0000
#define VT_TSTATE() PyThreadState_GetUnchecked()
#elif PY_VERSION_HEX >= 0x030C0000
#define VT_TSTATE() _PyThreadState_UncheckedGet()
#else
#define VT_TSTATE() _PyThreadState_GET()
#endif

/* The reference tracer (PyRefTracer_SetTracer, 3.13 and newer) is told of
 * each new object with its type; before it, the type is read from the
 * object's header (header_types.h). */
#define VT_TYPED_BY_TRACER (PY_VERSION_HEX >= 0x030D0000)

/* Where an object starts in its block: at the block, or after its
 * pre-header (_PyType_PreHeaderSize), at most the collector's links and
 * the managed dict's two words (3.12, 3.13+: the dict's and the weakrefs'). */
#define VT_PRE_HEADER_MAX (sizeof(PyGC_Head) + 2 * sizeof(PyObject *))

/* f, or the first frame behind it that runs Python code */
static inline _PyInterpreterFrame *vt_frame_python(_PyInterpreterFrame *f)
{
	while (f && VT_FRAME_SHIM(f))
		f = f->previous;
	return f;
}

#endif
