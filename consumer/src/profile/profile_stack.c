/* profile_stack.c: the stacks of a recording (profile_stack.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile_stack.h"
#include "profile/strtab.h"

struct stack_index {
	uint32_t *slot;              /* stack number, 0 = empty */
	size_t cap;                  /* a power of two */
	struct vt_strtab strs;       /* every frame's name and file, once: a recording with
					stacks has millions of frames and a few thousand texts */
};

/* Frames whose strings are the table's own (one pointer per text), so a
 * stack hashes and compares by pointers. */
static uint64_t stack_hash(const struct vt_frame *f, uint32_t depth, bool cut)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ cut;

	for (uint32_t i = 0; i < depth; i++) {
		h = (h ^ (uint64_t)(uintptr_t)f[i].name) * 0x100000001b3ULL;
		h = (h ^ (uint64_t)(uintptr_t)f[i].file) * 0x100000001b3ULL;
		h = (h ^ (uint64_t)f[i].line) * 0x100000001b3ULL;
	}
	return h ^ (h >> 29);
}

static bool same(const struct vt_stack *s, const struct vt_frame *f, uint32_t depth, bool cut)
{
	return s->depth == depth && s->cut == cut && !memcmp(s->frames, f, depth * sizeof(*f));
}

static int rebuild(struct stack_index *ix, const struct vt_stack_table *p)
{
	size_t cap = 16;
	uint32_t *slot;

	while (cap < 2 * (p->n + 1))
		cap *= 2;
	slot = calloc(cap, sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < p->n; i++) {
		const struct vt_stack *s = &p->v[i];
		size_t pos = stack_hash(s->frames, s->depth, s->cut) & (cap - 1);

		while (slot[pos])
			pos = (pos + 1) & (cap - 1);
		slot[pos] = (uint32_t)(i + 1);
	}
	free(ix->slot);
	ix->slot = slot;
	ix->cap = cap;
	return 0;
}

/* The table's own copy of s (NULL is ""); NULL out of memory. */
static char *text(struct stack_index *ix, const char *s)
{
	int64_t i = vt_strtab_intern(&ix->strs, s ? s : "", NULL);

	return i < 0 ? NULL : ix->strs.v[i];
}

int vt_stack_table_add(struct vt_stack_table *p, const struct vt_frame *frames, uint32_t depth,
		       bool cut, uint32_t *id)
{
	struct stack_index *ix = p->index;
	struct vt_frame *copy;
	size_t pos;

	if (depth == 0 || p->n >= UINT32_MAX - 1)
		return -EINVAL;
	if (!ix && !(ix = p->index = calloc(1, sizeof(*ix))))
		return -ENOMEM;
	if (ix->cap < 2 * (p->n + 1) && rebuild(ix, p))
		return -ENOMEM;
	copy = calloc(depth, sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	for (uint32_t i = 0; i < depth; i++) {
		copy[i].name = text(ix, frames[i].name);
		copy[i].file = text(ix, frames[i].file);
		copy[i].line = frames[i].line;
		if (!copy[i].name || !copy[i].file) {
			free(copy);
			return -ENOMEM;
		}
	}
	pos = stack_hash(copy, depth, cut) & (ix->cap - 1);
	for (; ix->slot[pos]; pos = (pos + 1) & (ix->cap - 1))
		if (same(&p->v[ix->slot[pos] - 1], copy, depth, cut)) {
			free(copy);
			*id = ix->slot[pos];
			return 0;
		}
	if (p->n == p->cap) {
		size_t ncap = p->cap ? 2 * p->cap : 16;
		struct vt_stack *nv = realloc(p->v, ncap * sizeof(*nv));

		if (!nv) {
			free(copy);
			return -ENOMEM;
		}
		p->v = nv;
		p->cap = ncap;
	}
	p->v[p->n] = (struct vt_stack){ copy, depth, cut };
	ix->slot[pos] = (uint32_t)++p->n;
	*id = (uint32_t)p->n;
	return 0;
}

void vt_stack_table_free(struct vt_stack_table *p)
{
	struct stack_index *ix = p->index;

	for (size_t i = 0; i < p->n; i++)
		free(p->v[i].frames);
	free(p->v);
	if (ix) {
		free(ix->slot);
		vt_strtab_free(&ix->strs);
	}
	free(ix);
	p->v = NULL;
	p->n = p->cap = 0;
	p->index = NULL;
}
