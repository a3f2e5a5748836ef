/*
 * provider_find.h: where a provider that lives inside a runtime (the Ruby
 * extension, the JVM agent) is on this machine.
 */
#ifndef VT_PROVIDER_FIND_H
#define VT_PROVIDER_FIND_H

#include <stddef.h>

/* The real path of file in, first found: the directory $env_var names, the
 * build tree beside this vmtrace (bin/../build_dir), install_dir (may be
 * NULL). 0, or -ENOENT. */
int vt_provider_find(const char *file, const char *env_var, const char *build_dir, const char *install_dir,
		     char *path, size_t len);

/* True when path's file name is file. */
int vt_provider_is(const char *path, const char *file);

#endif
