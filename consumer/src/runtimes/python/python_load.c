/*
 * python_load.c: vmtrace's CPython extension loaded into a running CPython
 * (python_load.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "process/proc_info.h"
#include "process/target_fs.h"
#include "runtimes/provider_load.h"
#include "runtimes/python/python_load.h"
#include "runtimes/python/python_remote.h"
#include "runtimes/python/python_ext.h"

#define LOAD_MS 2000 /* from the queue to the extension loaded (0-3 ms when the runtime runs) */

static const char *const provider_module[] = { "vmtrace.cpython-", NULL };

/* CPython's pending calls (any thread may add one; the main thread runs
 * them), running PyRun_SimpleString in __main__. Added from the main
 * thread: 3.11 sets the main thread's eval breaker for a call only when
 * the main thread adds it (another's waits for its next take of the GIL). */
static const struct vt_runtime_queue python_queue = {
	.modules = vt_python_modules,
	.queue = "Py_AddPendingCall",
	.run = "PyRun_SimpleString",
	.main_first = true,
	.queued = 0,
};

/* The source run: the module at P loaded as vmtrace, unless the program
 * has one by that name already, through the import system's own frozen
 * modules (importlib.util may not be imported yet, and importing it reads
 * files, each read a wait for the GIL in a busy program); whatever fails
 * is swallowed, so the program runs on as it was. */
#define SOURCE                                                                                      \
	"try:\n import sys\n if 'vmtrace' not in sys.modules:\n"                                      \
	"  b, e = sys.modules['_frozen_importlib'], sys.modules['_frozen_importlib_external']\n"      \
	"  l = e.ExtensionFileLoader('vmtrace', '%s')\n"                                             \
	"  m = b.module_from_spec(b.ModuleSpec('vmtrace', l, origin=l.path))\n"                      \
	"  sys.modules['vmtrace'] = m\n  l.exec_module(m)\nexcept BaseException:\n pass\n"

/* source as one line that runs it in a namespace of its own (nothing is
 * bound in __main__, where PyRun_SimpleString runs): exec("...", {}).
 * The source holds no double quote or backslash. */
static int one_line(const char *source, char *out, size_t len)
{
	size_t n = (size_t)snprintf(out, len, "exec(\"");

	for (; *source && n + 8 < len; source++) {
		if (*source == '\n') {
			out[n++] = '\\';
			out[n++] = 'n';
		} else {
			out[n++] = *source;
		}
	}
	if (*source || n + 8 >= len)
		return -ENAMETOOLONG;
	snprintf(out + n, len - n, "\", {})");
	return 0;
}

/* The minor version of the python3.N (or libpython3.N) pid maps. */
static int version_minor(pid_t pid, unsigned *minor)
{
	static const char *const named[] = { "python3.", "libpython3.", NULL };
	char path[PATH_MAX];
	const char *base;

	if (vt_proc_module_named(pid, named, path, sizeof(path)))
		return -ENOENT;
	base = strrchr(path, '/') + 1;
	return sscanf(base, "python3.%u", minor) == 1 || sscanf(base, "libpython3.%u", minor) == 1 ? 0 : -ENOENT;
}

#define SITE_ENTRIES_MAX 100000 /* entries of a site directory looked at */

/* The package pip installed for Python 3.minor below pid's root, in the
 * site directories of Debian's and of a source build's Python (a venv is
 * not looked for): its module's path as the process names it. */
static int installed_module(pid_t pid, unsigned minor, char *path, size_t len)
{
	static const char *const dirs[] = { "usr/local/lib/python3.%u/dist-packages", "usr/lib/python3/dist-packages",
					    "usr/local/lib/python3.%u/site-packages", "usr/lib/python3.%u/site-packages" };
	char dir[128], want[48];
	struct vt_tfs t;
	int r = -ENOENT;

	if (vt_tfs_open(&t, pid)) {
		vt_tfs_close(&t);
		return -ENOENT;
	}
	snprintf(want, sizeof(want), "vmtrace.cpython-3%u-", minor);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && r; i++) {
		struct dirent *e;
		DIR *d;
		int fd;

		snprintf(dir, sizeof(dir), dirs[i], minor);
		if ((fd = vt_tfs_openat(&t, t.root, dir, O_RDONLY | O_DIRECTORY, 0)) < 0)
			continue;
		if (!(d = fdopendir(fd))) {
			close(fd);
			continue;
		}
		for (unsigned seen = 0; r && seen < SITE_ENTRIES_MAX && (e = readdir(d)); seen++)
			if (!strncmp(e->d_name, want, strlen(want)) && strstr(e->d_name, ".so") &&
			    snprintf(path, len, "/%s/%s", dir, e->d_name) < (int)len)
				r = 0;
		closedir(d);
	}
	vt_tfs_close(&t);
	return r;
}

int vt_python_installed_in_root(pid_t pid, char *module, size_t len, int *module_fd)
{
	char path[PATH_MAX];
	struct vt_tfs t;
	unsigned minor;
	int fd;

	if (version_minor(pid, &minor) || installed_module(pid, minor, path, sizeof(path)) || vt_tfs_open(&t, pid))
		return -ENOENT;
	fd = vt_tfs_openat(&t, t.root, path + 1, O_RDONLY, 0);
	vt_tfs_close(&t);
	if (fd < 0)
		return -ENOENT;
	/* the path the kernel will resolve names the file opened above */
	if (vt_tfs_root_path_of(pid, fd, path, module, len)) {
		close(fd);
		return -ENOENT;
	}
	*module_fd = fd;
	return 0;
}

/* The module to load: the package installed for pid's Python in its root,
 * else, when pid shares this root, the one built here for its version. */
static int module_for(pid_t pid, char *path, size_t len)
{
	char want[48];
	unsigned minor;

	if (version_minor(pid, &minor))
		return -ENOENT;
	if (!installed_module(pid, minor, path, len))
		return strpbrk(path, "'\\\n") ? -EINVAL : 0;
	snprintf(want, sizeof(want), "/vmtrace.cpython-3%u-", minor);
	if (vt_tfs_same_root(pid) && !vt_python_ext_find(path, len) && strstr(path, want) &&
	    !strpbrk(path, "'\\\n"))
		return 0;
	return -ENOENT;
}

/* Through PEP 768 (3.14 and later): 1 loaded, -ENOTSUP when the runtime
 * offers no such way, or -errno with the note. */
static int remote_exec(pid_t pid, const char *source, const char *module, char *note, size_t len)
{
	struct vt_py_remote rx;
	long waited_ms;
	int r = vt_py_remote_exec(&rx, pid, source, note, len);

	if (!r) {
		r = vt_provider_wait_ready(pid, provider_module, LOAD_MS, &waited_ms);
		if (r)
			snprintf(note, len, "CPython %d took the remote script but has not imported vmtrace within "
				 "%d ms (%s; its main thread runs no Python code, or the import failed; import vmtrace at its start loads it)", (int)pid,
				 LOAD_MS, module);
		else
			snprintf(note, len, "vmtrace's CPython extension loaded into pid %d (%s; by its remote "
				 "execution, PEP 768: no thread stopped; loaded %ld ms later)", (int)pid,
				 module, waited_ms);
	}
	vt_py_remote_done(&rx, !r);
	return r ? r : 1;
}

int vt_python_load_provider(pid_t pid, const struct vt_usdt_list *probes, bool asked, char *note,
			    size_t len)
{
	char module[PATH_MAX], source[PATH_MAX + 512], script[PATH_MAX + 640];
	uint64_t addr;
	long stop_us, waited_ms;
	int r;

	(void)probes; /* found by its symbols, loaded whether asked or not */
	(void)asked;
	if (vt_proc_symbol_in(pid, vt_python_modules, python_queue.queue, &addr))
		return 0; /* no CPython */
	if (module_for(pid, module, sizeof(module))) {
		snprintf(note, len, "no vmtrace package for the Python of pid %d in its root's site directories, and "
			 "none built here for it (pip install vmtrace-VERSION.tar.gz in its image)", (int)pid);
		return -ENOENT;
	}
	snprintf(source, sizeof(source), SOURCE, module);
	if ((r = remote_exec(pid, source, module, note, len)) != -ENOTSUP)
		return r;
	if ((r = one_line(source, script, sizeof(script))))
		return r;
	if ((r = vt_provider_queue(pid, &python_queue, script, &stop_us, note, len)))
		return r;
	if ((r = vt_provider_wait_ready(pid, provider_module, LOAD_MS, &waited_ms))) {
		snprintf(note, len, "CPython %d took the call but has not imported vmtrace within %d ms (%s; its "
			 "main thread runs no Python code, or the import failed; import vmtrace at its start loads it)", (int)pid, LOAD_MS,
			 module);
		return r;
	}
	snprintf(note, len, "vmtrace's CPython extension loaded into pid %d (%s; one thread stopped %.1f ms, "
		 "loaded %ld ms later)", (int)pid, module, stop_us / 1000.0, waited_ms);
	return 1;
}
