/*
 * python_interp.c: what the CPython adapter finds in the interpreter's
 * binary before it loads its BPF program (python_interp.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "process/elf_code.h"
#include "process/target_fs.h"
#include "runtimes/python/python_interp.h"

/* The 4 bytes at a symbol of the module: Py_Version, e.g. 0x030b02f0. */
static int read_u32_symbol(const char *path, const char *name, uint32_t *v)
{
	uint64_t addr, off;
	int err = vt_elf_symbol(path, name, &addr, &off);

	return err ? err : vt_elf_code_at(path, addr, (uint8_t *)v, sizeof(*v), &off);
}

bool vt_py_load_bias(const char *path, pid_t pid, uint64_t *bias)
{
	char maps[64], line[4096 + 128];
	uint8_t ehdr[18];
	uint64_t vaddr, off;
	bool found = false;
	FILE *f;

	if (vt_elf_first_vaddr(path, &vaddr))
		return false;
	if (!vt_elf_code_at(path, vaddr, ehdr, sizeof(ehdr), &off) && ehdr[16] == 2 /* ET_EXEC */) {
		*bias = 0;
		return true;
	}
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	f = fopen(maps, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long long start, end, offset;
		char perms[8];
		int n = 0;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &offset, &n) >= 4 &&
		    n && offset == 0 && strcmp(line + n, vt_tfs_maps_path(pid, path)) == 0) {
			*bias = start - vaddr;
			found = true;
		}
	}
	fclose(f);
	return found;
}

int vt_py_find_interp(const char *path, struct vt_py_interp *out, char *why, size_t whylen)
{
	uint32_t version = 0;
	uint64_t runtime, off, newref, hook;
	uint8_t code[64];

	if (read_u32_symbol(path, "Py_Version", &version) || (version >> 16) != 0x030b) {
		snprintf(why, whylen,
			 "objects unseen: not CPython 3.11 (Py_Version 0x%08x); functions keyed by name",
			 version);
		return -ENOTSUP;
	}
	if (vt_elf_symbol(path, "_PyRuntime", &runtime, &off) ||
	    vt_elf_symbol(path, "PyCode_Type", &out->code_type, &off) ||
	    vt_elf_symbol(path, "_Py_NewReference", &newref, &off) ||
	    vt_elf_code_at(path, newref, code, sizeof(code), &off) ||
	    vt_x86_call_after_jcc(code, sizeof(code), newref, &hook) ||
	    vt_elf_code_at(path, hook, code, 1, &out->hook_offset)) {
		snprintf(why, whylen,
			 "objects unseen: no tracemalloc hook found in _Py_NewReference of %s", path);
		return -ENOEXEC;
	}
	/* The hook begins by testing tracemalloc's flag (mov disp32(%rip),%eax;
	 * test; je): a uprobe on a rip-relative load is single-stepped out of
	 * line, a second trap per object. Probe the instruction after the je
	 * instead, reached only while tracing, with op still in %rdi. */
	if (!vt_elf_code_at(path, hook, code, 16, &off) && code[0] == 0x8b &&
	    (code[1] & 0xc7) == 0x05 && code[6] == 0x85 && code[7] == 0xc0) {
		size_t skip = code[8] == 0x74 ? 10 : (code[8] == 0x0f && code[9] == 0x84) ? 14 : 0;

		if (skip && !vt_elf_code_at(path, hook + skip, code, 1, &out->hook_offset))
			hook += skip;
	}
	out->runtime = runtime;
	out->hook = hook;
	return 0;
}

/* len bytes at addr of pid's memory: 0 or -1. */
static int read_target(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

int vt_py_check_code_type(pid_t pid, const struct vt_py_interp *in, uint64_t bias, char *why,
			  size_t whylen)
{
	uint64_t tp_name = 0;
	char name[8] = { 0 };

	/* PyTypeObject: ob_refcnt, ob_type, ob_size, tp_name */
	if (read_target(pid, in->code_type + bias + 24, &tp_name, sizeof(tp_name)) ||
	    read_target(pid, tp_name, name, 5) || memcmp(name, "code", 5) != 0) {
		snprintf(why, whylen, "PyCode_Type in pid %d is not the code type the binary names "
			 "(tp_name \"%.5s\")", (int)pid, name);
		return -ENOEXEC;
	}
	return 0;
}

int vt_py_frame_helper(const struct vt_usdt_list *pl, const char *provider, const char *path,
		       const char *probe, uint64_t *func_offset, uint64_t *sem_offset)
{
	enum { BEFORE = 128 };
	uint8_t code[BEFORE];
	uint64_t start, off;
	uint16_t sem;

	for (size_t i = 0; pl && i < pl->n; i++) {
		const struct vt_usdt_probe *u = &pl->v[i];

		if (!u->provider || strcmp(u->provider, provider) || !u->name ||
		    strcmp(u->name, probe) || strcmp(u->path, path) || !u->semaphore ||
		    u->pc < BEFORE)
			continue;
		if (vt_elf_code_at(path, u->pc - BEFORE, code, sizeof(code), &off) ||
		    vt_x86_func_reading_arg(code, BEFORE, u->pc - BEFORE, 32 /* f_code */, &start) ||
		    vt_elf_code_at(path, start, code, 1, func_offset) ||
		    vt_elf_code_at(path, u->semaphore, (uint8_t *)&sem, sizeof(sem), sem_offset))
			return -ENOEXEC;
		return 0;
	}
	return -ENOENT;
}

