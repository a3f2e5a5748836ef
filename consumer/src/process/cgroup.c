/*
 * cgroup.c: cgroups of processes (cgroup.h). Read from /proc and the
 * cgroup mounts, once per process at attach: a process that moves during
 * a recording keeps the cgroup it had then.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "process/cgroup.h"

int vt_cgroup_of(pid_t pid, char *path, size_t len)
{
	char file[64], line[4096];
	bool have_v1 = false;
	FILE *f;

	snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
	f = fopen(file, "r");
	if (!f)
		return -errno;
	snprintf(path, len, "/");
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ':'), *q = p ? strchr(p + 1, ':') : NULL;

		if (!q)
			continue;
		q[strcspn(q, "\n")] = '\0';
		q++;
		if (!strncmp(line, "0::", 3)) {
			if (strcmp(q, "/")) {
				snprintf(path, len, "%s", q);
				break;
			}
		} else if (!have_v1 && strcmp(q, "/")) {
			snprintf(path, len, "%s", q);
			have_v1 = true;
		}
	}
	fclose(f);
	return 0;
}

static size_t hex_run(const char *s)
{
	size_t n = 0;

	while (isxdigit((unsigned char)s[n]))
		n++;
	return n;
}

/* The container id of one path component, as the runtimes name their
 * cgroups: docker-ID.scope (Docker, systemd driver), cri-containerd-ID.scope,
 * crio-ID.scope (Kubernetes), libpod-ID.scope (Podman), or the bare ID
 * (cgroupfs drivers: /docker/ID, /kubepods/burstable/podUID/ID). An ID is
 * 64 hex digits in every one of them. */
static bool component_id(const char *c, size_t clen, char *id, size_t len)
{
	static const char *const prefixes[] = { "docker-", "cri-containerd-", "crio-", "libpod-", "" };

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t pl = strlen(prefixes[i]);

		if (clen < pl + 64 || strncmp(c, prefixes[i], pl))
			continue;
		const char *end = c + pl + 64;
		size_t rest = clen - pl - 64;

		if (hex_run(c + pl) >= 64 && (rest == 0 || (rest == 6 && !strncmp(end, ".scope", 6))) &&
		    !isxdigit((unsigned char)end[0])) {
			snprintf(id, len, "%.64s", c + pl);
			return true;
		}
	}
	return false;
}

void vt_container_id(const char *path, char *id, size_t len)
{
	const char *end = path + strlen(path);

	id[0] = '\0';
	/* the deepest container: a runtime may nest cgroups inside its own
	 * (systemd in a container: .../docker-ID.scope/system.slice/x.service) */
	while (end > path) {
		const char *start = end;

		while (start > path && start[-1] != '/')
			start--;
		if (component_id(start, (size_t)(end - start), id, len))
			return;
		end = start > path ? start - 1 : path;
	}
}

/* dir/cgroup.procs of the first mount (cgroup2 first) holding path. */
static FILE *open_procs(const char *path)
{
	char line[4096], file[PATH_MAX + 64];
	FILE *m, *f = NULL;

	if (!strncmp(path, "/sys/fs/cgroup/", 15)) {
		snprintf(file, sizeof(file), "%s/cgroup.procs", path);
		return fopen(file, "r");
	}
	for (int pass = 0; pass < 2 && !f; pass++) {
		m = fopen("/proc/mounts", "r");
		if (!m)
			return NULL;
		while (!f && fgets(line, sizeof(line), m)) {
			char dev[256], dir[PATH_MAX], type[64];

			if (sscanf(line, "%255s %4095s %63s", dev, dir, type) != 3)
				continue;
			if (strcmp(type, pass ? "cgroup" : "cgroup2"))
				continue;
			snprintf(file, sizeof(file), "%s%s%s/cgroup.procs", dir, *path == '/' ? "" : "/",
				 path);
			f = fopen(file, "r");
		}
		fclose(m);
	}
	if (!f)
		errno = ENOENT;
	return f;
}

int vt_cgroup_procs(const char *path, pid_t **pids, size_t *n)
{
	size_t cap = 0;
	long v;
	FILE *f = open_procs(path);

	*pids = NULL;
	*n = 0;
	if (!f)
		return -errno;
	while (fscanf(f, "%ld", &v) == 1) {
		if (*n == cap) {
			pid_t *np = realloc(*pids, (cap = cap ? cap * 2 : 16) * sizeof(*np));

			if (!np) {
				fclose(f);
				free(*pids);
				*pids = NULL;
				return -ENOMEM;
			}
			*pids = np;
		}
		(*pids)[(*n)++] = (pid_t)v;
	}
	fclose(f);
	return 0;
}
