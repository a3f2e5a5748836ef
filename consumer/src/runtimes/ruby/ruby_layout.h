/*
 * ruby_layout.h: the frame layout of the libruby a process runs, for the
 * frame walk of runtimes/ruby/ruby_frame.bpf.h: taken from a table of the Ruby
 * versions vmtrace knows (checked against Ruby's headers and a running
 * process), keyed by the version the library says it is.
 */
#ifndef VMTRACE_RUBY_LAYOUT_H
#define VMTRACE_RUBY_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "runtimes/ruby/ruby_frame.h"

/* The layout for the libruby at path, and the link-time address of the
 * tls_index of its ruby_current_ec. 0, or -ENOTSUP (a version with no
 * layout in the table) / -ENOEXEC (no TLS access found) with a one-line
 * reason in why: the caller then takes sites from Ruby's probes. */
int vt_rb_frame_layout(const char *path, struct vt_rb_frame_layout *out, uint64_t *ec_tls_index,
		       char *why, size_t whylen);

#endif /* VMTRACE_RUBY_LAYOUT_H */
