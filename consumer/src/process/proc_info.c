/*
 * proc_info.c: what /proc says of a running process, and its memory
 * (proc_info.h).
 *
 * Where a symbol is. The symbol table gives its link-time address; the
 * PT_LOAD segment holding that address gives its file offset
 * (vt_elf_symbol). /proc/PID/maps tells where each file page of the module
 * was mapped: a mapping at START of file offset OFF puts offset X at
 * START + X - OFF. A variable in .bss may lie past the file's last page, in
 * anonymous memory; the segment's addresses keep going there at the same
 * distance, so the mapping of that segment with the highest offset at or
 * below X still gives the address.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/proc_info.h"
#include "process/target_fs.h"
#include "process/usdt_notes.h"

#define MODULES_MAX 256 /* files looked at for a symbol */

long vt_proc_status_field(pid_t pid, const char *field)
{
	char path[64], line[256];
	size_t n = strlen(field);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "re")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n)) {
			v = strtol(line + n, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

struct mapping {
	uint64_t start, end, offset;
	unsigned long inode;
};

/* Every mapping of `module` in pid; -ESRCH, or -ENOENT when none. */
static int module_mappings(pid_t pid, const char *module, struct mapping **out, size_t *n)
{
	char path[64], *line = NULL;
	size_t cap = 0, linecap = 0;
	struct mapping *v = NULL;
	int err = 0;

	*n = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (getline(&line, &linecap, f) > 0) {
		unsigned long start, end, off, major, minor, inode;
		char perms[8];
		int pathpos = 0;

		if (sscanf(line, "%lx-%lx %7s %lx %lx:%lx %lu %n", &start, &end, perms, &off,
			   &major, &minor, &inode, &pathpos) < 7 || pathpos == 0 || inode == 0)
			continue;
		char *p = line + pathpos;
		p[strcspn(p, "\n")] = '\0';
		if (strcmp(p, vt_tfs_maps_path(pid, module)) != 0)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 8;
			struct mapping *nv = realloc(v, cap * sizeof(*nv));
			if (!nv) {
				err = -ENOMEM;
				break;
			}
			v = nv;
		}
		v[(*n)++] = (struct mapping){ start, end, off, inode };
	}
	free(line);
	fclose(f);
	if (!err && *n == 0)
		err = kill(pid, 0) < 0 && errno == ESRCH ? -ESRCH : -ENOENT;
	if (err) {
		free(v);
		return err;
	}
	*out = v;
	return 0;
}

int vt_proc_symbol_address(pid_t pid, const char *module, const char *name, uint64_t *addr)
{
	struct mapping *maps = NULL;
	size_t n;
	char file[PATH_MAX + 64];
	uint64_t link_addr, off;

	if (pid <= 0)
		return -ESRCH;
	int err = module_mappings(pid, module, &maps, &n);
	if (err)
		return err;
	int fd = vt_tfs_open_mapped(pid, (unsigned long)maps[0].start, (unsigned long)maps[0].end, module,
				    maps[0].inode);
	if (fd < 0) {
		err = fd;
	} else {
		snprintf(file, sizeof(file), "/proc/self/fd/%d", fd);
		err = vt_elf_symbol(file, name, &link_addr, &off);
		close(fd);
	}
	if (err) {
		free(maps);
		return err;
	}
	/* The mapping holding the offset, else (.bss past the file's end) the
	 * last mapping of the module below it. */
	const struct mapping *best = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct mapping *m = &maps[i];
		if (m->offset > off)
			continue;
		if (off - m->offset < m->end - m->start) {
			best = m;
			break;
		}
		if (!best || m->offset > best->offset ||
		    (m->offset == best->offset && m->start > best->start))
			best = m;
	}
	if (best)
		*addr = best->start + (off - best->offset);
	free(maps);
	return best ? 0 : -ENOENT;
}

/* Whether path's file name starts with one of prefixes. */
static int named(const char *path, const char *const *prefixes)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (; *prefixes; prefixes++)
		if (!strncmp(base, *prefixes, strlen(*prefixes)))
			return 1;
	return 0;
}

/* Each distinct file pid maps whose name starts with one of prefixes, in
 * maps order, at most max: their paths (freed by the caller), their number
 * or -errno. */
static int modules_named(pid_t pid, const char *const *prefixes, char **out, int max)
{
	char file[64], *line = NULL;
	size_t cap = 0;
	int n = 0;
	FILE *f;

	snprintf(file, sizeof(file), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(file, "re")))
		return errno == ENOENT ? -ESRCH : -errno;
	while (n < max && getline(&line, &cap, f) > 0) {
		char *path = strchr(line, '/');
		int seen = 0;

		if (!path)
			continue;
		path[strcspn(path, "\n")] = '\0';
		for (int i = 0; i < n && !seen; i++)
			seen = !strcmp(out[i], path);
		if (!seen && named(path, prefixes) && (out[n] = strdup(path)))
			n++;
	}
	free(line);
	fclose(f);
	return n;
}

int vt_proc_symbol_in(pid_t pid, const char *const *prefixes, const char *name, uint64_t *addr)
{
	char *paths[MODULES_MAX];
	int n = modules_named(pid, prefixes, paths, MODULES_MAX), r = n < 0 ? n : -ENOENT;

	for (int i = 0; i < n; i++) {
		if (r)
			r = vt_proc_symbol_address(pid, paths[i], name, addr) ? -ENOENT : 0;
		free(paths[i]);
	}
	return r;
}

int vt_proc_module_named(pid_t pid, const char *const *prefixes, char *path, size_t len)
{
	char *paths[1];
	int n = modules_named(pid, prefixes, paths, 1);

	if (n <= 0)
		return n ? n : -ENOENT;
	n = snprintf(path, len, "%s", paths[0]) < (int)len ? 0 : -ENAMETOOLONG;
	free(paths[0]);
	return n;
}

static int proc_mem_io(pid_t pid, uint64_t addr, void *buf, size_t len, int write_it)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	int fd = open(path, (write_it ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	ssize_t r = write_it ? pwrite(fd, buf, len, (off_t)addr) : pread(fd, buf, len, (off_t)addr);
	int err = r == (ssize_t)len ? 0 : r < 0 ? -errno : -EIO;
	close(fd);
	/* a process gone between maps and mem reads as an I/O error */
	if (err && kill(pid, 0) < 0 && errno == ESRCH)
		err = -ESRCH;
	return err;
}

int vt_proc_mem_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	return proc_mem_io(pid, addr, buf, len, 0);
}

int vt_proc_mem_write(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	return proc_mem_io(pid, addr, (void *)buf, len, 1);
}
