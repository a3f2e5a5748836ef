/*
 * provider_find.c: finding a provider's file (provider_find.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "process/target_fs.h"
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

bool vt_provider_reachable(pid_t pid, const struct vt_usdt_list *probes, bool (*is_module)(const char *),
			   const char *rel, const char *rel_installed)
{
	char path[PATH_MAX + 64];
	struct vt_tfs t;
	bool yes = false;

	if (vt_tfs_open(&t, pid))
		return false;
	for (size_t i = 0; i < probes->n && !yes; i++) {
		const char *const rels[] = { rel, rel_installed };

		if (!is_module(probes->v[i].path))
			continue;
		for (size_t k = 0; k < 2 && !yes && rels[k]; k++) {
			int dir = (int)(strrchr(probes->v[i].path, '/') - probes->v[i].path), fd;

			snprintf(path, sizeof(path), "%.*s/%s", dir, probes->v[i].path, rels[k]);
			fd = vt_tfs_openat(&t, t.root, path, O_RDONLY, 0);
			yes = fd >= 0;
			if (fd >= 0)
				close(fd);
		}
	}
	vt_tfs_close(&t);
	return yes;
}
