/*
 * report_folded.c: "frame;frame weight" lines for flame graph tools
 * (flamegraph.pl, inferno, speedscope). Frames run from the code to what
 * it made, as with stacks: the method, then the site, then the class as
 * the leaf (as many of them as --by keeps); the weight is the --sort
 * number (count or bytes). `vmtrace diff --format folded` writes the same.
 * A runtime without allocation probes folds its calls instead (file;name).
 * Each line is written once: rows that fold alike add up.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "report/report_fmt.h"
#include "profile/row_index.h"
#include "report/report_model.h"

/* A frame name: ';' separates frames and a line ends at '\n', so both
 * (and every other control byte) are replaced; "" becomes "-". */
static void frame(FILE *out, const char *s, bool first)
{
	if (!first)
		fputc(';', out);
	if (!s || !*s) {
		fputc('-', out);
		return;
	}
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		fputc(c == ';' ? ':' : (c < 0x20 || c == 0x7f) ? '?' : c, out);
	}
}

/* Per process: a root frame "comm-pid" (perf's name for a process); true
 * when one was written. */
static bool process_frame(FILE *out, const char *cgroup, const char *comm, int32_t pid)
{
	char buf[64];

	if (cgroup)
		frame(out, cgroup, true);
	if (!comm)
		return cgroup != NULL;
	frame(out, comm, !cgroup);
	snprintf(buf, sizeof(buf), "-%d", (int)pid);
	fputs(buf, out);
	return true;
}

/* Folded lines, each once: rows that fold to the same frames (one stack
 * and class allocated from several sites) add their weights, in the order
 * their first row came. */
struct line {
	char *text;
	uint64_t w;
};

struct lines {
	struct line *v;
	size_t n, cap;
	struct vt_row_index index;
};

static void line_key(const void *row, struct vt_row_key *k)
{
	k->s[0] = ((const struct line *)row)->text;
}

/* Add w to the line text (taken over: freed here when a twin is there). */
static int add_line(struct lines *ls, char *text, uint64_t w)
{
	struct vt_row_key key = { { text, NULL, NULL }, 0 };
	int err;
	long at = vt_row_index_find(&ls->index, (const char *)ls->v, ls->n, sizeof(*ls->v), line_key,
				    &key, &err);

	if (err) {
		free(text);
		return err;
	}
	if (at >= 0) {
		ls->v[at].w += w;
		free(text);
		return 0;
	}
	if (ls->n == ls->cap) {
		size_t cap = ls->cap ? 2 * ls->cap : 256;
		struct line *v = realloc(ls->v, cap * sizeof(*v));

		if (!v) {
			free(text);
			return -ENOMEM;
		}
		ls->v = v;
		ls->cap = cap;
	}
	ls->v[ls->n] = (struct line){ text, w };
	vt_row_index_insert(&ls->index, &key, ls->n++);
	return 0;
}

/* With stacks: each allocation row as its whole stack, root first, then
 * the class allocated as the leaf; rows without a stack as their method.
 * A stack cut at the walk's depth starts with "[cut]". */
static int folded_stacks(FILE *out, const struct vt_profile *p, const struct vt_report_opts *o)
{
	struct lines ls = { 0 };
	int err = 0;

	for (size_t i = 0; i < p->allocs.n && !err; i++) {
		const struct vt_alloc *a = &p->allocs.v[i];
		uint64_t w = o->sort == VT_SORT_BYTES ? a->bytes : a->count;
		char *text = NULL;
		size_t len = 0;
		FILE *f;

		if (!w)
			continue;
		f = open_memstream(&text, &len);
		if (!f) {
			err = -ENOMEM;
			break;
		}
		const struct vt_process *pr = a->proc ? &p->procs.v[a->proc - 1] : NULL;
		bool root = pr && process_frame(f, vt_report_by_cgroup(p, o) ? pr->cgroup : NULL,
						vt_report_by_pid(p, o) ? pr->comm : NULL, pr->pid);

		if (a->stack) {
			const struct vt_stack *s = &p->stacks.v[a->stack - 1];

			if (s->cut)
				frame(f, "[cut]", !root);
			for (uint32_t fr = 0; fr < s->depth; fr++)
				frame(f, s->frames[fr].name, fr == 0 && !s->cut && !root);
		} else {
			frame(f, a->method, !root);
		}
		frame(f, a->klass, false);
		if (fclose(f)) {
			free(text);
			err = -ENOMEM;
			break;
		}
		err = add_line(&ls, text, w);
	}
	for (size_t i = 0; i < ls.n; i++) {
		if (!err)
			fprintf(out, "%s %llu\n", ls.v[i].text, (unsigned long long)ls.v[i].w);
		free(ls.v[i].text);
	}
	free(ls.v);
	free(ls.index.slot);
	return err;
}

int vt_report_folded(FILE *out, const struct vt_profile *p, const struct vt_report_opts *o)
{
	struct vt_alloc_table t;
	int err;

	if (!p->has_allocations) {
		size_t kept;
		const struct vt_keyed_count **s = vt_keyed_sorted(p->calls.v, p->calls.n, o->top,
								   &kept);

		if (p->calls.n && !s)
			return -ENOMEM;
		for (size_t i = 0; i < kept; i++) {
			bool file = s[i]->name2 && *s[i]->name2;

			if (file)
				frame(out, s[i]->name2, true);
			frame(out, s[i]->name, !file);
			fprintf(out, " %llu\n", (unsigned long long)s[i]->count);
		}
		free(s);
		return 0;
	}
	if (p->stacks.n)
		return folded_stacks(out, p, o);
	err = vt_alloc_table_build(p, o, &t);
	if (err)
		return err;
	for (size_t i = 0; i < t.n; i++) {
		const struct vt_alloc_row *r = &t.rows[i];
		bool first = !process_frame(out, r->cgroup, r->comm, r->pid);

		if (o->by != VT_BY_CLASS)
			frame(out, r->method, first), first = false;
		if (o->by == VT_BY_SITE)
			frame(out, r->site, first), first = false;
		if (o->by != VT_BY_METHOD && o->by != VT_BY_STACK)
			frame(out, r->klass, first);
		fprintf(out, " %llu\n",
			(unsigned long long)(o->sort == VT_SORT_BYTES ? r->bytes : r->count));
	}
	vt_alloc_table_free(&t);
	return 0;
}
