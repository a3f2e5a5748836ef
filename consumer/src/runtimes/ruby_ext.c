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

#include "runtimes/ruby_ext.h"

static int file_in(const char *dir, char *path, size_t len)
{
	char p[PATH_MAX + 64], real[PATH_MAX];
	struct stat sb;

	if (!dir || !*dir)
		return -ENOENT;
	snprintf(p, sizeof(p), "%s/%s", dir, VT_RUBY_EXT_FILE);
	if (stat(p, &sb) || !S_ISREG(sb.st_mode) || !realpath(p, real) || strlen(real) >= len)
		return -ENOENT;
	memcpy(path, real, strlen(real) + 1);
	return 0;
}

int vt_ruby_ext_find(char *path, size_t len)
{
	char exe[PATH_MAX], dir[PATH_MAX + 16];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (!file_in(getenv("VMTRACE_RUBY_EXT_DIR"), path, len))
		return 0;
	if (n > 0) {
		exe[n] = '\0';
		/* the build tree: bin/vmtrace beside lib/ruby/ */
		snprintf(dir, sizeof(dir), "%s/../lib/ruby", dirname(exe));
		if (!file_in(dir, path, len))
			return 0;
	}
#ifdef VT_RUBY_EXT_INSTALL_DIR
	if (!file_in(VT_RUBY_EXT_INSTALL_DIR, path, len))
		return 0;
#endif
	return -ENOENT;
}

bool vt_ruby_ext_is(const char *path)
{
	const char *base = path ? strrchr(path, '/') : NULL;

	return base && strcmp(base + 1, VT_RUBY_EXT_FILE) == 0;
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

int vt_ruby_ext_rubyopt(const char *path, char *buf, size_t len)
{
	char dir[PATH_MAX];
	const char *old = getenv("RUBYOPT");
	int n;

	snprintf(dir, sizeof(dir), "%s", path);
	/* RUBYOPT splits at white space: a directory with a space cannot go in */
	if (dir[strcspn(dir, " \t\n\v\f\r")])
		return -EINVAL;
	n = snprintf(buf, len, "RUBYOPT=-I%s -rvmtrace%s%s", dirname(dir), old && *old ? " " : "",
		     old ? old : "");
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
