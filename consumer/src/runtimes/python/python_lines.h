/*
 * python_lines.h: the line of an instruction in a CPython 3.11 code object,
 * from its co_linetable (the location table of CPython's
 * Objects/locations.md), as PyCode_Addr2Line gives it.
 */
#ifndef VMTRACE_PYTHON_LINES_H
#define VMTRACE_PYTHON_LINES_H

#include <stddef.h>
#include <stdint.h>

/* The line of instruction index (in code units) of a code object whose
 * table is table[len] and first line firstlineno; firstlineno when the
 * table does not cover it (cut, damaged, or no line for it). */
uint32_t vt_py_line_of(const uint8_t *table, size_t len, uint32_t firstlineno, uint32_t index);

#endif /* VMTRACE_PYTHON_LINES_H */
