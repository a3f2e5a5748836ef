/*
 * sites.c: each Python allocation site, (code object, instruction), with
 * its names made once and its key caches (sites.h). Called with the GIL.
 */
#include "frames.h" /* CPython's headers first */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "intern.h"
#include "sites.h"

/* The table: a slot holds what it is found by beside its site. */
struct site_slot {
	const void *code, *instr;     /* the frame's code object and its prev_instr */
	struct site *site;            /* NULL: empty */
};

#define SITE_SLAB 1024                /* sites made at once */

static struct site_slot *sites;
static size_t sites_cap, sites_n;
static struct site *slab;
static size_t slab_left;

static uint64_t site_hash(const void *code, const void *instr)
{
	return vt_mix64((uint64_t)(uintptr_t)code * 31 + (uint64_t)(uintptr_t)instr);
}

static int sites_grow(void)
{
	size_t cap = sites_cap ? sites_cap * 2 : 4096;
	struct site_slot *t = calloc(cap, sizeof(*t));

	if (!t)
		return -1;
	for (size_t i = 0; i < sites_cap; i++) {
		size_t j;

		if (!sites[i].site)
			continue;
		for (j = site_hash(sites[i].code, sites[i].instr) & (cap - 1); t[j].site; j = (j + 1) & (cap - 1))
			;
		t[j] = sites[i];
	}
	free(sites);
	sites = t;
	sites_cap = cap;
	return 0;
}

static struct site *site_new(void)
{
	if (!slab_left) {
		if (!(slab = calloc(SITE_SLAB, sizeof(*slab))))
			return NULL;
		slab_left = SITE_SLAB;
	}
	slab_left--;
	return slab++;
}

static struct vt_interned kept;

const char *keep(const char *s)
{
	return vt_intern_str(&kept, s);
}

struct site *site_of(_PyInterpreterFrame *f)
{
	const void *code = f ? (const void *)VT_FRAME_CODE(f) : NULL, *instr = f ? VT_FRAME_INSTR(f) : NULL;
	size_t j;
	char buf[1200];
	const char *name = "(no Python frame)", *file = NULL;
	int line = 0;
	struct site *s;

	if (sites_cap)
		for (j = site_hash(code, instr) & (sites_cap - 1); sites[j].site; j = (j + 1) & (sites_cap - 1))
			if (sites[j].code == code && sites[j].instr == instr)
				return sites[j].site;
	if (2 * (sites_n + 1) > sites_cap && sites_grow())
		return NULL;
	if (f) {
		PyCodeObject *co = VT_FRAME_CODE(f);
		int lasti = _PyInterpreterFrame_LASTI(f);
		PyObject *et, *ev, *tb;

		/* an allocation may come while the program's exception is set:
		 * keep it, whatever the calls below do */
		PyErr_Fetch(&et, &ev, &tb);
		name = PyUnicode_AsUTF8(co->co_qualname);
		file = PyUnicode_AsUTF8(co->co_filename);
		line = PyCode_Addr2Line(co, (lasti < 0 ? 0 : lasti) * (int)sizeof(_Py_CODEUNIT));
		if (!name)
			name = "?";
		PyErr_Clear();
		PyErr_Restore(et, ev, tb);
	}
	if (!(s = site_new()))
		return NULL;
	*s = (struct site){ .method = keep(name) };
	if (file) {
		snprintf(buf, sizeof(buf), "%s:%d", file, line);
		s->file_line = keep(buf);
		s->file = keep(file);
		s->line = line;
	}
	if (!s->method)
		return NULL; /* no memory: the slab's entry stays unused */
	for (j = site_hash(code, instr) & (sites_cap - 1); sites[j].site; j = (j + 1) & (sites_cap - 1))
		;
	sites[j] = (struct site_slot){ code, instr, s };
	/* the table is keyed by the code's address: held, so a code object
	 * freed (exec'd, compiled) never gives its address to another under
	 * this one's name (a reference count, under the GIL: no allocation) */
	if (f)
		Py_INCREF(VT_FRAME_CODE(f));
	sites_n++;
	return s;
}
