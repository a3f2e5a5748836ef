/*
 * keep.c: the tables' objects marked through one object (keep.h).
 *
 * The keeper is a hidden typed-data object that Ruby marks as a root; its
 * mark function marks what the tables name. It is write-barrier
 * protected, and told of each new entry (RB_OBJ_WRITTEN), so
 * a minor collection walks the tables only after something was added; most
 * collections of a warmed-up program pass over them.
 */
#include <ruby/ruby.h>

#include "keep.h"

static vt_rb_mark_fn mark_tables;
static VALUE keeper;

static void keeper_mark(void *data)
{
	(void)data;
	mark_tables();
}

static const rb_data_type_t keeper_type = {
	.wrap_struct_name = "vmtrace names",
	.function = { .dmark = keeper_mark },
	.flags = RUBY_TYPED_WB_PROTECTED,
};

void vt_rb_keep_init(vt_rb_mark_fn mark)
{
	mark_tables = mark;
	/* Ruby calls the mark function of data it points at: not NULL */
	keeper = TypedData_Wrap_Struct(0, &keeper_type, &mark_tables);
	rb_gc_register_mark_object(keeper);
}

void vt_rb_kept_more(VALUE obj)
{
	if (keeper)
		RB_OBJ_WRITTEN(keeper, Qundef, obj);
}
