/*
 * ruby_inside.c: vmtrace's Ruby extension as the session and the vmtrace
 * adapter use it (runtime.h, struct vt_inside): given to a Ruby vmtrace
 * starts (RUBYLIB) or follows to (RUBYLIB, or the gem in its root).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/exec_env.h"
#include "process/target_fs.h"
#include "runtimes/provider_find.h"
#include "runtimes/ruby/ruby_ext.h"

/* room left in a followed command's RUBYLIB for a gem's longer path */
#define RUBYLIB_ROOM 256

/* RUBYLIB that loads the extension at s->path into a command vmtrace starts. */
static int ruby_load_env(const struct vt_inside_spawn *s, char *buf, size_t len, const char **env,
			 const char **note, char *err, size_t errlen)
{
	int r = vt_ruby_ext_rubylib(s->path, buf, len);

	if (r) {
		snprintf(err, errlen, "cannot load vmtrace's Ruby extension from %s into the "
			 "command (RUBYLIB): %s; --runtime ruby traces it through Ruby's own probes",
			 s->path, strerror(-r));
		return r;
	}
	env[0] = buf;
	*note = "loading vmtrace's Ruby extension (RUBYLIB, before RubyGems): allocations counted "
		"inside Ruby";
	return 0;
}

const struct vt_inside vt_ruby_inside = {
	.what = "vmtrace's Ruby extension",
	.source = "provider/ruby",
	.is = vt_ruby_ext_is,
	.find = vt_ruby_ext_find,
	.load_env = ruby_load_env,
	.holds = true,
	.always_on_samples = true,
	/* each free is a hook call of its own, as dear as an allocation */
	.frees_dear = true,
	.hint = "hint: a Ruby that loads vmtrace's extension (ruby -rvmtrace, RUBYOPT=-rvmtrace, or "
		"require \"vmtrace\") is traced inside itself, at a fraction of the cost of these probes",
	.list_line = "vmtrace's Ruby extension, counting inside Ruby (%s)",
};

/* A Ruby a followed command runs loads vmtrace's extension, unless another
 * runtime's path was asked for. */
size_t vt_ruby_follow_env(const char *asked, const char **env, size_t max)
{
	static char rubylib[8192];
	char ext[PATH_MAX];
	size_t len;

	if ((asked && strcmp(asked, "vmtrace") != 0) || max < 1 || vt_ruby_ext_find(ext, sizeof(ext)) ||
	    vt_ruby_ext_rubylib(ext, rubylib, sizeof(rubylib) - RUBYLIB_ROOM))
		return 0;
	/* room for the longer value of a gem in a container's root
	 * (gem_in_root): Ruby skips empty entries of RUBYLIB */
	len = strlen(rubylib);
	memset(rubylib + len, ':', RUBYLIB_ROOM);
	rubylib[len + RUBYLIB_ROOM] = '\0';
	env[0] = rubylib;
	return 1;
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

/* RUBYLIB stays for vmtrace's provider, when the Ruby reaches the
 * extension (or has the gem in its root). */
bool vt_ruby_follow_keeps(pid_t pid, const char *name, const char *chosen, struct vt_usdt_list *probes)
{
	(void)name;
	return strcmp(chosen, "vmtrace") == 0 &&
	       (vt_provider_reachable(pid, probes, vt_ruby_ext_is, "vmtrace_preload/rubygems.rb", NULL) ||
		gem_in_root(pid, probes));
}
