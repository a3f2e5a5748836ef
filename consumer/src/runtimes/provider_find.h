/*
 * provider_find.h: where a provider that lives inside a runtime (the Ruby
 * extension, the JVM agent) is on this machine, and whether a process can
 * reach it below its root.
 */
#ifndef VT_PROVIDER_FIND_H
#define VT_PROVIDER_FIND_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "process/usdt_notes.h"

/* The real path of file in, first found: the directory $env_var names, the
 * build tree beside this vmtrace (bin/../build_dir), install_dir (may be
 * NULL). 0, or -ENOENT. */
int vt_provider_find(const char *file, const char *env_var, const char *build_dir, const char *install_dir,
		     char *path, size_t len);

/* True when path's file name is file. */
int vt_provider_is(const char *path, const char *file);

/* Whether the process pid can open, below its own root, a file of the
 * provider module among probes that is_module names: rel beside the module
 * (or rel_installed, may be NULL), with no link followed: else its runtime
 * cannot load it. */
bool vt_provider_reachable(pid_t pid, const struct vt_usdt_list *probes, bool (*is_module)(const char *),
			   const char *rel, const char *rel_installed);

#endif
