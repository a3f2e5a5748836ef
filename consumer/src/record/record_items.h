/*
 * record_items.h: the items of a record file (docs/record-format.md), one
 * line each, parsed into a vt_profile. record_read.c frames the file (magic,
 * bounded lines, header, end) and hands each line's fields here.
 */
#ifndef VT_RECORD_ITEMS_H
#define VT_RECORD_ITEMS_H

#include <stdint.h>

#include "profile/profile.h"

enum {
	SEEN_RUNTIME = 1 << 0,
	SEEN_PROBES = 1 << 1,
	SEEN_TARGET = 1 << 2,
	SEEN_PID = 1 << 3,
	SEEN_DURATION = 1 << 4,
	SEEN_PERIOD = 1 << 5,
	SEEN_HAS_ALLOCS = 1 << 6,
	SEEN_SERIAL = 1 << 7,
	SEEN_GC = 1 << 8,
	SEEN_ALL = (1 << 9) - 1,
	SEEN_START = 1 << 9,     /* optional: version 1 records lack it */
	SEEN_LIVE_HEAP = 1 << 10, /* optional: with --live (version 3) */
	SEEN_GC_PAUSE = 1 << 11, /* gc_summary lines come before every gc_pause */
	SEEN_GC_SUMMARY = 1 << 12, /* then each kind's once: bit SEEN_GC_SUMMARY << (1 + kind) */
	SEEN_SERIES_STEP = 1 << (13 + VT_GC_KINDS), /* optional: with a timeline (version 4) */
	SEEN_STACK = 1 << (14 + VT_GC_KINDS), /* text lines come before every stack */
};

#define STACK_MAX_FRAMES 128     /* frames of a `stack` line at most */
/* the longest items: a signal with its histogram, a stack of 128 frames */
#define MAX_FIELDS (3 + 3 * STACK_MAX_FRAMES > 4 + VT_HIST_BUCKETS + 2 ? 3 + 3 * STACK_MAX_FRAMES \
							      : 4 + VT_HIST_BUCKETS + 2)

/* Splits line at single spaces into at most max fields; -1 when malformed. */
int vt_record_split(char *line, char **field, int max);
/* A decimal number: 0, or -1 when malformed or out of range. */
int vt_record_get_u64(const char *s, uint64_t *out);
int vt_record_get_int(const char *s, long lo, long hi, long *out);
/* One item's fields into p: 0, -ENOENT for an unknown keyword, -EOVERFLOW
 * when its counts overflow the totals, another negative value when malformed. */
int vt_record_parse_item(struct vt_profile *p, char **f, int n, unsigned *seen);

#endif
