/*
 * keep.c: the tables' objects marked through one object (keep.h).
 *
 * The keeper is a hidden typed-data object that Ruby marks as a root; its
 * mark function marks what every table names. It is write-barrier
 * protected, and told of each new entry (RB_OBJ_WRITTEN), so
 * a minor collection walks the tables only after something was added; most
 * collections of a warmed-up program pass over them.
 */
#include <ruby/ruby.h>

#include "keep.h"

#define TABLES 4

static vt_rb_mark_fn marks[TABLES];
static int nmarks;
static VALUE keeper;

static void keeper_mark(void *data)
{
	(void)data;
	for (int i = 0; i < nmarks; i++)
		marks[i]();
}

static const rb_data_type_t keeper_type = {
	.wrap_struct_name = "vmtrace names",
	.function = { .dmark = keeper_mark },
	.flags = RUBY_TYPED_WB_PROTECTED,
};

void vt_rb_keep_init(void)
{
	/* Ruby calls the mark function of data it points at: not NULL */
	keeper = TypedData_Wrap_Struct(0, &keeper_type, marks);
	rb_gc_register_mark_object(keeper);
}

void vt_rb_keep_table(vt_rb_mark_fn mark)
{
	if (nmarks == TABLES)
		rb_bug("vmtrace: more kept tables than %d", TABLES);
	marks[nmarks++] = mark;
}

void vt_rb_kept_more(VALUE obj)
{
	if (keeper)
		RB_OBJ_WRITTEN(keeper, Qundef, obj);
}
