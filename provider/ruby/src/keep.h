/*
 * keep.h: what the extension's tables name stays alive (keep.c).
 *
 * The tables are keyed by the addresses of Ruby's own objects: a method
 * entry, an instruction sequence and its instructions. Were one freed,
 * its address could come back as another's and be counted under the first
 * one's name. So every object a table names is marked, as stackprof marks
 * its frames, for the life of the process.
 */
#ifndef VMTRACE_RUBY_KEEP_H
#define VMTRACE_RUBY_KEEP_H

#include <ruby/ruby.h>

/* Marks (rb_gc_mark) every object the tables name. */
typedef void (*vt_rb_mark_fn)(void);

/* Make the object Ruby marks the tables through, with mark; once, at load,
 * under the GVL. */
void vt_rb_keep_init(vt_rb_mark_fn mark);
/* A table named obj: marked from now on (Ruby's write barrier, so a
 * collection under way sees it too). Under the GVL; allocates nothing, so
 * a hook may call it. */
void vt_rb_kept_more(VALUE obj);

#endif
