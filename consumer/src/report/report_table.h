/*
 * report_table.h: a table of text cells for people, aligned on printing
 * (the text report, diff). On a terminal (a width) it fits: columns marked
 * droppable go first, from the right, then the name columns are shortened
 * in the middle, each to the same share of its width, keeping the ends
 * that tell most (a class's last names, a method's own name).
 */
#ifndef VMTRACE_REPORT_TABLE_H
#define VMTRACE_REPORT_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct vt_table {
	int ncols;
	const char *align;           /* per column: 'l' a name (may be shortened), 'L' words
				      * (never shortened), 'r' a number */
	const char *drop;            /* 'd' per column that may go to fit a terminal; NULL: none */
	char **cells;                /* row-major */
	size_t n, cap;
	int err;
};

/* An empty table of ncols columns; align and drop stay the caller's. */
void vt_table_init(struct vt_table *t, int ncols, const char *align);
/* Append a malloc'ed cell (row-major); NULL marks the table -ENOMEM. */
void vt_table_push(struct vt_table *t, char *s);
__attribute__((format(printf, 2, 3)))
void vt_cell(struct vt_table *t, const char *fmt, ...);
void vt_cell_u64(struct vt_table *t, uint64_t v);
/* A name as the terminal should show it (vt_text_name); "" as empty_as. */
void vt_cell_name(struct vt_table *t, const char *name, const char *empty_as);
/* Print the table, each row after indent, within max columns (0: as wide
 * as its cells), and free it. 0 or the first error. */
int vt_table_done(FILE *out, struct vt_table *t, const char *indent, size_t max);

/* The columns s takes (UTF-8 characters). */
size_t vt_display_width(const char *s);
/* s in w columns: whole, or shortened in the middle with "..". */
void vt_put_shortened(FILE *out, const char *s, size_t w);
/* v with a comma between each three digits, in buf. */
const char *vt_thousands(uint64_t v, char *buf, size_t len);
/* What a table cut at --top left out: "  and N more rows, P% of WHAT:
 * --top 0 for all" (nothing when more is 0). */
void vt_print_left_out(FILE *out, size_t more, uint64_t part, uint64_t total, const char *what);

#endif
