/*
 * profile_compare.h: what changed between two recordings, per (class, method,
 * site): allocations (count, bytes) and the live heap at the end (objects,
 * bytes), sorted by growth (profile_compare.c; `vmtrace diff`, rendered by report/report_diff.c).
 */
#ifndef VT_PROFILE_COMPARE_H
#define VT_PROFILE_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

enum vt_diff_col { VT_DIFF_COUNT, VT_DIFF_BYTES, VT_DIFF_LIVE_COUNT, VT_DIFF_LIVE_BYTES, VT_DIFF_COLS };

struct vt_diff_row {
	const char *klass, *method, *site;   /* borrowed from the profiles */
	uint64_t base[VT_DIFF_COLS], now[VT_DIFF_COLS];
};

struct vt_diff {
	struct vt_diff_row *v;
	size_t n;
	bool live;                           /* both recordings had the live heap */
};

/* d = now - base, every key of either, largest growth first (live bytes,
 * then bytes, then count; ties by name). 0 or -ENOMEM. d borrows the
 * profiles' strings: free d before them. */
int vt_diff_build(const struct vt_profile *base, const struct vt_profile *now, struct vt_diff *d);
void vt_diff_free(struct vt_diff *d);

/* now - base of a column, saturated to the int64 range. */
int64_t vt_diff_delta(const struct vt_diff_row *r, enum vt_diff_col c);
/* Has the row changed in any column? */
bool vt_diff_changed(const struct vt_diff_row *r);

#endif
