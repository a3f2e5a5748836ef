/*
 * python_inside.c: vmtrace's CPython extension as the session and the
 * vmtrace adapter use it (runtime.h, struct vt_inside): imported by a
 * CPython vmtrace starts or follows to (PYTHONPATH, a sitecustomize), this
 * root's build or, below a container's root, the package pip installed
 * there.
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/exec_env.h"
#include "process/target_fs.h"
#include "runtimes/provider_find.h"
#include "runtimes/python/python_ext.h"
#include "runtimes/python/python_load.h"

/* PYTHONPATH that imports the extension at s->path into a command vmtrace starts. */
static int python_load_env(const struct vt_inside_spawn *s, char *buf, size_t len, const char **env,
			   const char **note, char *err, size_t errlen)
{
	int r = vt_python_ext_env(s->path, buf, len);

	if (r) {
		snprintf(err, errlen, "cannot load vmtrace's CPython extension from %s into "
			 "the command (PYTHONPATH): %s", s->path, strerror(-r));
		return r;
	}
	env[0] = buf;
	*note = "loading vmtrace's CPython extension (PYTHONPATH, a sitecustomize that "
		"imports vmtrace): objects and bytes counted inside CPython by type, function "
		"and line (calls per function: --runtime python, in a CPython built with its "
		"function probes)";
	return 0;
}

static bool python_spawn_takes(const char *exe, const struct vt_usdt_list *probes)
{
	(void)probes; /* 3.13 and later have no allocation probes: the program says it */
	return vt_python_ext_program(exe);
}

const struct vt_inside vt_python_inside = {
	.what = "vmtrace's CPython extension",
	.source = "provider/python",
	.is = vt_python_ext_is,
	.find = vt_python_ext_find,
	.spawn_takes = python_spawn_takes,
	.load_env = python_load_env,
	.holds = true,
	.always_on_samples = true,
	/* the extension must remember each block's size to tell a free's */
	.frees_dear = true,
	.hint = "hint: a CPython that imports vmtrace's extension (import vmtrace, with its directory "
		"on PYTHONPATH) is traced inside itself: bytes by function, line and stack, at a "
		"fraction of the cost of these probes",
};

/* PYTHONPATH a followed command gets before its first exec: room that the
 * CPython it starts gets the extension's entry in (at_exec, follow_keeps),
 * and that any other program gets back as the command had it; and, for
 * CPython's own probes, its objects traced (tracemalloc: runtime_python.c). */
#define PYTHONPATH_ROOM 1024
#define PYTHONPATH_IS "PYTHONPATH="
#define VALUE_OF(entry) ((entry) + sizeof(PYTHONPATH_IS) - 1)
static char host_pythonpath[8192]; /* this root's extension's entry, "" when none */

size_t vt_python_follow_env(const char *asked, const char **env, size_t max)
{
	static char room[sizeof(PYTHONPATH_IS) + PYTHONPATH_ROOM + sizeof(host_pythonpath)];
	char ext[PATH_MAX];
	size_t n = 0;

	host_pythonpath[0] = '\0';
	if ((!asked || strcmp(asked, "vmtrace") == 0) && n < max) {
		/* --runtime vmtrace: a CPython of this root imports this extension */
		if (asked && !vt_python_ext_find(ext, sizeof(ext)) &&
		    vt_python_ext_env(ext, host_pythonpath, sizeof(host_pythonpath)))
			host_pythonpath[0] = '\0';
		/* a value no program sees: the one it gets is written over it */
		snprintf(room, sizeof(room), PYTHONPATH_IS "%s", host_pythonpath[0] ? VALUE_OF(host_pythonpath) : "");
		size_t len = strlen(room);

		memset(room + len, ':', PYTHONPATH_ROOM);
		room[len + PYTHONPATH_ROOM] = '\0';
		env[n++] = room;
	}
	if (!getenv("PYTHONTRACEMALLOC") && n < max)
		env[n++] = "PYTHONTRACEMALLOC=1";
	return n;
}

/* the module of probes' vmtrace probes placed by at_exec below another root */
static bool in_another_root(pid_t pid, const struct vt_usdt_list *probes)
{
	char prefix[32];

	snprintf(prefix, sizeof(prefix), "/proc/%d/root/", (int)pid);
	for (size_t i = 0; i < probes->n; i++)
		if (strcmp(probes->v[i].provider, "vmtrace") == 0 && vt_python_ext_is(probes->v[i].path) &&
		    strncmp(probes->v[i].path, prefix, strlen(prefix)) == 0)
			return true;
	return false;
}

bool vt_python_follow_keeps(pid_t pid, const char *name, const char *chosen, struct vt_usdt_list *probes)
{
	if (strcmp(name, "PYTHONTRACEMALLOC") == 0)
		return strcmp(chosen, "python") == 0;
	if (strcmp(chosen, "vmtrace") != 0)
		return false;
	/* the package in its root: at_exec wrote its entry already */
	if (in_another_root(pid, probes))
		return true;
	/* this root's extension, reachable from the process's root: its entry,
	 * without the room */
	return host_pythonpath[0] &&
	       vt_provider_reachable(pid, probes, vt_python_ext_is, "autoload/sitecustomize.py",
				     "vmtrace_autoload/autoload/sitecustomize.py") &&
	       !vt_exec_env_put(pid, "PYTHONPATH", VALUE_OF(host_pythonpath));
}

/* A CPython a followed command starts, stopped at its exec: with --runtime
 * vmtrace, this root's extension (its probes; its entry by follow_keeps);
 * below another root (a container's) that holds vmtrace's package
 * pip-installed for it, unless another runtime was asked for, that
 * package: its probes, and its autoload first on the process's PYTHONPATH. */
void vt_python_at_exec(pid_t pid, const char *exe, const struct vt_exec_opts *o, struct vt_usdt_list *probes)
{
	char module[PATH_MAX + 32], value[PATH_MAX + 64], dir[PATH_MAX];
	const char *old = getenv("PYTHONPATH");
	struct vt_usdt_list pkg = { 0 };
	int fd;

	/* not asked for, no CPython, or vmtrace's probes there already */
	if ((o->asked && strcmp(o->asked, "vmtrace") != 0) || !vt_python_ext_program(exe) ||
	    vt_usdt_has_provider(probes, "vmtrace"))
		return;
	if (vt_tfs_same_root(pid)) {
		if (o->asked && !vt_python_ext_find(module, sizeof(module)))
			vt_usdt_read_file(module, probes);
		return;
	}
	if (vt_python_installed_in_root(pid, module, sizeof(module), &fd))
		return;
	/* the entry as the process names the package's directory */
	snprintf(dir, sizeof(dir), "%s", vt_tfs_maps_path(pid, module));
	dirname(dir);
	if (!vt_usdt_read_fd(fd, module, &pkg) && pkg.n > 0 &&
	    snprintf(value, sizeof(value), "%s/vmtrace_autoload/autoload%s%s", dir, old && *old ? ":" : "",
		     old && *old ? old : "") < (int)sizeof(value) &&
	    !strpbrk(dir, ":") && !vt_exec_env_put(pid, "PYTHONPATH", value))
		for (size_t i = 0; i < pkg.n; i++)
			vt_usdt_list_take(probes, &pkg.v[i]);
	vt_usdt_list_free(&pkg);
	close(fd);
}
