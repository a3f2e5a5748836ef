/*
 * python_ext.c: finding and loading vmtrace's CPython extension (python_ext.h).
 */
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtimes/python/python_ext.h"

#define MODULE_PREFIX "vmtrace.cpython-"

bool vt_python_ext_is(const char *path)
{
	const char *base = path ? strrchr(path, '/') : NULL;

	return base && strncmp(base + 1, MODULE_PREFIX, strlen(MODULE_PREFIX)) == 0 &&
	       strstr(base, ".so") != NULL;
}

/* the module in dir, by its prefix (the suffix is the interpreter's) */
static int module_in(const char *dir, char *path, size_t len)
{
	DIR *d;
	struct dirent *e;
	int r = -ENOENT;

	if (!dir || !*dir || !(d = opendir(dir)))
		return -ENOENT;
	while ((e = readdir(d)))
		if (strncmp(e->d_name, MODULE_PREFIX, strlen(MODULE_PREFIX)) == 0) {
			char p[PATH_MAX + 300];

			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			if (realpath(p, path) && strlen(path) < len) {
				r = 0;
				break;
			}
		}
	closedir(d);
	return r;
}

int vt_python_ext_find(char *path, size_t len)
{
	char exe[PATH_MAX], dir[PATH_MAX + 16], real[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (len < PATH_MAX)
		return -ENAMETOOLONG;
	if (!module_in(getenv("VMTRACE_PYTHON_EXT_DIR"), real, sizeof(real)))
		goto found;
	if (n > 0) {
		exe[n] = '\0';
		snprintf(dir, sizeof(dir), "%s/../lib/python", dirname(exe)); /* the build tree */
		if (!module_in(dir, real, sizeof(real)))
			goto found;
	}
#ifdef VT_PYTHON_EXT_INSTALL_DIR
	if (!module_in(VT_PYTHON_EXT_INSTALL_DIR, real, sizeof(real)))
		goto found;
#endif
	return -ENOENT;
found:
	snprintf(path, len, "%s", real);
	return 0;
}

bool vt_python_ext_program(const char *exe)
{
	char real[PATH_MAX];
	const char *base;

	if (!exe || !realpath(exe, real))
		return false;
	base = strrchr(real, '/');
	return base && strncmp(base + 1, "python3", 7) == 0;
}

int vt_python_ext_env(const char *path, char *buf, size_t len)
{
	char dir[PATH_MAX], autoload[PATH_MAX + 32];
	const char *old = getenv("PYTHONPATH");
	int n;

	snprintf(dir, sizeof(dir), "%s", path);
	dirname(dir);
	/* a build's layout: the autoload beside the module, whose directory
	 * comes next; installed, the sitecustomize sits in vmtrace_autoload/
	 * beside the module, whose site directory is on the path already */
	snprintf(autoload, sizeof(autoload), "%s/autoload", dir);
	if (!access(autoload, R_OK))
		n = snprintf(buf, len, "PYTHONPATH=%s:%s%s%s", autoload, dir, old && *old ? ":" : "",
			     old ? old : "");
	else
		n = snprintf(buf, len, "PYTHONPATH=%s/vmtrace_autoload/autoload%s%s", dir, old && *old ? ":" : "",
			     old ? old : "");
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
