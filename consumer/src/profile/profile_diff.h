/*
 * profile_diff.h: one interval of a session, as the difference of two of
 * its cumulative collections (`record --every`, docs/exports.md).
 */
#ifndef VMTRACE_PROFILE_DIFF_H
#define VMTRACE_PROFILE_DIFF_H

#include "profile/profile.h"

/* out (initialized here) = what late counted beyond early, both collected
 * from one session with early first: counts subtracted row by row, rows
 * with nothing in the interval left out (loss counters stay, zeros too),
 * the GC pauses after early's, start_unix_ns and duration_s the interval's.
 * A signal's latency maximum is exact when the interval set a new one, else
 * the top of its highest histogram bucket (capped by the run's maximum).
 * 0 or -ENOMEM (out left empty). */
int vt_profile_diff(const struct vt_profile *late, const struct vt_profile *early,
		    struct vt_profile *out);

#endif /* VMTRACE_PROFILE_DIFF_H */
