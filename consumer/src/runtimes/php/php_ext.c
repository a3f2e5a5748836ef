/*
 * php_ext.c: vmtrace's PHP extension, found and given (php_ext.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "process/exec_env.h"
#include "process/target_fs.h"
#include "runtimes/adapter.h"
#include "runtimes/php/php_ext.h"
#include "runtimes/php/php_layout.h"

int vt_php_ext_in_root(pid_t pid, unsigned api, char *path, size_t len)
{
	struct vt_tfs t = { .root = -1, .cwd = -1 };
	char rel[64];
	struct stat st;
	int fd, r = -ENOENT;

	snprintf(rel, sizeof(rel), "usr/lib/php/%u/vmtrace.so", api);
	if (vt_tfs_open(&t, pid)) {
		vt_tfs_close(&t);
		return -ENOENT;
	}
	fd = vt_tfs_openat(&t, t.root, rel, O_PATH, 0);
	if (fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode) &&
	    snprintf(path, len, "/proc/%d/root/%s", (int)pid, rel) < (int)len)
		r = 0;
	if (fd >= 0)
		close(fd);
	vt_tfs_close(&t);
	return r;
}

void vt_php_at_exec(pid_t pid, const char *exe, const struct vt_exec_opts *o,
		    struct vt_usdt_list *probes)
{
	const char *bare = vt_usdt_probe_path(probes, "php", VT_PHP_EXPORTS_PROBE);
	struct vt_usdt_list ext = { 0 };
	struct vt_php_layout l;
	char path[128], err[256];
	int r;

	(void)exe;
	if (!bare || o->no_methods || (o->asked && strcmp(o->asked, "php")) ||
	    vt_usdt_probe_path(probes, "php", "function__entry") ||
	    vt_php_layout_of(bare, &l, err, sizeof(err)) || vt_php_ext_in_root(pid, l.api, path, sizeof(path)))
		return;
	r = vt_usdt_read_file(path, &ext);
	if (!r && ext.n && !vt_exec_arg_insert(pid, 1, VT_PHP_EXT_ARG))
		for (size_t i = 0; i < ext.n; i++)
			vt_usdt_list_take(probes, &ext.v[i]);
	vt_usdt_list_free(&ext);
}
