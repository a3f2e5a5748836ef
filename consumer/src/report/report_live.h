/*
 * report_live.h: the live-heap sections of the text and JSON reports
 * (report_live.c, docs/live.md). Each prints nothing when the record has
 * no live heap.
 */
#ifndef VT_REPORT_LIVE_H
#define VT_REPORT_LIVE_H

#include <stddef.h>
#include <stdio.h>

#include "profile/profile.h"

/* "Live heap at the end", then temporaries and ages; top rows (0: all). */
int vt_report_live_text(FILE *out, const struct vt_profile *p, size_t top);
/* `  "live": {...},\n`: one member of the report's object. */
int vt_report_live_json(FILE *out, const struct vt_profile *p);
/* `  "timeline_step_s": S,\n  "timeline": [...],\n`: the per-class rows of
 * each step, when there are any. */
int vt_report_series_json(FILE *out, const struct vt_profile *p);

#endif
