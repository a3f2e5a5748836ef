/*
 * follow_env.c: the environment of a followed command (follow_env.h).
 */
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/exec_env.h"
#include "process/target_fs.h"
#include "runtimes/python_ext.h"
#include "runtimes/ruby_ext.h"
#include "session/follow_env.h"

#define RUBYLIB_ROOM 256

/* What a followed command's environment gets for the runtimes it may start:
 * set before the first exec, as no adapter is open yet to say it. */
void vt_follow_env(const char **env, size_t max, const char *runtime)
{
	static char rubylib[8192], pythonpath[8192];
	char ext[PATH_MAX];
	size_t n = 0;

	/* a Ruby it runs loads vmtrace's extension (ruby_ext.h), unless
	 * another runtime's path was asked for */
	if ((!runtime || strcmp(runtime, "vmtrace") == 0) && n < max &&
	    !vt_ruby_ext_find(ext, sizeof(ext)) &&
	    !vt_ruby_ext_rubylib(ext, rubylib, sizeof(rubylib) - RUBYLIB_ROOM)) {
		/* room for the longer value of a gem in a container's root
		 * (gem_in_root): Ruby skips empty entries of RUBYLIB */
		size_t len = strlen(rubylib);

		memset(rubylib + len, ':', RUBYLIB_ROOM);
		rubylib[len + RUBYLIB_ROOM] = '\0';
		env[n++] = rubylib;
	}

	/* --runtime vmtrace: a Python it runs imports vmtrace's extension */
	if (runtime && strcmp(runtime, "vmtrace") == 0 && n < max &&
	    !vt_python_ext_find(ext, sizeof(ext)) && !vt_python_ext_env(ext, pythonpath, sizeof(pythonpath)))
		env[n++] = pythonpath;
	if (!getenv("PYTHONTRACEMALLOC") && n < max)
		env[n++] = "PYTHONTRACEMALLOC=1"; /* CPython's objects (runtime_python.c) */
	if (!getenv("USE_ZEND_DTRACE") && n < max)
		env[n++] = "USE_ZEND_DTRACE=1";   /* PHP's function probes (runtime_php.c) */
	env[n] = NULL;
}

/* Whether the process pid can open, below its own root, a file of the
 * provider module among probes that is_module names: rel beside the module
 * (or rel_installed): else its runtime cannot load it. */
static bool provider_reachable(pid_t pid, const struct vt_usdt_list *probes, bool (*is_module)(const char *),
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

/* A Ruby below another root (a container's) that cannot reach vmtrace's
 * own extension, with vmtrace's gem installed for it there: its RUBYLIB
 * loads the gem's (rewritten in place, within the room follow_env left),
 * and the probes are the gem extension's instead. */
static bool gem_in_root(pid_t pid, struct vt_usdt_list *probes)
{
	static const char name[] = "RUBYLIB=";
	char ext[PATH_MAX + 64], rubylib[2 * PATH_MAX + 64];
	struct vt_usdt_list gem = { 0 };
	int fd;
	bool ok;

	if (vt_ruby_ext_in_root(pid, ext, sizeof(ext), &fd))
		return false;
	ok = !vt_usdt_read_fd(fd, ext, &gem) && gem.n > 0;
	close(fd);
	/* the entry as for vmtrace's own, the gem named as the process sees it */
	ok = ok && !vt_ruby_ext_rubylib(vt_tfs_maps_path(pid, ext), rubylib, sizeof(rubylib)) &&
	     !vt_exec_env_put(pid, "RUBYLIB", rubylib + sizeof(name) - 1);
	if (ok) {
		vt_usdt_list_drop(probes, vt_ruby_ext_is);
		for (size_t i = 0; i < gem.n; i++)
			if (vt_usdt_list_take(probes, &gem.v[i]))
				ok = false;
	}
	vt_usdt_list_free(&gem);
	return ok;
}

/* The process taken at its exec keeps what its runtime uses of what
 * follow_env put into the environment; the rest is as the command had it
 * (exec_env.h), so the program sees its own environment. */
void vt_give_back_env(pid_t pid, const char *runtime, struct vt_usdt_list *probes)
{
	static const char *const names[] = { "RUBYLIB", "PYTHONPATH", "PYTHONTRACEMALLOC",
					     "USE_ZEND_DTRACE" };
	bool ours = strcmp(runtime, "vmtrace") == 0;
	bool used[] = { ours && (provider_reachable(pid, probes, vt_ruby_ext_is,
						    "vmtrace_preload/rubygems.rb", NULL) ||
				 gem_in_root(pid, probes)),
			ours && provider_reachable(pid, probes, vt_python_ext_is,
						   "autoload/sitecustomize.py",
						   "vmtrace_autoload/autoload/sitecustomize.py"),
			strcmp(runtime, "python") == 0, strcmp(runtime, "php") == 0 };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!used[i])
			vt_exec_env_put(pid, names[i], getenv(names[i]));
}
