/*
 * record_format.h: what the record writer (record_write.c) and reader
 * (record_read.c) agree on: the magic line and the format version
 * (docs/record-format.md).
 */
#ifndef VT_RECORD_FORMAT_H
#define VT_RECORD_FORMAT_H

#define RECORD_MAGIC "vmtrace-record"
#define RECORD_VERSION 2 /* 2 added start_unix_ns, event, gc_pause start and thread */
#define RECORD_MAGIC_LINE_MAX 64 /* "vmtrace-record N\n" and then some */

#endif
