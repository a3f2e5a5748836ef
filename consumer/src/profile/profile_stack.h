/*
 * profile_stack.h: the stacks of a recording (profile_stack.c): each
 * distinct stack once, numbered from 1 in the order first added, so an
 * allocation row carries a number and two rows of one stack compare equal.
 */
#ifndef VMTRACE_PROFILE_STACK_H
#define VMTRACE_PROFILE_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vt_frame {               /* one VM frame of a stack */
	char *name, *file;           /* file "" when the runtime gave none */
	int64_t line;                /* 0 = none */
};

struct vt_stack {               /* a whole VM stack, root first (frames[depth - 1] allocated) */
	struct vt_frame *frames;
	uint32_t depth;
	bool cut;                    /* deeper than the walk goes: the outer frames are missing */
};

struct vt_stack_table {
	struct vt_stack *v;          /* stack number i is v[i - 1] */
	size_t n, cap;
	void *index;                 /* private */
};

/* Intern a stack (frames root first, depth >= 1, copied): *id gets its
 * number, the same for the same frames. 0, -ENOMEM, -EINVAL (depth 0). */
int vt_stack_table_add(struct vt_stack_table *t, const struct vt_frame *frames, uint32_t depth,
		       bool cut, uint32_t *id);
void vt_stack_table_free(struct vt_stack_table *t); /* and empty it */

/* The texts of the frames (names and files), each once, numbered from 0 in
 * the order first met: how many, and text i (NULL past them). A record
 * file writes them once and its frames by number (docs/record-format.md). */
size_t vt_stack_table_ntexts(const struct vt_stack_table *t);
const char *vt_stack_table_text(const struct vt_stack_table *t, size_t i);
/* The number of a frame's text, by its pointer (a name or file of this
 * table's frames, not a copy): no hashing of the text; -1 when it is none. */
int64_t vt_stack_table_text_number(const struct vt_stack_table *t, const char *text);
/* Add text s, as a reader meets it: its number, or -1 out of memory. */
int64_t vt_stack_table_text_add(struct vt_stack_table *t, const char *s);
/* The table's own copy of s, added when new (NULL out of memory): frames
 * whose texts are such copies are added without hashing their texts. */
const char *vt_stack_table_intern(struct vt_stack_table *t, const char *s);

#endif /* VMTRACE_PROFILE_STACK_H */
