/*
 * php_ext.h: vmtrace's PHP extension (provider/php) as the consumer sees
 * it: the function probes for a PHP built without them, installed in the
 * PHP's own extension directory (provider/php/build.sh) and loaded by
 * `-d extension=vmtrace`, which vmtrace inserts into a php it starts.
 */
#ifndef VMTRACE_PHP_EXT_H
#define VMTRACE_PHP_EXT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "process/usdt_notes.h"
#include "runtimes/runtime.h"

#define VT_PHP_EXT_ARG "-dextension=vmtrace"

/* The extension installed for the PHP of extension API api that pid runs
 * (Debian's directory, below pid's root; no link followed on the way): 0
 * with a path by which vmtrace and the kernel reach it, or -ENOENT. */
int vt_php_ext_in_root(pid_t pid, unsigned api, char *path, size_t len);

/* runtime.h's at_exec: a PHP without probes of its own (vt_php_claim's
 * marker in probes) stopped at its exec, with the extension installed for
 * it: VT_PHP_EXT_ARG inserted as its first argument, the extension's probes
 * added to probes. */
void vt_php_at_exec(pid_t pid, const char *exe, const struct vt_exec_opts *o,
		    struct vt_usdt_list *probes);

#endif
