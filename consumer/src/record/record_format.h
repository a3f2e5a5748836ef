/*
 * record_format.h: what the record writer (record_write.c) and reader
 * (record_read.c) agree on: the magic line and the format version
 * (docs/record-format.md).
 */
#ifndef VT_RECORD_FORMAT_H
#define VT_RECORD_FORMAT_H

#define RECORD_MAGIC "vmtrace-record"
/* 2 added start_unix_ns, event, gc_pause start and thread; 3 the live heap
 * (live_heap, live) and the timeline (series), which older readers cannot
 * show, so they refuse it; 4 the timeline's step (series_step), without
 * which an older reader would take each row for a second; 5 the frames'
 * texts once (text) and a stack's frames naming them by number */
#define RECORD_VERSION 5
#define RECORD_MAGIC_LINE_MAX 64 /* "vmtrace-record N\n" and then some */

#endif
