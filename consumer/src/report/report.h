/*
 * report.h: the whole report layer in one include (model, printing pieces,
 * renderer registry), for code that drives reports from outside, such as the
 * unit tests. The renderers themselves include only report_model.h and
 * report_fmt.h, so nothing they use leads back to the registry.
 */
#ifndef VMTRACE_REPORT_H
#define VMTRACE_REPORT_H

#include "report/report_fmt.h"
#include "report/report_model.h"
#include "report/report_registry.h"

#endif /* VMTRACE_REPORT_H */
