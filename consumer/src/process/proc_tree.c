/*
 * proc_tree.c: the processes below others (proc_tree.h).
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
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

/* Whether the kernel lists each thread's children (CONFIG_PROC_CHILDREN):
 * then a tree is read from its roots down, not from every process. */
static bool children_files(void)
{
	static int have = -1;
	char path[64];

	if (have < 0) {
		snprintf(path, sizeof(path), "/proc/self/task/%ld/children", (long)syscall(SYS_gettid));
		have = access(path, R_OK) == 0;
	}
	return have;
}

/* Append the children of every thread of pid to v (cap *cap), their number
 * in *n. 0, or -ENOMEM; a process gone meanwhile has none. */
static int add_children(pid_t pid, pid_t **v, size_t *n, size_t *cap)
{
	char path[320];
	struct dirent *e;
	DIR *d;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;
	while (!err && (e = readdir(d))) {
		long child;
		FILE *f;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/children", (int)pid, e->d_name);
		f = fopen(path, "re");
		while (f && !err && fscanf(f, "%ld", &child) == 1) {
			if (*n == *cap) {
				pid_t *nv = realloc(*v, (*cap = *cap ? 2 * *cap : 64) * sizeof(**v));

				if (!nv) {
					err = -ENOMEM;
					break;
				}
				*v = nv;
			}
			(*v)[(*n)++] = (pid_t)child;
		}
		if (f)
			fclose(f);
	}
	closedir(d);
	return err;
}

/* From the roots down, by the children files: each process once (a tree). */
static int descendants_by_children(const pid_t *roots, size_t n, pid_t **out, size_t *nout)
{
	pid_t *v = NULL;
	size_t found = 0, cap = 0;
	int err = 0;

	for (size_t i = 0; !err && i < n; i++)
		err = add_children(roots[i], &v, &found, &cap);
	/* v grows behind i: each found process's children join at the end */
	for (size_t i = 0; !err && i < found; i++)
		err = add_children(v[i], &v, &found, &cap);
	if (err) {
		free(v);
		return err;
	}
	*out = v;
	*nout = found;
	return 0;
}

int vt_proc_descendants(const pid_t *roots, size_t n, pid_t **out, size_t *nout)
{
	struct proc *procs;
	size_t np, found = 0;
	pid_t *v;
	int err;

	if (children_files())
		return descendants_by_children(roots, n, out, nout);
	/* else every process's parent, from /proc/PID/stat */
	err = read_procs(&procs, &np);
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
