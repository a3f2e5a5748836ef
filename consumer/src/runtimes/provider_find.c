/*
 * provider_find.c: finding a provider's file (provider_find.h).
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

static int file_in(const char *dir, const char *file, char *path, size_t len)
{
	char p[PATH_MAX + 256], real[PATH_MAX];
	struct stat sb;

	if (!dir || !*dir)
		return -ENOENT;
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	if (stat(p, &sb) || !S_ISREG(sb.st_mode) || !realpath(p, real) || strlen(real) >= len)
		return -ENOENT;
	memcpy(path, real, strlen(real) + 1);
	return 0;
}

int vt_provider_find(const char *file, const char *env_var, const char *build_dir, const char *install_dir,
		     char *path, size_t len)
{
	char exe[PATH_MAX], dir[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (!file_in(getenv(env_var), file, path, len))
		return 0;
	if (n > 0) {
		exe[n] = '\0';
		snprintf(dir, sizeof(dir), "%s/../%s", dirname(exe), build_dir);
		if (!file_in(dir, file, path, len))
			return 0;
	}
	if (!file_in(install_dir, file, path, len))
		return 0;
	return -ENOENT;
}

int vt_provider_is(const char *path, const char *file)
{
	const char *base = path ? strrchr(path, '/') : NULL;

	return base && strcmp(base + 1, file) == 0;
}
