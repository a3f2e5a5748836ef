/*
 * php_layout.h: the Zend engine's layout, per PHP version, and finding a
 * PHP that has no USDT probes of its own.
 *
 * A php binary says its extension API version in its build id
 * ("API20240924,NTS"); the row of that version (php_layout.c) gives the
 * offsets the BPF programs read, each checked against that version's
 * headers by php_layout_check.c (tests/runtimes/php/php_versions_test.py
 * compiles it in each PHP's root). Thread-safe builds (",TS") keep the
 * executor's globals per thread and are not read.
 */
#ifndef VMTRACE_PHP_LAYOUT_H
#define VMTRACE_PHP_LAYOUT_H

#include <stddef.h>

#include "process/usdt_notes.h"
#include "runtimes/php/php_maps.h"

/* The probe vt_php_claim adds for a PHP with none of its own: it names the
 * php binary the uprobes go on. */
#define VT_PHP_EXPORTS_PROBE "zend__exports"

/* The row for the php binary at path (its API version read from its build
 * id), with the link-time addresses of executor_globals, zend_objects_new
 * and zend_object_std_init from its exported symbols; eg_frames left 0.
 * 0, or -errno with the reason in err (-ENOENT: no PHP; -ENOTSUP: a version
 * or build with no row). */
int vt_php_layout_of(const char *path, struct vt_php_layout *l, char *err, size_t errlen);

/* runtime.h's claim: the php binary at exe has no USDT probes of its own
 * (its function probes, if any, are those of vmtrace's PHP extension) but
 * is a PHP of a known version: VT_PHP_EXPORTS_PROBE added to probes. 1,
 * or 0. */
int vt_php_claim(const char *exe, struct vt_usdt_list *probes);

#endif
