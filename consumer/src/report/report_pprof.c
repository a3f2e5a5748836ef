/*
 * report_pprof.c: `--format pprof`, the profile as pprof's profile.proto
 * (protobuf-c code generated from the schema golang-github-google-pprof-dev
 * ships), gzipped by zlib.
 *
 * What goes in (docs/exports.md):
 * - sample types alloc_objects/count and alloc_space/bytes (a runtime
 *   without allocation probes gives calls/count instead), and with a live
 *   heap (record --live) inuse_objects/count and inuse_space/bytes beside
 *   them, what was still alive at the end, as Go's heap profiles have;
 * - one sample per allocation row (class, method, site, stack), whose stack
 *   is a list of frames, leaf first: the allocated class, then the
 *   allocating method with the site's file and line, then, when the row
 *   has a VM stack (--stack vm), its callers out to the root, each a
 *   location of its own (stack_of()). The live heap is kept per (class,
 *   method, site): its figures go to the first row of the key;
 * - labels pid and runtime on every sample; the record's start time and
 *   duration; the sampling period when allocations were sampled.
 * Every string is interned once into the string table (strtab.c), every (function,
 * line) into one location, so a profile of N rows stays O(N).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile.pb-c.h"
#include "report/pprof.h"
#include "report/report_fmt.h"
#include "report/report_opts.h"
#include "profile/strtab.h"

typedef Perftools__Profiles__Profile PbProfile;
typedef Perftools__Profiles__Sample PbSample;
typedef Perftools__Profiles__Location PbLocation;
typedef Perftools__Profiles__Mapping PbMapping;
typedef Perftools__Profiles__Line PbLine;
typedef Perftools__Profiles__Function PbFunction;
typedef Perftools__Profiles__ValueType PbValueType;
typedef Perftools__Profiles__Label PbLabel;

/* ---- interning: (a, b) pairs -> ids ---- */

struct pairtab {                 /* (a, b) -> id 1..n */
	uint64_t (*key)[2];
	uint64_t *id;
	size_t n, nslot;
};

static uint64_t hash_bytes(const void *p, size_t len, uint64_t h)
{
	const unsigned char *s = p;

	for (size_t i = 0; i < len; i++)
		h = (h ^ s[i]) * 0x100000001b3ull; /* FNV-1a */
	return h;
}

static int64_t intern(struct vt_strtab *t, const char *s)
{
	return vt_strtab_intern(t, s, NULL);
}

static int pairtab_grow(struct pairtab *t)
{
	size_t nslot = t->nslot ? t->nslot * 2 : 1024;
	uint64_t (*key)[2] = calloc(nslot, sizeof(*key));
	uint64_t *id = calloc(nslot, sizeof(*id));

	if (!key || !id) {
		free(key);
		free(id);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->nslot; i++) {
		if (!t->id[i])
			continue;
		size_t h = hash_bytes(t->key[i], sizeof(t->key[i]), 0xcbf29ce484222325ull) & (nslot - 1);

		while (id[h])
			h = (h + 1) & (nslot - 1);
		key[h][0] = t->key[i][0];
		key[h][1] = t->key[i][1];
		id[h] = t->id[i];
	}
	free(t->key);
	free(t->id);
	t->key = key;
	t->id = id;
	t->nslot = nslot;
	return 0;
}

/* The id of (a, b); *fresh says it was just given. 0 on -ENOMEM. */
static uint64_t pair_id(struct pairtab *t, uint64_t a, uint64_t b, bool *fresh)
{
	uint64_t k[2] = { a, b };
	size_t h;

	*fresh = false;
	if ((t->n + 1) * 2 > t->nslot && pairtab_grow(t))
		return 0;
	h = hash_bytes(k, sizeof(k), 0xcbf29ce484222325ull) & (t->nslot - 1);
	for (; t->id[h]; h = (h + 1) & (t->nslot - 1))
		if (t->key[h][0] == a && t->key[h][1] == b)
			return t->id[h];
	t->key[h][0] = a;
	t->key[h][1] = b;
	t->id[h] = ++t->n;
	*fresh = true;
	return t->n;
}

/* ---- frames and stacks ---- */

struct frame {
	const char *name;            /* function name */
	const char *file;            /* "" when unknown */
	int64_t line;                /* 0 when unknown */
};

#define MAX_FRAMES (2 + 128 + 1) /* class, the frames of a stack, "[cut]" */

/* "file.c:42" -> file "file.c" (copied into buf) and 42; anything else is
 * a file name without a line. */
static void split_site(const char *site, char *buf, size_t len, const char **file, int64_t *line)
{
	const char *colon = site ? strrchr(site, ':') : NULL;
	char *end;
	long long v;

	*file = site ? site : "";
	*line = 0;
	if (!colon || colon == site || !colon[1] || (size_t)(colon - site) >= len)
		return;
	v = strtoll(colon + 1, &end, 10);
	if (*end || v <= 0)
		return;
	memcpy(buf, site, (size_t)(colon - site));
	buf[colon - site] = '\0';
	*file = buf;
	*line = v;
}

/* The frames of one allocation row, leaf first: the class allocated, the
 * allocating method at the site, then (with a stack) its callers, each
 * where its frame says. */
static size_t stack_of(const struct vt_profile *p, const struct vt_alloc *a, struct frame *f,
		       char *filebuf, size_t len)
{
	const struct vt_stack *s = a->stack ? &p->stacks.v[a->stack - 1] : NULL;
	size_t n = 2;

	f[0] = (struct frame){ a->klass, "", 0 };
	f[1].name = a->method;
	split_site(a->site, filebuf, len, &f[1].file, &f[1].line);
	if (!s)
		return n;
	/* the innermost frame is the allocating method: its site is sharper */
	f[1].name = s->frames[s->depth - 1].name;
	for (uint32_t i = s->depth - 1; i-- > 0 && n < MAX_FRAMES - 1;)
		f[n++] = (struct frame){ s->frames[i].name, s->frames[i].file, s->frames[i].line };
	if (s->cut)
		f[n++] = (struct frame){ "[cut]", "", 0 };
	return n;
}

/* ---- the profile message ---- */

struct builder {
	struct vt_strtab strs;
	struct pairtab funcs;        /* (name, file) string indexes -> function id */
	struct pairtab locs;         /* (function id, line) -> location id */
	PbFunction **fn;
	PbLocation **loc;
	size_t nfn, nloc, capfn, caploc;
	PbSample **samples;
	size_t nsamples;
	PbLabel labels[2];
	PbLabel *label_ptrs[2];
	PbLabel *plabels;            /* several processes: pid, runtime, comm of each */
	PbLabel **pptrs;
};

static int push_ptr(void ***v, size_t *n, size_t *cap, void *x)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		void **nv = realloc(*v, c * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = c;
	}
	(*v)[(*n)++] = x;
	return 0;
}

/* The location id of frame f, adding its function and location if new. */
static uint64_t location_of(struct builder *b, const struct frame *f)
{
	int64_t name = intern(&b->strs, f->name), file = intern(&b->strs, f->file);
	uint64_t fid, lid;
	bool fresh;

	if (name < 0 || file < 0)
		return 0;
	fid = pair_id(&b->funcs, (uint64_t)name, (uint64_t)file, &fresh);
	if (!fid)
		return 0;
	if (fresh) {
		PbFunction *fn = malloc(sizeof(*fn));

		if (!fn || push_ptr((void ***)&b->fn, &b->nfn, &b->capfn, fn)) {
			free(fn);
			return 0;
		}
		perftools__profiles__function__init(fn);
		fn->id = fid;
		fn->name = fn->system_name = name;
		fn->filename = file;
	}
	lid = pair_id(&b->locs, fid, (uint64_t)f->line, &fresh);
	if (!lid)
		return 0;
	if (fresh) {
		PbLocation *l = malloc(sizeof(*l));
		PbLine *line = malloc(sizeof(*line));
		PbLine **lines = malloc(sizeof(*lines));

		if (!l || !line || !lines || push_ptr((void ***)&b->loc, &b->nloc, &b->caploc, l)) {
			free(l);
			free(line);
			free(lines);
			return 0;
		}
		perftools__profiles__location__init(l);
		perftools__profiles__line__init(line);
		line->function_id = fid;
		line->line = f->line;
		lines[0] = line;
		l->id = lid;
		l->mapping_id = 1; /* the program: every frame is named already */
		l->n_line = 1;
		l->line = lines;
	}
	return lid;
}

/* Several processes: each one's labels (pid, runtime, comm, cgroup), for its samples. */
static int build_process_labels(struct builder *b, const struct vt_profile *p)
{
	size_t n = p->procs.n * 4;

	b->plabels = calloc(n, sizeof(*b->plabels));
	b->pptrs = calloc(n, sizeof(*b->pptrs));
	if (!b->plabels || !b->pptrs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		perftools__profiles__label__init(&b->plabels[i]);
		b->pptrs[i] = &b->plabels[i];
	}
	for (size_t i = 0; i < p->procs.n; i++) {
		PbLabel *l = &b->plabels[i * 4];

		l[0].key = intern(&b->strs, "pid");
		l[0].num = p->procs.v[i].pid;
		l[1].key = intern(&b->strs, "runtime");
		l[1].str = intern(&b->strs, p->runtime);
		l[2].key = intern(&b->strs, "comm");
		l[2].str = intern(&b->strs, p->procs.v[i].comm);
		l[3].key = intern(&b->strs, "cgroup");
		l[3].str = intern(&b->strs, p->procs.v[i].cgroup);
		if (l[0].key < 0 || l[1].str < 0 || l[2].str < 0 || l[3].str < 0)
			return -ENOMEM;
	}
	return 0;
}

static int add_sample(struct builder *b, const struct frame *f, size_t nframes,
		      const int64_t *values, size_t nvalues)
{
	PbSample *s = calloc(1, sizeof(*s));
	uint64_t *ids = calloc(nframes, sizeof(*ids));
	int64_t *vals = malloc(nvalues * sizeof(*vals));

	if (!s || !ids || !vals)
		goto nomem;
	perftools__profiles__sample__init(s);
	for (size_t i = 0; i < nframes; i++)
		if (!(ids[i] = location_of(b, &f[i])))
			goto nomem;
	memcpy(vals, values, nvalues * sizeof(*vals));
	s->n_location_id = nframes;
	s->location_id = ids;
	s->n_value = nvalues;
	s->value = vals;
	s->n_label = 2;
	s->label = b->label_ptrs;
	b->samples[b->nsamples++] = s;
	return 0;
nomem:
	free(s);
	free(ids);
	free(vals);
	return -ENOMEM;
}

/* profile.proto's numbers are int64: a count past 2^63-1 is written as
 * 2^63-1 rather than wrapping negative */
static int64_t i64(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

static int add_samples_marking(struct builder *b, const struct vt_profile *p, bool *live_done)
{
	char filebuf[4096];
	struct frame f[MAX_FRAMES];
	size_t nv = p->live_info.on ? 4 : 2;

	if (p->has_allocations) {
		for (size_t i = 0; i < p->allocs.n; i++) {
			const struct vt_alloc *a = &p->allocs.v[i];
			const struct vt_live *l = nv == 4 ? vt_profile_live_of(p, a->klass, a->method, a->site) : NULL;
			int64_t v[4] = { i64(a->count), i64(a->bytes), 0, 0 };
			size_t n = stack_of(p, a, f, filebuf, sizeof(filebuf));

			/* a key's rows under several stacks: its live figures once */
			if (l && !live_done[l - p->live.v]) {
				live_done[l - p->live.v] = true;
				v[2] = i64(l->count);
				v[3] = i64(l->bytes);
			}
			if (add_sample(b, f, n, v, nv))
				return -ENOMEM;
			if (a->proc && b->pptrs) {
				b->samples[b->nsamples - 1]->n_label = 4;
				b->samples[b->nsamples - 1]->label = b->pptrs + (a->proc - 1) * 4;
			}
		}
		/* live rows of keys with no allocation row: none in a record
		 * vmtrace wrote, but a record file may say so */
		for (size_t i = 0; nv == 4 && i < p->live.n; i++) {
			const struct vt_live *l = &p->live.v[i];
			struct vt_alloc a = { l->klass, l->method, l->site, 0, 0, 0, 0, 0 };
			int64_t v[4] = { 0, 0, i64(l->count), i64(l->bytes) };

			if (!live_done[i] && add_sample(b, f, stack_of(p, &a, f, filebuf, sizeof(filebuf)), v, 4))
				return -ENOMEM;
		}
		return 0;
	}
	for (size_t i = 0; i < p->calls.n; i++) {
		const struct vt_keyed_count *c = &p->calls.v[i];
		int64_t v = i64(c->count);

		f[0] = (struct frame){ c->name, c->name2 ? c->name2 : "", 0 };
		if (add_sample(b, f, 1, &v, 1))
			return -ENOMEM;
	}
	return 0;
}

/* live_done[i]: live row i is in a sample already */
static int add_samples(struct builder *b, const struct vt_profile *p)
{
	bool *live_done = calloc(p->live.n + 1, sizeof(*live_done));
	int err;

	if (!live_done)
		return -ENOMEM;
	err = add_samples_marking(b, p, live_done);
	free(live_done);
	return err;
}

static void builder_free(struct builder *b)
{
	for (size_t i = 0; i < b->nfn; i++)
		free(b->fn[i]);
	for (size_t i = 0; i < b->nloc; i++) {
		free(b->loc[i]->line[0]);
		free(b->loc[i]->line);
		free(b->loc[i]);
	}
	for (size_t i = 0; i < b->nsamples; i++) {
		free(b->samples[i]->location_id);
		free(b->samples[i]->value);
		free(b->samples[i]);
	}
	free(b->fn);
	free(b->loc);
	free(b->samples);
	free(b->plabels);
	free(b->pptrs);
	vt_strtab_free(&b->strs);
	free(b->funcs.key);
	free(b->funcs.id);
	free(b->locs.key);
	free(b->locs.id);
}

int vt_pprof_encode(const struct vt_profile *p, uint8_t **buf, size_t *len)
{
	struct builder b = { 0 };
	PbProfile prof;
	PbValueType types[4], period_type, *type_ptrs[4] = { &types[0], &types[1], &types[2], &types[3] };
	PbMapping program, *mappings[1] = { &program };
	char exe[4096];
	int64_t comment;
	uint8_t *raw = NULL;
	size_t rows = p->has_allocations ? p->allocs.n : p->calls.n, rawlen;
	int err = -ENOMEM;

	*buf = NULL;
	*len = 0;
	perftools__profiles__profile__init(&prof);
	if (intern(&b.strs, "") != 0)
		goto out;
	rows += p->live.n; /* live rows without an allocation row, at most */
	b.samples = calloc(rows ? rows : 1, sizeof(*b.samples));
	if (!b.samples)
		goto out;

	for (int i = 0; i < 2; i++) {
		perftools__profiles__label__init(&b.labels[i]);
		b.label_ptrs[i] = &b.labels[i];
	}
	b.labels[0].key = intern(&b.strs, "pid");
	b.labels[0].num = p->pid;
	b.labels[1].key = intern(&b.strs, "runtime");
	b.labels[1].str = intern(&b.strs, p->runtime);
	if (p->procs.n && build_process_labels(&b, p))
		goto out;

	for (int i = 0; i < 4; i++)
		perftools__profiles__value_type__init(&types[i]);
	if (p->has_allocations) {
		types[0].type = intern(&b.strs, "alloc_objects");
		types[0].unit = intern(&b.strs, "count");
		types[1].type = intern(&b.strs, "alloc_space");
		types[1].unit = intern(&b.strs, "bytes");
		prof.n_sample_type = 2;
		if (p->live_info.on) {
			types[2].type = intern(&b.strs, "inuse_objects");
			types[2].unit = types[0].unit;
			types[3].type = intern(&b.strs, "inuse_space");
			types[3].unit = types[1].unit;
			prof.n_sample_type = 4;
			if (types[2].type < 0 || types[3].type < 0)
				goto out;
		}
	} else {
		types[0].type = intern(&b.strs, "calls");
		types[0].unit = intern(&b.strs, "count");
		prof.n_sample_type = 1;
	}
	prof.sample_type = type_ptrs;
	/* as Go's heap profiles: space in bytes, one sample per period bytes
	 * (1: every allocation); calls one by one */
	perftools__profiles__value_type__init(&period_type);
	period_type.type = intern(&b.strs, p->has_allocations ? "space" : "calls");
	period_type.unit = types[p->has_allocations ? 1 : 0].unit;
	prof.period_type = &period_type;
	prof.period = p->has_allocations && p->sample_period ? i64(p->sample_period) : 1;
	prof.default_sample_type = types[p->has_allocations ? 1 : 0].type;
	/* One mapping, the program (the command's first word): pprof then has
	 * its main binary, and, with every function, file and line given,
	 * symbolizes nothing. */
	perftools__profiles__mapping__init(&program);
	snprintf(exe, sizeof(exe), "%.*s", (int)strcspn(p->target ? p->target : "", " "),
		 p->target ? p->target : "");
	program.id = 1;
	program.filename = intern(&b.strs, exe[0] ? exe : p->runtime);
	program.has_functions = program.has_filenames = program.has_line_numbers = 1;
	prof.n_mapping = 1;
	prof.mapping = mappings;
	comment = intern(&b.strs, p->target);
	prof.n_comment = 1;
	prof.comment = &comment;
	prof.time_nanos = i64(p->start_unix_ns);
	/* a duration up to the reader's 1e10 s is past int64's 9.2e18 ns */
	prof.duration_nanos = !(p->duration_s > 0) ? 0 :
			      p->duration_s * 1e9 < 9e18 ? (int64_t)(p->duration_s * 1e9) : INT64_MAX;
	if (b.labels[0].key < 0 || b.labels[1].key < 0 || b.labels[1].str < 0 || comment < 0 ||
	    program.filename < 0 || period_type.type < 0 ||
	    types[0].type < 0 || types[1].type < 0 || types[0].unit < 0 || types[1].unit < 0)
		goto out;
	if (add_samples(&b, p))
		goto out;

	prof.n_sample = b.nsamples;
	prof.sample = b.samples;
	prof.n_location = b.nloc;
	prof.location = b.loc;
	prof.n_function = b.nfn;
	prof.function = b.fn;
	prof.n_string_table = b.strs.n;
	prof.string_table = b.strs.v;

	rawlen = perftools__profiles__profile__get_packed_size(&prof);
	raw = malloc(rawlen ? rawlen : 1);
	if (!raw)
		goto out;
	perftools__profiles__profile__pack(&prof, raw);
	err = vt_gzip(raw, rawlen, buf, len);
out:
	free(raw);
	builder_free(&b);
	return err;
}

int vt_report_pprof(FILE *out, const struct vt_profile *p, const struct vt_report_opts *opts)
{
	uint8_t *buf;
	size_t len;
	int err;

	(void)opts; /* pprof groups, sorts and cuts by itself */
	err = vt_pprof_encode(p, &buf, &len);
	if (err)
		return err;
	if (fwrite(buf, 1, len, out) != len)
		err = errno ? -errno : -EIO;
	free(buf);
	return err;
}
