/*
 * ruby_ext.c: finding and loading vmtrace's Ruby extension (ruby_ext.h).
 */
#include <dirent.h>
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
#include "runtimes/ruby/ruby_ext.h"

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

#define GEMS_MAX 100000 /* entries of a gem directory looked at */

/* The newest vmtrace-VERSION gem in the gem directory dir (below t's
 * root) whose lib holds the extension and its preload: its lib directory
 * into lib, the extension opened (no link followed) into *fd. */
static int gem_in(const struct vt_tfs *t, const char *dir, char *lib, size_t len, int *fd)
{
	char best[NAME_MAX + 1] = "", path[PATH_MAX + 64];
	struct dirent *e;
	DIR *d;
	int dfd = vt_tfs_openat(t, t->root, dir, O_RDONLY | O_DIRECTORY, 0), n;

	if (dfd < 0 || !(d = fdopendir(dfd))) {
		if (dfd >= 0)
			close(dfd);
		return -ENOENT;
	}
	/* the root's to fill: a bounded look */
	for (unsigned seen = 0; seen < GEMS_MAX && (e = readdir(d)); seen++)
		if (!strncmp(e->d_name, "vmtrace-", 8) && strverscmp(e->d_name, best) > 0)
			snprintf(best, sizeof(best), "%s", e->d_name);
	closedir(d);
	if (!best[0])
		return -ENOENT;
	n = snprintf(lib, len, "/%s/%s/lib", dir, best);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	snprintf(path, sizeof(path), "%s/vmtrace_preload/rubygems.rb", lib);
	n = vt_tfs_openat(t, t->root, path, O_RDONLY, 0);
	if (n < 0)
		return -ENOENT;
	close(n);
	snprintf(path, sizeof(path), "%s/" VT_RUBY_EXT_FILE, lib);
	*fd = vt_tfs_openat(t, t->root, path, O_RDONLY, 0);
	return *fd < 0 ? -ENOENT : 0;
}

int vt_ruby_ext_in_root(pid_t pid, char *ext, size_t elen, int *ext_fd)
{
	/* where Debian's and a source build's RubyGems install gems */
	static const char *const dirs[] = { "var/lib/gems/%s.0/gems", "usr/local/lib/ruby/gems/%s.0/gems" };
	char exe[PATH_MAX], link[64], dir[128], ver[16], lib[PATH_MAX], path[PATH_MAX + 32];
	unsigned major, minor;
	struct vt_tfs t;
	const char *base;
	ssize_t n;
	int fd = -1, err = -ENOENT;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n <= 0)
		return -ENOENT;
	exe[n] = '\0';
	base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
	if (sscanf(base, "ruby%u.%u", &major, &minor) != 2 || vt_tfs_open(&t, pid))
		return -ENOENT;
	snprintf(ver, sizeof(ver), "%u.%u", major, minor);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && err; i++) {
		snprintf(dir, sizeof(dir), dirs[i], ver);
		err = gem_in(&t, dir, lib, sizeof(lib), &fd);
	}
	vt_tfs_close(&t);
	if (err)
		return err;
	/* the path the kernel will resolve names the file opened above */
	n = snprintf(path, sizeof(path), "%s/" VT_RUBY_EXT_FILE, lib);
	if (n < 0 || (size_t)n >= sizeof(path) || vt_tfs_root_path_of(pid, fd, path, ext, elen)) {
		close(fd);
		return -ENOENT;
	}
	*ext_fd = fd;
	return 0;
}
