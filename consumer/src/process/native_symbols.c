/*
 * native_symbols.c: instruction pointers to function names
 * (native_symbols.h). A module's symbols are its STT_FUNC entries sorted
 * by address; an ip is turned into the module's link-time address through
 * the PT_LOAD segment that maps its file offset, then found by binary
 * search.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/native_symbols.h"
#include "process/target_fs.h"

struct sym {
	uint64_t addr, size;
	char *name;
};

struct module {
	char *path;
	struct sym *syms;
	size_t nsyms;
	GElf_Phdr *loads;
	size_t nloads;
};

struct mapping {
	uint64_t start, end, offset;
	struct module *mod;
};

struct vt_symbolizer {
	pid_t pid;
	struct mapping *maps;
	size_t nmaps;
	struct module **mods;
	size_t nmods;
};

struct vt_symbolizer *vt_symbolizer_new(pid_t pid)
{
	struct vt_symbolizer *s = calloc(1, sizeof(*s));

	if (s)
		s->pid = pid;
	return s;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The functions and PT_LOAD segments of the ELF file at path; an
 * unreadable file gives a module without symbols (named by offset). */
static void load_module(struct module *m)
{
	size_t cap = 0, nph;
	Elf_Scn *scn = NULL;
	int fd = vt_open_regular(m->path);
	Elf *e;

	if (fd < 0)
		return;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e && elf_getphdrnum(e, &nph) == 0 && (m->loads = calloc(nph ? nph : 1, sizeof(GElf_Phdr)))) {
		for (size_t i = 0; i < nph; i++)
			if (gelf_getphdr(e, (int)i, &m->loads[m->nloads]) &&
			    m->loads[m->nloads].p_type == PT_LOAD)
				m->nloads++;
	}
	while (e && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    !sym.st_value || !(name = elf_strptr(e, sh.sh_link, sym.st_name)) || !*name)
				continue;
			if (m->nsyms == cap) {
				size_t ncap = cap ? 2 * cap : 256;
				struct sym *v = realloc(m->syms, ncap * sizeof(*v));

				if (!v)
					break;
				m->syms = v;
				cap = ncap;
			}
			m->syms[m->nsyms].addr = sym.st_value;
			m->syms[m->nsyms].size = sym.st_size;
			if ((m->syms[m->nsyms].name = strdup(name)))
				m->nsyms++;
		}
	}
	if (m->nsyms)
		qsort(m->syms, m->nsyms, sizeof(*m->syms), cmp_sym);
	if (e)
		elf_end(e);
	close(fd);
}

static struct module *module_of(struct vt_symbolizer *s, const char *path)
{
	struct module *m, **v;

	for (size_t i = 0; i < s->nmods; i++)
		if (!strcmp(s->mods[i]->path, path))
			return s->mods[i];
	m = calloc(1, sizeof(*m));
	v = realloc(s->mods, (s->nmods + 1) * sizeof(*v));
	if (!m || !v || !(m->path = strdup(path))) {
		free(m);
		if (v)
			s->mods = v;
		return NULL;
	}
	s->mods = v;
	s->mods[s->nmods++] = m;
	load_module(m);
	return m;
}

int vt_symbolizer_snapshot(struct vt_symbolizer *s)
{
	char file[64], line[4096 + 128];
	struct mapping *v = NULL;
	size_t n = 0, cap = 0;
	FILE *f;

	snprintf(file, sizeof(file), "/proc/%d/maps", (int)s->pid);
	f = fopen(file, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		uint64_t start, end, off;
		char perms[8], path[4096];

		path[0] = '\0';
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %4095s", &start, &end,
			   perms, &off, path) < 4 || perms[2] != 'x' || path[0] != '/')
			continue;
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 32;
			struct mapping *nv = realloc(v, ncap * sizeof(*nv));

			if (!nv)
				break;
			v = nv;
			cap = ncap;
		}
		v[n] = (struct mapping){ start, end, off, module_of(s, path) };
		if (v[n].mod)
			n++;
	}
	fclose(f);
	if (!n) {
		free(v);
		return -ENOENT; /* gone (or nothing mapped): keep the last ones */
	}
	free(s->maps);
	s->maps = v;
	s->nmaps = n;
	return 0;
}

static const struct sym *find_sym(const struct module *m, uint64_t addr)
{
	size_t lo = 0, hi = m->nsyms;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (m->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const struct sym *c = &m->syms[lo - 1];
	return !c->size || addr < c->addr + c->size ? c : NULL;
}

const char *vt_symbolizer_name(struct vt_symbolizer *s, uint64_t ip, int caller, char *fallback,
			       size_t len)
{
	uint64_t at = caller && ip ? ip - 1 : ip;

	for (size_t i = 0; i < s->nmaps; i++) {
		const struct mapping *mp = &s->maps[i];
		const struct module *m = mp->mod;
		uint64_t off;

		if (at < mp->start || at >= mp->end)
			continue;
		off = at - mp->start + mp->offset;
		for (size_t k = 0; k < m->nloads; k++) {
			const GElf_Phdr *ph = &m->loads[k];
			const struct sym *sy;

			if (off < ph->p_offset || off >= ph->p_offset + ph->p_filesz)
				continue;
			sy = find_sym(m, off - ph->p_offset + ph->p_vaddr);
			if (sy)
				return sy->name;
		}
		const char *base = strrchr(m->path, '/');
		snprintf(fallback, len, "%s+0x%" PRIx64, base ? base + 1 : m->path, off);
		return fallback;
	}
	snprintf(fallback, len, "0x%" PRIx64, ip);
	return fallback;
}

void vt_symbolizer_free(struct vt_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nmods; i++) {
		for (size_t k = 0; k < s->mods[i]->nsyms; k++)
			free(s->mods[i]->syms[k].name);
		free(s->mods[i]->syms);
		free(s->mods[i]->loads);
		free(s->mods[i]->path);
		free(s->mods[i]);
	}
	free(s->mods);
	free(s->maps);
	free(s);
}
