/*
 * ruby_unprobed.c: what to say of a Ruby that has none of the probes
 * vmtrace reads: Debian builds Ruby 3.3 and 3.4 without USDT, and a Ruby
 * that never loaded vmtrace's extension has no vmtrace probes either.
 * Known by the libruby it maps (libruby-3.3.so.3.3.8, libruby.so.3.4),
 * else by its program's name; /proc/PID/maps is the target's to shape, so
 * only names are taken from it, each line bounded.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "runtimes/runtime.h"

/* The version in a libruby file name: "3.3" of libruby-3.3.so.3.3.8 or of
 * libruby.so.3.3.8; "" when it names none. */
static void libruby_version(const char *base, char *ver, size_t len)
{
	unsigned major, minor;

	ver[0] = '\0';
	if (sscanf(base, "libruby-%u.%u.so", &major, &minor) == 2 ||
	    sscanf(base, "libruby.so.%u.%u", &major, &minor) == 2)
		snprintf(ver, len, "%u.%u", major, minor);
}

/* 1 with the line in why when pid runs Ruby (its libruby mapped, or a
 * program called ruby*), else 0. */
int vt_ruby_unprobed(pid_t pid, char *why, size_t len)
{
	char path[64], line[4096 + 128], lib[256] = "", ver[16] = "", exe[4096];
	bool is_ruby = false;
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	while (f && !is_ruby && fgets(line, sizeof(line), f)) {
		char *name = strrchr(line, '/');

		if (!name || strncmp(name + 1, "libruby", 7) != 0)
			continue;
		name[1 + strcspn(name + 1, " \n")] = '\0';
		snprintf(lib, sizeof(lib), "%.200s", name + 1);
		libruby_version(lib, ver, sizeof(ver));
		is_ruby = true;
	}
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (!is_ruby && (n = readlink(path, exe, sizeof(exe) - 1)) > 0) {
		const char *base;

		exe[n] = '\0';
		base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
		is_ruby = strncmp(base, "ruby", 4) == 0;
		snprintf(lib, sizeof(lib), "%.200s", base);
	}
	if (!is_ruby)
		return 0;
	snprintf(why, len,
		 "pid %d runs Ruby%s%s (%s) built without USDT probes, and has not loaded vmtrace's "
		 "extension: install vmtrace's gem into that Ruby (gem install --local vmtrace.gem; "
		 "`make vmtrace_gem` builds it), start the program with RUBYOPT=-rvmtrace and record "
		 "it again", (int)pid, ver[0] ? " " : "", ver, lib);
	return 1;
}
