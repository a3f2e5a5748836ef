/*
 * usdt_notes.c: find the USDT probes of an ELF file or of a running process.
 *
 * How USDT probes are described. `sys/sdt.h` (systemtap) puts each probe
 * site in the binary as a `nop` and records it in one ELF note of the
 * `.note.stapsdt` section: owner "stapsdt", type 3, and a descriptor of
 *
 *	u64 pc          the address of the nop, as linked
 *	u64 base        the address of the .stapsdt.base section, as linked
 *	u64 semaphore   the address of the probe's semaphore (0: none)
 *	char provider[] NUL-terminated
 *	char name[]     NUL-terminated
 *	char args[]     NUL-terminated, e.g. "8@%rdi -4@$1 8@16(%rsp)"
 *
 * Each argument spec is SIZE@OPERAND: the size in bytes, negative when
 * signed, then an assembler operand saying where the value lives when the
 * nop runs (a register, a constant, or memory relative to a register).
 *
 * base exists for prelinked binaries: if a tool moved the file's sections
 * after the notes were written, the .stapsdt.base section's address in the
 * file no longer equals the recorded base, and pc must be shifted by the
 * same amount. Semaphores are not shifted (libbpf and systemtap do the same).
 *
 * The semaphore is a u16 in the module's data that the kernel increments
 * for every uprobe attached with a reference counter (and decrements when
 * the uprobe goes away, also when the tracer dies); the program tests it to
 * skip computing arguments nobody reads.
 *
 * Notes come from files we do not trust (anything mapped into a process),
 * so the parser checks every size against what is left of the section
 * before reading, every string ends inside the descriptor (memchr), and the
 * arithmetic is done in 64 bits so 32-bit sizes cannot wrap.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "process/target_fs.h"
#include "process/usdt_notes.h"

#define STAPSDT_NOTE_TYPE 3
#define STAPSDT_OWNER "stapsdt"
#define NOTE_HEADER_SIZE 12     /* namesz, descsz, type: three u32 */
#define STAPSDT_ADDRS_SIZE 24   /* pc, base, semaphore: three u64 */

static uint32_t get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const unsigned char *p)
{
	return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

static uint64_t align4(uint64_t v)
{
	return (v + 3) & ~(uint64_t)3;
}

static void probe_free(struct vt_usdt_probe *p)
{
	free(p->provider);
	free(p->name);
	free(p->args);
	free(p->path);
}

void vt_usdt_list_free(struct vt_usdt_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		probe_free(&l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

void vt_usdt_list_drop(struct vt_usdt_list *l, bool (*of_module)(const char *path))
{
	size_t kept = 0;

	for (size_t i = 0; i < l->n; i++) {
		if (of_module(l->v[i].path))
			probe_free(&l->v[i]);
		else
			l->v[kept++] = l->v[i];
	}
	l->n = kept;
}

/* Drop the entries appended after the first `keep`. */
static void list_truncate(struct vt_usdt_list *l, size_t keep)
{
	while (l->n > keep)
		probe_free(&l->v[--l->n]);
}

static int list_grow(struct vt_usdt_list *l)
{
	if (l->n < l->cap)
		return 0;
	size_t cap = l->cap ? l->cap * 2 : 16;
	struct vt_usdt_probe *v = realloc(l->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	l->v = v;
	l->cap = cap;
	return 0;
}

bool vt_usdt_has_provider(const struct vt_usdt_list *l, const char *provider)
{
	for (size_t i = 0; l && i < l->n; i++)
		if (l->v[i].provider && strcmp(l->v[i].provider, provider) == 0)
			return true;
	return false;
}

int vt_usdt_list_take(struct vt_usdt_list *l, struct vt_usdt_probe *p)
{
	int err = list_grow(l);

	if (err)
		return err;
	l->v[l->n++] = *p;
	memset(p, 0, sizeof(*p));
	return 0;
}

/* Number of whitespace-separated argument specs; -1 if one is not SIZE@OPERAND. */
static int count_args(const char *args)
{
	int n = 0;
	const char *p = args;

	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			return n;
		const char *tok = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
		const char *at = memchr(tok, '@', (size_t)(p - tok));
		if (!at || at == tok || at + 1 == p)
			return -1;
		n++;
	}
}

/* One stapsdt descriptor of desc_len bytes -> probe appended to out. */
static int parse_stapsdt_desc(const unsigned char *desc, uint64_t desc_len,
			      const char *path, struct vt_usdt_list *out)
{
	if (desc_len < STAPSDT_ADDRS_SIZE)
		return -EINVAL;

	const char *strs = (const char *)desc + STAPSDT_ADDRS_SIZE;
	size_t left = (size_t)(desc_len - STAPSDT_ADDRS_SIZE);
	const char *provider, *name, *args, *end;

	provider = strs;
	end = memchr(provider, '\0', left);
	if (!end || end == provider)
		return -EINVAL;
	left -= (size_t)(end + 1 - provider);
	name = end + 1;
	end = memchr(name, '\0', left);
	if (!end || end == name)
		return -EINVAL;
	left -= (size_t)(end + 1 - name);
	args = end + 1;
	end = memchr(args, '\0', left);
	if (!end)
		return -EINVAL;

	int nargs = count_args(args);
	if (nargs < 0)
		return -EINVAL;

	int err = list_grow(out);
	if (err)
		return err;
	struct vt_usdt_probe *p = &out->v[out->n];
	memset(p, 0, sizeof(*p));
	p->pc = get_u64(desc);
	p->base = get_u64(desc + 8);
	p->semaphore = get_u64(desc + 16);
	p->nargs = nargs;
	p->provider = strdup(provider);
	p->name = strdup(name);
	p->args = strdup(args);
	p->path = strdup(path ? path : "");
	if (!p->provider || !p->name || !p->args || !p->path) {
		probe_free(p);
		return -ENOMEM;
	}
	out->n++;
	return 0;
}

int vt_usdt_parse_notes(const void *data, size_t len, const char *path, struct vt_usdt_list *out)
{
	const unsigned char *base = data;
	uint64_t off = 0;

	if (!data && len)
		return -EINVAL;
	while (off < len) {
		if (len - off < NOTE_HEADER_SIZE)
			return -EINVAL;
		const unsigned char *hdr = base + off;
		uint64_t namesz = get_u32(hdr), descsz = get_u32(hdr + 4);
		uint32_t type = get_u32(hdr + 8);
		uint64_t name_off = off + NOTE_HEADER_SIZE;
		if (namesz > len - name_off)
			return -EINVAL;
		uint64_t desc_off = name_off + align4(namesz);
		if (desc_off > len || descsz > len - desc_off)
			return -EINVAL;

		/* Other owners may share the section: not ours, not an error. */
		if (type == STAPSDT_NOTE_TYPE && namesz == sizeof(STAPSDT_OWNER) &&
		    memcmp(base + name_off, STAPSDT_OWNER, sizeof(STAPSDT_OWNER)) == 0) {
			int err = parse_stapsdt_desc(base + desc_off, descsz, path, out);
			if (err)
				return err;
		}
		/* The last note's padding may be cut off by the section's end. */
		off = desc_off + align4(descsz);
	}
	return 0;
}

/* ---- ELF files ---- */

static int elf_ready(void)
{
	static int ok = -1;
	if (ok < 0)
		ok = elf_version(EV_CURRENT) != EV_NONE;
	return ok ? 0 : -ENOSYS;
}

/* libelf quietly shows a file whose header tables lie past its end as
 * having no sections; for us that file is malformed, not empty. */
static int tables_inside(Elf *elf, uint64_t size)
{
	GElf_Ehdr eh;
	size_t shnum, phnum;

	if (!gelf_getehdr(elf, &eh) || elf_getshdrnum(elf, &shnum) != 0 ||
	    elf_getphdrnum(elf, &phnum) != 0)
		return 0;
	if (eh.e_shoff && (eh.e_shoff > size || (uint64_t)shnum * eh.e_shentsize > size - eh.e_shoff))
		return 0;
	if (eh.e_phoff && (eh.e_phoff > size || (uint64_t)phnum * eh.e_phentsize > size - eh.e_phoff))
		return 0;
	return 1;
}

/* Open fd as a 64-bit little-endian ELF file (the parser's format). */
static int elf_open_fd(int fd, Elf **out)
{
	struct stat st;
	int err = elf_ready();

	if (err)
		return err;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENOEXEC;
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return -ENOEXEC;
	if (elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64) {
		elf_end(elf);
		return -ENOEXEC;
	}
	const char *ident = elf_getident(elf, NULL);
	if (!ident || ident[EI_DATA] != ELFDATA2LSB || !tables_inside(elf, (uint64_t)st.st_size)) {
		elf_end(elf);
		return -ENOEXEC;
	}
	*out = elf;
	return 0;
}

/* Every stapsdt note of the open ELF file, paths set to `path`. */
static int read_elf_notes(Elf *elf, const char *path, struct vt_usdt_list *out)
{
	size_t shstrndx, first = out->n;
	uint64_t stapsdt_base = 0;
	int have_base = 0, err = 0;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return -ENOEXEC;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh)) {
			err = -ENOEXEC;
			break;
		}
		const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name) {
			err = -ENOEXEC;
			break;
		}
		if (strcmp(name, ".stapsdt.base") == 0) {
			stapsdt_base = sh.sh_addr;
			have_base = 1;
			continue;
		}
		if (sh.sh_type != SHT_NOTE || strcmp(name, ".note.stapsdt") != 0)
			continue;
		Elf_Data *d = elf_rawdata(scn, NULL);
		if (!d) {
			err = -ENOEXEC;
			break;
		}
		err = vt_usdt_parse_notes(d->d_buf, d->d_size, path, out);
		if (err) {
			if (err == -EINVAL)
				err = -ENOEXEC;
			break;
		}
	}
	if (err) {
		list_truncate(out, first);
		return err;
	}
	/* Prelink moved the file: shift the sites by as much as .stapsdt.base moved. */
	for (size_t i = first; have_base && i < out->n; i++)
		if (out->v[i].base)
			out->v[i].pc += stapsdt_base - out->v[i].base;
	return 0;
}

static int read_fd(int fd, const char *path, struct vt_usdt_list *out)
{
	Elf *elf;
	int err = elf_open_fd(fd, &elf);

	if (err)
		return err;
	err = read_elf_notes(elf, path, out);
	elf_end(elf);
	return err;
}

int vt_usdt_read_fd(int fd, const char *path, struct vt_usdt_list *out)
{
	return read_fd(fd, path, out);
}

int vt_usdt_read_file(const char *path, struct vt_usdt_list *out)
{
	int fd = vt_open_regular(path);
	if (fd < 0)
		return fd;
	int err = read_fd(fd, path, out);
	close(fd);
	return err;
}

/* The file offset of link-time address addr: through the PT_LOAD segment
 * holding it (an offset past p_filesz is .bss, still mapped right after the
 * segment's file pages), else through its section. */
static int addr_to_file_offset(Elf *elf, uint64_t addr, size_t shndx, uint64_t *off)
{
	size_t nph;

	if (elf_getphdrnum(elf, &nph) == 0) {
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(elf, (int)i, &ph))
				return -ENOEXEC;
			if (ph.p_type == PT_LOAD && addr >= ph.p_vaddr &&
			    addr - ph.p_vaddr < ph.p_memsz) {
				*off = addr - ph.p_vaddr + ph.p_offset;
				return 0;
			}
		}
	}
	GElf_Shdr sh;
	Elf_Scn *scn = elf_getscn(elf, shndx);
	if (!scn || !gelf_getshdr(scn, &sh) || addr < sh.sh_addr)
		return -ENOEXEC;
	*off = addr - sh.sh_addr + sh.sh_offset;
	return 0;
}

static int find_symbol(Elf *elf, const char *name, uint64_t *addr, uint64_t *file_offset)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			return -ENOEXEC;
		if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)
			continue;
		if (sh.sh_entsize == 0)
			return -ENOEXEC;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d)
			return -ENOEXEC;
		size_t nsyms = d->d_size / sh.sh_entsize;
		for (size_t i = 1; i < nsyms; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(d, (int)i, &sym))
				return -ENOEXEC;
			if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE)
				continue;
			const char *s = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!s || strcmp(s, name) != 0)
				continue;
			int err = addr_to_file_offset(elf, sym.st_value, sym.st_shndx, file_offset);
			if (err)
				return err;
			*addr = sym.st_value;
			return 0;
		}
	}
	return -ENOENT;
}

int vt_elf_symbol(const char *path, const char *name, uint64_t *addr, uint64_t *file_offset)
{
	Elf *elf;
	int fd = vt_open_regular(path);
	if (fd < 0)
		return fd;
	int err = elf_open_fd(fd, &elf);
	if (!err) {
		err = find_symbol(elf, name, addr, file_offset);
		elf_end(elf);
	}
	close(fd);
	return err;
}

/* ---- running processes ---- */

struct module_id {
	unsigned long dev_major, dev_minor, inode;
};

int vt_usdt_read_pid(pid_t pid, struct vt_usdt_list *out)
{
	char maps[64];
	struct module_id *seen = NULL;
	size_t nseen = 0, capseen = 0, first = out->n;
	char *line = NULL;
	size_t linecap = 0;
	int err = 0;

	if (pid <= 0)
		return -ESRCH;
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(maps, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;

	errno = 0;
	while (getline(&line, &linecap, f) > 0) {
		unsigned long start, end, off, major, minor, inode;
		char perms[8];
		int pathpos = 0;

		if (sscanf(line, "%lx-%lx %7s %lx %lx:%lx %lu %n", &start, &end, perms,
			   &off, &major, &minor, &inode, &pathpos) < 7 || pathpos == 0)
			continue;
		if (inode == 0)
			continue; /* anonymous, heap, stack, vdso */
		char *path = line + pathpos;
		path[strcspn(path, "\n")] = '\0';

		size_t i;
		for (i = 0; i < nseen; i++)
			if (seen[i].inode == inode && seen[i].dev_major == major &&
			    seen[i].dev_minor == minor)
				break;
		if (i < nseen)
			continue;
		if (nseen == capseen) {
			size_t cap = capseen ? capseen * 2 : 32;
			struct module_id *s = realloc(seen, cap * sizeof(*s));
			if (!s) {
				err = -ENOMEM;
				break;
			}
			seen = s;
			capseen = cap;
		}
		seen[nseen++] = (struct module_id){ major, minor, inode };

		int fd = vt_tfs_open_mapped(pid, start, end, path, inode);
		if (fd == -ENOENT)
			continue; /* gone since it was mapped: nothing to trace there */
		if (fd < 0) {
			err = fd;
			break;
		}
		/* the probes' path: one that reaches this file from here (a
		 * container's is below its root), else the one maps gives */
		char reach[PATH_MAX + 64];
		if (vt_tfs_reach_mapped(pid, start, end, path, inode, reach, sizeof(reach)))
			snprintf(reach, sizeof(reach), "%s", path);
		err = read_fd(fd, reach, out);
		close(fd);
		if (err == -ENOEXEC) {
			err = 0; /* mapped data that is not an ELF module (locale archive...) */
			continue;
		}
		if (err)
			break;
	}
	/* Another user's process: maps opens but reading it is refused. */
	if (!err && ferror(f))
		err = errno ? -errno : -EIO;
	/* A process that exited while we read leaves an empty maps file. */
	if (!err && nseen == 0 && kill(pid, 0) < 0 && errno == ESRCH)
		err = -ESRCH;
	if (err)
		list_truncate(out, first);
	free(line);
	free(seen);
	fclose(f);
	return err;
}
