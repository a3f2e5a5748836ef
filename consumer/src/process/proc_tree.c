/*
 * proc_tree.c: the processes below others (proc_tree.h).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "process/proc_tree.h"

struct proc {
	pid_t pid, ppid;
};

/* Fields of /proc/PID/stat after the command (which may hold anything,
 * ')' too): state is the first, ppid the second, starttime the 20th. */
static const char *after_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;
	size_t n;
	char *end;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	end = strrchr(buf, ')');
	return end ? end + 1 : NULL;
}

static int read_procs(struct proc **out, size_t *nout)
{
	DIR *d = opendir("/proc");
	struct proc *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		char buf[1024], *end;
		const char *rest;
		long pid = strtol(e->d_name, &end, 10), ppid;

		if (*end || pid <= 0 || !(rest = after_comm((pid_t)pid, buf, sizeof(buf))) ||
		    sscanf(rest, " %*c %ld", &ppid) != 1)
			continue;
		if (n == cap) {
			struct proc *nv = realloc(v, (cap = cap ? 2 * cap : 256) * sizeof(*v));

			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n++] = (struct proc){ (pid_t)pid, (pid_t)ppid };
	}
	closedir(d);
	*out = v;
	*nout = n;
	return 0;
}

static int has(const pid_t *v, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == pid)
			return 1;
	return 0;
}

int vt_proc_descendants(const pid_t *roots, size_t n, pid_t **out, size_t *nout)
{
	struct proc *procs;
	size_t np, found = 0;
	pid_t *v;
	int err = read_procs(&procs, &np);

	if (err)
		return err;
	v = malloc((np + 1) * sizeof(*v));
	if (!v) {
		free(procs);
		return -ENOMEM;
	}
	/* a child joins once its parent has: rounds until none joins */
	for (size_t added = 1; added;) {
		added = 0;
		for (size_t i = 0; i < np; i++) {
			pid_t p = procs[i].pid;

			if (has(roots, n, p) || has(v, found, p))
				continue;
			if (has(roots, n, procs[i].ppid) || has(v, found, procs[i].ppid)) {
				v[found++] = p;
				added++;
			}
		}
	}
	free(procs);
	*out = v;
	*nout = found;
	return 0;
}

int64_t vt_proc_age_ms(pid_t pid)
{
	char buf[1024];
	const char *rest = after_comm(pid, buf, sizeof(buf));
	unsigned long long start;
	struct timespec now;
	long hz = sysconf(_SC_CLK_TCK);

	/* starttime: the 22nd field of the line, the 20th after the command */
	if (!rest || hz <= 0 ||
	    sscanf(rest, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
		   &start) != 1 ||
	    clock_gettime(CLOCK_BOOTTIME, &now))
		return -1;
	return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 - (int64_t)(start * 1000 / (unsigned long long)hz);
}
