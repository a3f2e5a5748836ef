/*
 * python_lines.c: CPython 3.11's location table (python_lines.h).
 *
 * Each entry starts with a byte whose top bit is set: bits 3-6 its code,
 * bits 0-2 the number of code units it covers, less one. The code says how
 * the line moves from the previous entry's: 15 no line, 14 (long form) and
 * 13 (no columns) a signed varint, 10-12 by 0, 1 or 2, 0-9 not at all. The
 * bytes after it (columns, end lines) have the top bit clear, so the next
 * entry is the next byte with it set.
 */
#include "runtimes/python/python_lines.h"

enum { LOC_NONE = 15, LOC_LONG = 14, LOC_NO_COLUMNS = 13, LOC_ONE_LINE0 = 10, LOC_ONE_LINE2 = 12 };

/* A varint of 6-bit groups, the lowest first, bit 6 set on all but the last. */
static int64_t varint(const uint8_t *p, const uint8_t *end)
{
	uint64_t v = 0;
	unsigned shift = 0;

	for (; p < end && shift < 42; p++, shift += 6) {
		v |= (uint64_t)(*p & 63) << shift;
		if (!(*p & 64))
			break;
	}
	return (int64_t)v;
}

static int64_t line_delta(const uint8_t *p, const uint8_t *end)
{
	int code = (*p >> 3) & 15;
	int64_t v;

	if (code == LOC_LONG || code == LOC_NO_COLUMNS) {
		v = varint(p + 1, end);
		return v & 1 ? -(v >> 1) : v >> 1;
	}
	if (code >= LOC_ONE_LINE0 && code <= LOC_ONE_LINE2)
		return code - LOC_ONE_LINE0;
	return 0;
}

uint32_t vt_py_line_of(const uint8_t *table, size_t len, uint32_t firstlineno, uint32_t index)
{
	const uint8_t *p = table, *end = table + len;
	int64_t line = firstlineno;
	uint64_t addr = 0;

	while (p < end && (*p & 128)) {
		uint64_t units = (uint64_t)(*p & 7) + 1;

		line += line_delta(p, end);
		if (index < addr + units)
			return (((*p >> 3) & 15) == LOC_NONE || line <= 0 || line > UINT32_MAX)
				       ? firstlineno : (uint32_t)line;
		addr += units;
		do
			p++;
		while (p < end && !(*p & 128));
	}
	return firstlineno;
}
