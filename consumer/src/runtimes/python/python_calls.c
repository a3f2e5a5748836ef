/*
 * python_calls.c: calls per Python function from the BPF maps of python.bpf.c
 * (python_calls.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtimes/adapter.h"
#include "runtimes/python/python_calls.h"
#include "runtimes/python/python_maps.h"

/* One function as read from the map: by code object (qualname, file and
 * first line from the codes map), or by the probe's strings (code 0). */
struct func_total {
	struct vt_py_code_id code;
	char name[VT_PY_NAME], file[VT_PY_FILE];
	uint32_t line;
	uint64_t entries, returns;
	bool folded;
};

struct funcs {
	const struct vt_py_call_maps *m;
	struct func_total *v;
	size_t n;
};

/* A new row of totals for sum, NULL when out of memory. */
static struct func_total *func_row(struct funcs *fs, const struct vt_py_func_val *sum)
{
	struct func_total *f;

	f = realloc(fs->v, (fs->n + 1) * sizeof(*fs->v));
	if (!f)
		return NULL;
	fs->v = f;
	f = &fs->v[fs->n++];
	*f = (struct func_total){ .entries = sum->entries, .returns = sum->returns };
	return f;
}

/* A row of funcs, keyed by code object: named from the codes map. */
static int func_read(const void *key, const void *val, void *ctx)
{
	struct funcs *fs = ctx;
	const struct vt_py_func_val *sum = val;
	struct func_total *f;
	struct vt_py_code c;

	if (!sum->entries && !sum->returns)
		return 0;
	f = func_row(fs, sum);
	if (!f)
		return -ENOMEM;
	memcpy(&f->code, key, sizeof(f->code));
	if (!f->code.code)
		return 0; /* the frame's code could not be read: an unnamed row */
	if (!bpf_map__lookup_elem(fs->m->codes, &f->code, sizeof(f->code), &c,
				  sizeof(c), 0)) {
		vt_key_string(f->name, sizeof(f->name), c.qualname, sizeof(c.qualname));
		vt_key_string(f->file, sizeof(f->file), c.file, sizeof(c.file));
		f->line = c.firstlineno;
	} else {
		snprintf(f->name, sizeof(f->name), "<code 0x%" PRIx64 ">", (uint64_t)f->code.code);
	}
	return 0;
}

/* A row of funcs_named, keyed by the probe's strings. */
static int func_named_read(const void *key, const void *val, void *ctx)
{
	const struct vt_py_func_key *k = key;
	struct funcs *fs = ctx;
	const struct vt_py_func_val *sum = val;
	struct func_total *f;

	if (!sum->entries && !sum->returns)
		return 0;
	f = func_row(fs, sum);
	if (!f)
		return -ENOMEM;
	vt_key_string(f->name, sizeof(f->name), k->func, sizeof(k->func));
	vt_key_string(f->file, sizeof(f->file), k->file, sizeof(k->file));
	return 0;
}

/* Does qualname ("A.f", "g.<locals>.f") end in the function name name? */
static bool qualname_of(const char *qualname, const char *name)
{
	const char *dot = strrchr(qualname, '.');

	return strcmp(dot ? dot + 1 : qualname, name) == 0;
}

/* Fold each row keyed by the probe's strings (its frame was stale) into the
 * one function of that name and file, when there is exactly one. */
static void fold_by_name(struct funcs *fs)
{
	for (size_t i = 0; i < fs->n; i++) {
		struct func_total *s = &fs->v[i], *only = NULL;
		size_t matches = 0;

		if (s->code.code)
			continue;
		for (size_t j = 0; j < fs->n; j++) {
			struct func_total *c = &fs->v[j];

			if (c->code.code && strcmp(c->file, s->file) == 0 && qualname_of(c->name, s->name)) {
				only = c;
				matches++;
			}
		}
		if (matches == 1) {
			only->entries += s->entries;
			only->returns += s->returns;
			s->folded = true;
		}
	}
}

int vt_py_add_calls(struct vt_adapter *a, const struct vt_py_call_maps *m, struct vt_profile *out)
{
	struct funcs fs = { .m = m };
	int err = vt_adapter_read_hash(a, m->funcs, func_read, &fs);

	if (!err)
		err = vt_adapter_read_hash(a, m->funcs_named, func_named_read, &fs);
	if (!err)
		fold_by_name(&fs);
	for (size_t i = 0; !err && i < fs.n; i++) {
		const struct func_total *f = &fs.v[i];
		char where[VT_PY_FILE + 16];
		/* entries and returns agree, unless entries are silent (3.11
		 * without a profiler) or a frame spans the run's edge */
		uint64_t calls = f->entries > f->returns ? f->entries : f->returns;

		if (f->folded)
			continue;
		if (f->code.code)
			snprintf(where, sizeof(where), "%s:%u", f->file, f->line);
		else
			snprintf(where, sizeof(where), "%s", f->file);
		err = vt_profile_add_call(out, f->name, where, calls);
	}
	free(fs.v);
	return err;
}
