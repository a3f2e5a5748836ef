/* profile_stack.c: the stacks of a recording (profile_stack.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile_stack.h"
#include "profile/row_index.h"
#include "profile/strtab.h"

struct stack_index {
	uint32_t *slot;              /* stack number, 0 = empty */
	size_t cap;                  /* a power of two */
	struct vt_strtab strs;       /* every frame's name and file, once: a recording with
					stacks has millions of frames and a few thousand texts */
	const char **text_key;       /* strs' own pointers -> their numbers: a writer numbers */
	uint32_t *text_num;          /* each frame's texts without hashing them again */
	size_t text_cap, text_n;
};

static struct stack_index *index_of(struct vt_stack_table *p)
{
	if (!p->index)
		p->index = calloc(1, sizeof(struct stack_index));
	return p->index;
}

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

static int64_t text_number_of(struct stack_index *ix, const char *s);
static int64_t own_text_number(const struct stack_index *ix, const char *text);

/* The table's own copy of s (NULL is ""); NULL out of memory. A text that
 * is the table's own already (vt_stack_table_intern) is found by its
 * pointer, without hashing it. */
static char *text(struct stack_index *ix, const char *s)
{
	int64_t i = s ? own_text_number(ix, s) : -1;

	if (i < 0)
		i = text_number_of(ix, s);
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
	if (!ix && !(ix = index_of(p)))
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

size_t vt_stack_table_ntexts(const struct vt_stack_table *p)
{
	const struct stack_index *ix = p->index;

	return ix ? ix->strs.n : 0;
}

const char *vt_stack_table_text(const struct vt_stack_table *p, size_t i)
{
	const struct stack_index *ix = p->index;

	return ix && i < ix->strs.n ? ix->strs.v[i] : NULL;
}

/* Text number i (the strtab's own pointer) into the map by pointer. */
static int text_map_add(struct stack_index *ix, size_t i)
{
	size_t j;

	if (2 * (ix->text_n + 1) > ix->text_cap) {
		size_t cap = ix->text_cap ? 2 * ix->text_cap : 256;
		const char **key = calloc(cap, sizeof(*key));
		uint32_t *num = calloc(cap, sizeof(*num));

		if (!key || !num) {
			free(key);
			free(num);
			return -ENOMEM;
		}
		for (size_t o = 0; o < ix->text_cap; o++) {
			if (!ix->text_key[o])
				continue;
			for (j = vt_key_slot((uintptr_t)ix->text_key[o], cap); key[j]; j = (j + 1) & (cap - 1))
				;
			key[j] = ix->text_key[o];
			num[j] = ix->text_num[o];
		}
		free(ix->text_key);
		free(ix->text_num);
		ix->text_key = key;
		ix->text_num = num;
		ix->text_cap = cap;
	}
	for (j = vt_key_slot((uintptr_t)ix->strs.v[i], ix->text_cap); ix->text_key[j]; j = (j + 1) & (ix->text_cap - 1))
		;
	ix->text_key[j] = ix->strs.v[i];
	ix->text_num[j] = (uint32_t)i;
	ix->text_n++;
	return 0;
}

/* The number of s in ix's texts, added when new; -1 out of memory. */
static int64_t text_number_of(struct stack_index *ix, const char *s)
{
	bool fresh;
	int64_t i = vt_strtab_intern(&ix->strs, s ? s : "", &fresh);

	if (i >= 0 && fresh && text_map_add(ix, (size_t)i))
		return -1; /* stays in strs, unmapped: text_number says -1 for it */
	return i;
}

int64_t vt_stack_table_text_add(struct vt_stack_table *p, const char *s)
{
	struct stack_index *ix = index_of(p);

	return ix ? text_number_of(ix, s) : -1;
}

static int64_t own_text_number(const struct stack_index *ix, const char *text)
{
	if (!ix->text_cap)
		return -1;
	for (size_t j = vt_key_slot((uintptr_t)text, ix->text_cap); ix->text_key[j]; j = (j + 1) & (ix->text_cap - 1))
		if (ix->text_key[j] == text)
			return ix->text_num[j];
	return -1;
}

int64_t vt_stack_table_text_number(const struct vt_stack_table *p, const char *text)
{
	const struct stack_index *ix = p->index;

	return ix ? own_text_number(ix, text) : -1;
}

const char *vt_stack_table_intern(struct vt_stack_table *p, const char *s)
{
	struct stack_index *ix = index_of(p);

	return ix ? text(ix, s) : NULL;
}

void vt_stack_table_free(struct vt_stack_table *p)
{
	struct stack_index *ix = p->index;

	for (size_t i = 0; i < p->n; i++)
		free(p->v[i].frames);
	free(p->v);
	if (ix) {
		free(ix->slot);
		free(ix->text_key);
		free(ix->text_num);
		vt_strtab_free(&ix->strs);
	}
	free(ix);
	p->v = NULL;
	p->n = p->cap = 0;
	p->index = NULL;
}
