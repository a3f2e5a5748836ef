/* profile_stack.c: the stacks of a recording (profile_stack.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile_stack.h"

struct stack_index {
	uint32_t *slot;              /* stack number, 0 = empty */
	size_t cap;                  /* a power of two */
};

static uint64_t mix_str(uint64_t h, const char *s)
{
	for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++)
		h = (h ^ *c) * 0x100000001b3ULL;
	return (h ^ 0xff) * 0x100000001b3ULL;
}

static uint64_t stack_hash(const struct vt_frame *f, uint32_t depth, bool cut)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ cut;

	for (uint32_t i = 0; i < depth; i++) {
		h = mix_str(h, f[i].name);
		h = mix_str(h, f[i].file);
		h = (h ^ (uint64_t)f[i].line) * 0x100000001b3ULL;
	}
	return h ^ (h >> 29);
}

static bool same(const struct vt_stack *s, const struct vt_frame *f, uint32_t depth, bool cut)
{
	if (s->depth != depth || s->cut != cut)
		return false;
	for (uint32_t i = 0; i < depth; i++)
		if (strcmp(s->frames[i].name, f[i].name ? f[i].name : "") ||
		    strcmp(s->frames[i].file, f[i].file ? f[i].file : "") || s->frames[i].line != f[i].line)
			return false;
	return true;
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

static void free_frames(struct vt_frame *f, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		free(f[i].name);
		free(f[i].file);
	}
	free(f);
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
	pos = stack_hash(frames, depth, cut) & (ix->cap - 1);
	for (; ix->slot[pos]; pos = (pos + 1) & (ix->cap - 1))
		if (same(&p->v[ix->slot[pos] - 1], frames, depth, cut)) {
			*id = ix->slot[pos];
			return 0;
		}
	if (p->n == p->cap) {
		size_t ncap = p->cap ? 2 * p->cap : 16;
		struct vt_stack *nv = realloc(p->v, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		p->v = nv;
		p->cap = ncap;
	}
	copy = calloc(depth, sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	for (uint32_t i = 0; i < depth; i++) {
		copy[i].name = strdup(frames[i].name ? frames[i].name : "");
		copy[i].file = strdup(frames[i].file ? frames[i].file : "");
		copy[i].line = frames[i].line;
		if (!copy[i].name || !copy[i].file) {
			free_frames(copy, i + 1);
			return -ENOMEM;
		}
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
		free_frames(p->v[i].frames, p->v[i].depth);
	free(p->v);
	if (ix)
		free(ix->slot);
	free(ix);
	p->v = NULL;
	p->n = p->cap = 0;
	p->index = NULL;
}
