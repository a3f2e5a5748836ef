/*
 * ruby_unprobed.h: the line for a Ruby with none of the probes vmtrace
 * reads (runtime.h, unprobed).
 */
#ifndef VMTRACE_RUBY_UNPROBED_H
#define VMTRACE_RUBY_UNPROBED_H

#include <stddef.h>
#include <sys/types.h>

int vt_ruby_unprobed(pid_t pid, char *why, size_t len);

#endif
