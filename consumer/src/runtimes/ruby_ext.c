/*
 * ruby_ext.c: finding and loading vmtrace's Ruby extension (ruby_ext.h).
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtimes/provider_find.h"
#include "runtimes/ruby_ext.h"

#ifndef VT_RUBY_EXT_INSTALL_DIR
#define VT_RUBY_EXT_INSTALL_DIR NULL
#endif

int vt_ruby_ext_find(char *path, size_t len)
{
	return vt_provider_find(VT_RUBY_EXT_FILE, "VMTRACE_RUBY_EXT_DIR", "lib/ruby", VT_RUBY_EXT_INSTALL_DIR,
				path, len);
}

bool vt_ruby_ext_is(const char *path)
{
	return vt_provider_is(path, VT_RUBY_EXT_FILE);
}

int vt_ruby_ext_dlopened(const char *exe, char *path, size_t len)
{
	char real[PATH_MAX];
	const char *base;

	if (!realpath(exe, real))
		return -ENOENT;
	base = strrchr(real, '/');
	if (!base || strncmp(base + 1, "ruby", 4) != 0)
		return -ENOENT;
	return vt_ruby_ext_find(path, len);
}

int vt_ruby_ext_rubylib(const char *path, char *buf, size_t len)
{
	char dir[PATH_MAX];
	const char *old = getenv("RUBYLIB");
	int n;

	snprintf(dir, sizeof(dir), "%s", path);
	dirname(dir);
	/* RUBYLIB splits at ':' */
	if (strchr(dir, ':'))
		return -EINVAL;
	n = snprintf(buf, len, "RUBYLIB=%s/vmtrace_preload:%s%s%s", dir, dir, old && *old ? ":" : "",
		     old ? old : "");
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
