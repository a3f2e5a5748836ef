/*
 * sampling.c: set and read the allocation sampling period of a running
 * process (docs/sampling.md explains the design).
 *
 * Where the variable is. vmtrace_sample_period is an exported symbol of the
 * ELF module that holds the vmtrace probes (libvmtrace.so, or the host
 * executable when it links libvmtrace statically). The symbol table gives its
 * link-time address; the PT_LOAD segment holding that address gives its file
 * offset (vt_elf_symbol). /proc/PID/maps tells where each file page of the
 * module was mapped: a mapping at START of file offset OFF puts offset X at
 * START + X - OFF. The variable lives in .bss, which may extend past the
 * file's last page into anonymous memory; the segment's addresses keep going
 * there at the same distance, so the mapping of that segment with the highest
 * offset at or below X still gives the address.
 *
 * The module file is read through /proc/PID/map_files (or the process's own
 * root), so deleted and namespaced modules work. Writes go through
 * /proc/PID/mem, which needs ptrace rights, as attaching uprobes does.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "process/target_fs.h"
#include "runtimes/vmtrace/sampling.h"

#define PERIOD_SYMBOL "vmtrace_sample_period"
#define ARMED_SEMAPHORE_SYMBOL "vmtrace_sample__armed_semaphore"

struct mapping {
	uint64_t start, end, offset;
	unsigned long inode;
};

/* The module holding the vmtrace provider's probes. */
static const char *vmtrace_module(const struct vt_usdt_list *probes)
{
	const char *any = NULL;

	for (size_t i = 0; probes && i < probes->n; i++) {
		if (strcmp(probes->v[i].provider, "vmtrace") != 0)
			continue;
		if (strcmp(probes->v[i].name, "sample__armed") == 0)
			return probes->v[i].path;
		if (!any)
			any = probes->v[i].path;
	}
	return any;
}

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

static int locate(pid_t pid, const struct vt_usdt_list *probes, const char *symbol, uint64_t *addr)
{
	const char *module = vmtrace_module(probes);

	if (pid <= 0)
		return -ESRCH;
	if (!module)
		return -ENOENT;
	return vt_proc_symbol_address(pid, module, symbol, addr);
}

int vt_provider_write_u64_at(pid_t pid, const struct vt_usdt_list *probes, const char *symbol,
			     uint64_t offset, uint64_t value)
{
	uint64_t addr;
	int err = locate(pid, probes, symbol, &addr);

	return err ? err : proc_mem_io(pid, addr + offset, &value, sizeof(value), 1);
}

int vt_provider_write_u64(pid_t pid, const struct vt_usdt_list *probes, const char *symbol,
			  uint64_t value)
{
	return vt_provider_write_u64_at(pid, probes, symbol, 0, value);
}

int vt_sample_set_period(pid_t pid, const struct vt_usdt_list *probes, uint64_t period)
{
	uint64_t addr;
	int err = locate(pid, probes, PERIOD_SYMBOL, &addr);

	if (err)
		return err;
	/* callers write before attaching sample__armed: until then the
	 * provider ignores the variable, so it never sees a half-written one */
	return proc_mem_io(pid, addr, &period, sizeof(period), 1);
}

int vt_sample_get_period(pid_t pid, const struct vt_usdt_list *probes, uint64_t *period)
{
	uint64_t addr;
	int err = locate(pid, probes, PERIOD_SYMBOL, &addr);

	if (err)
		return err;
	return proc_mem_io(pid, addr, period, sizeof(*period), 0);
}

int vt_sample_armed_count(pid_t pid, const struct vt_usdt_list *probes, uint16_t *count)
{
	uint64_t addr;
	int err = locate(pid, probes, ARMED_SEMAPHORE_SYMBOL, &addr);

	if (err)
		return err;
	return proc_mem_io(pid, addr, count, sizeof(*count), 0);
}

int vt_provider_read(pid_t pid, const struct vt_usdt_list *probes, const char *symbol, void *buf,
		     size_t len)
{
	uint64_t addr;
	int err = locate(pid, probes, symbol, &addr);

	return err ? err : proc_mem_io(pid, addr, buf, len, 0);
}

int vt_provider_locate(pid_t pid, const struct vt_usdt_list *probes, const char *symbol, uint64_t *addr)
{
	return locate(pid, probes, symbol, addr);
}

int vt_provider_read_at(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	return proc_mem_io(pid, addr, buf, len, 0);
}
