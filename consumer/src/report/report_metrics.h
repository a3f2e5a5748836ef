/*
 * report_metrics.h: a profile as Prometheus metrics (`vmtrace serve`,
 * docs/exports.md), in the OpenMetrics 1.0 text format or Prometheus's
 * 0.0.4 text format, whichever the scraper asks for; and once, the report
 * format `prometheus` (a node_exporter textfile).
 *
 * Cardinality is bounded: a keyed family (allocations per class and method,
 * cache resets, serial increments) gives its own series to the first `top`
 * keys it meets and folds every later key into one "(other)" series. The
 * set of keys only grows, so every counter stays monotonic across scrapes.
 */
#ifndef VMTRACE_REPORT_METRICS_H
#define VMTRACE_REPORT_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "profile/profile.h"

#define VT_METRICS_OTHER "(other)"

struct vt_metrics;

/* top: series per keyed family at most, besides "(other)" (>= 1); comm:
 * the target's name for the labels. all: the profile is of every process
 * (record --all's): allocations are keyed and labelled by their process
 * (pid, comm, cgroup, container id, runtime) within the same bound, the
 * first `top` processes have a vmtrace_target_info series, and what the profile
 * sums over the processes carries the runtimes alone (comm unused). NULL on
 * -ENOMEM. */
struct vt_metrics *vt_metrics_new(size_t top, const char *comm, bool all);
void vt_metrics_free(struct vt_metrics *m); /* accepts NULL */

/* The exposition of p (a cumulative profile of one session) into a malloc'd
 * buffer: OpenMetrics when openmetrics, else Prometheus text 0.0.4.
 * 0 or -ENOMEM. */
int vt_metrics_render(struct vt_metrics *m, const struct vt_profile *p, bool openmetrics,
		      char **buf, size_t *len);

/* The Content-Type header of each. */
const char *vt_metrics_content_type(bool openmetrics);

#endif /* VMTRACE_REPORT_METRICS_H */
