/*
 * report_out.h: where a report goes, and how it reads there. A text report
 * on a terminal is for a person: the terminal's width (report_opts' width),
 * the top 20 rows of each section unless --top says otherwise, and a pager
 * when it is longer than the screen (PAGER, else less; --no-pager, or PAGER
 * empty or cat, for none), as git and perf do. Anywhere else (a pipe, a
 * file) it is for a program: every row, names whole, written as it comes.
 */
#ifndef VMTRACE_REPORT_OUT_H
#define VMTRACE_REPORT_OUT_H

#include <stdbool.h>
#include <stdio.h>

#include "cli/cli.h"

#define VT_TERMINAL_TOP 20 /* rows of each section on a terminal, without --top */

struct vt_report_out {
	FILE *dest;             /* where the report ends up */
	FILE *file;             /* what the report is written to: dest, or memory to page */
	char *buf;              /* the memory */
	size_t len;
	unsigned rows;          /* the terminal's lines */
	bool page;
};

/* Prepare a report of a->report's format for dest: on a terminal, set
 * a->report's width and top, and hold a text report to page it (written
 * straight to dest, unpaged, when no memory can hold it). */
void vt_report_out_open(struct vt_report_out *o, FILE *dest, struct vt_cli_args *a, bool no_pager);

/* Send what was written to its destination, through the pager when it is
 * longer than the screen: 0 or -errno. */
int vt_report_out_close(struct vt_report_out *o);

#endif
