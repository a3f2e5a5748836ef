/*
 * continuous.h: `record --every`, one profile per interval of a session,
 * written to a directory and/or pushed to an ingest endpoint
 * (docs/exports.md).
 */
#ifndef VMTRACE_CONTINUOUS_H
#define VMTRACE_CONTINUOUS_H

#include "profile/profile.h"
#include "export/push.h"
#include "report/report_opts.h"
#include "session/session.h"

struct vt_every_opts {
	double every_s;                /* interval length */
	double duration_s;             /* whole run; 0 = until stopped */
	const char *out_dir;           /* one file per interval, or NULL */
	struct vt_report_opts ropts;   /* the files' format */
	const struct vt_push_opts *push; /* or NULL */
};

/* Runs s interval by interval until duration, a stop signal or the
 * target's exit; the last interval ends there, however short. *whole gets
 * the cumulative profile of the run (initialized here). Errors are printed
 * as one line each; returns 0, or 1 when an interval could not be written
 * or the counters could not be read. */
int vt_record_every(struct vt_session *s, const struct vt_every_opts *o, struct vt_profile *whole);

#endif /* VMTRACE_CONTINUOUS_H */
