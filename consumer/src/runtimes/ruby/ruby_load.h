/*
 * ruby_load.h: vmtrace's Ruby extension loaded into a running Ruby that
 * never required it (runtime.h, load_provider): a postponed job, queued
 * from one of its Ruby threads stopped for three calls, requires it at
 * Ruby's next interrupt check (runtimes/provider_load.h).
 */
#ifndef VMTRACE_RUBY_LOAD_H
#define VMTRACE_RUBY_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "process/usdt_notes.h"

int vt_ruby_load_provider(pid_t pid, const struct vt_usdt_list *probes, bool asked, char *note,
			     size_t len);

#endif
