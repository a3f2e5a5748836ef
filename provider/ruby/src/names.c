/*
 * names.c: the site, class and frame tables and the interned names
 * (names.h). Every Ruby call here is one that reads what already exists
 * (rb_class_path_cached, rb_profile_frame_*, rb_ivar_get): a hook may not
 * allocate a Ruby object. Memory is plain malloc, which a hook may use.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ruby/ruby.h>
#include <ruby/debug.h>

#include "layout.h"
#include "intern.h"
#include "keep.h"
#include "names.h"

/* ---- interned strings: one copy per text, never freed ---- */

static struct vt_interned interned;

const char *vt_rb_intern(const char *s, size_t len)
{
	return vt_intern(&interned, s, len);
}

static const char *intern_str(const char *s)
{
	return vt_intern_str(&interned, s);
}

/* ---- names of classes and frames ---- */

/* Ruby's value types by number, for objects with no class (hidden
 * internal objects) or a class with no name: as the uprobe path names them */
static const char *type_name(int t)
{
	static const char *const names[] = {
		[0x00] = "none", [0x01] = "Object", [0x02] = "Class", [0x03] = "Module",
		[0x04] = "Float", [0x05] = "String", [0x06] = "Regexp", [0x07] = "Array",
		[0x08] = "Hash", [0x09] = "Struct", [0x0a] = "Bignum", [0x0b] = "File",
		[0x0c] = "Data", [0x0d] = "MatchData", [0x0e] = "Complex", [0x0f] = "Rational",
		[0x14] = "Symbol", [0x1a] = "imemo", [0x1b] = "node", [0x1c] = "iclass",
	};

	return t >= 0 && t < (int)(sizeof(names) / sizeof(names[0])) && names[t] ? names[t] : "?";
}

#if RUBY_API_VERSION_CODE < 30200
static ID attached_id;
#endif

/* The path Ruby keeps for a class (no allocation), into buf; 0 when it has
 * none (an anonymous class). */
static size_t class_path(VALUE klass, char *buf, size_t len)
{
	VALUE path = rb_class_path_cached(klass);

	if (!RB_TYPE_P(path, T_STRING))
		return 0;
	snprintf(buf, len, "%.*s", (int)RSTRING_LEN(path), RSTRING_PTR(path));
	return strlen(buf);
}

/* A method's owner as Ruby writes it before "#method" (or ".method" for a
 * singleton's), into buf; sep gets the separator. */
static void owner_name(VALUE owner, char *buf, size_t len, const char **sep)
{
	*sep = "#";
	if (RB_TYPE_P(owner, T_CLASS) && RB_FL_TEST_RAW(owner, RUBY_FL_SINGLETON)) {
		VALUE of;

#if RUBY_API_VERSION_CODE >= 30200
		of = rb_class_attached_object(owner); /* public from 3.2; no ivar holds it there */
#else
		if (!attached_id)
			attached_id = rb_intern("__attached__");
		of = rb_ivar_get(owner, attached_id);
#endif
		if ((RB_TYPE_P(of, T_CLASS) || RB_TYPE_P(of, T_MODULE)) && class_path(of, buf, len)) {
			*sep = ".";
			return;
		}
	}
	if (!class_path(owner, buf, len))
		snprintf(buf, len, "#<Class:0x%016lx>", (unsigned long)owner);
}

static int imemo_type(VALUE v)
{
	return (int)((RBASIC(v)->flags >> RUBY_FL_USHIFT) & 0x0f);
}

static VALUE frame_owner(VALUE frame)
{
	if (RB_TYPE_P(frame, T_IMEMO) && imemo_type(frame) == VT_RB_IMEMO_MENT)
		return (VALUE)vt_rb_word(frame, VT_RB_CME_OWNER);
	return 0;
}

/* A block's method: the first method frame out from it with the same name
 * and file (a block's code belongs to one method's definition). Only on a
 * site's first event. */
static VALUE block_owner(VALUE name, VALUE path)
{
	VALUE frames[64];
	int lines[64], n = rb_profile_frames(0, 64, frames, lines);

	for (int i = 0; i < n; i++) {
		VALUE owner = frame_owner(frames[i]);

		if (owner && rb_profile_frame_method_name(frames[i]) == name &&
		    rb_profile_frame_path(frames[i]) == path)
			return owner;
	}
	return 0;
}

static const char *frame_name_of(VALUE frame)
{
	char owner[512], name[1024];
	const char *sep;
	VALUE meth, owner_v;

	if (NIL_P(frame) || !frame)
		return intern_str("(top level)");
	meth = rb_profile_frame_method_name(frame);
	if (!RB_TYPE_P(meth, T_STRING)) {
		/* no method: top-level code, a class body, an eval */
		VALUE label = rb_profile_frame_label(frame);

		if (!RB_TYPE_P(label, T_STRING) || strcmp(RSTRING_PTR(label), "<main>") == 0)
			return intern_str("(top level)");
		return vt_rb_intern(RSTRING_PTR(label), (size_t)RSTRING_LEN(label));
	}
	owner_v = frame_owner(frame);
	if (!owner_v)
		owner_v = block_owner(meth, rb_profile_frame_path(frame));
	if (!owner_v)
		return vt_rb_intern(RSTRING_PTR(meth), (size_t)RSTRING_LEN(meth));
	owner_name(owner_v, owner, sizeof(owner), &sep);
	snprintf(name, sizeof(name), "%s%s%.*s", owner, sep, (int)RSTRING_LEN(meth), RSTRING_PTR(meth));
	return intern_str(name);
}

/* A frame of a stack as Ruby's own backtraces name it: a method's
 * "Owner#method", else the code's label ("block in make", "<main>"). */
static const char *stack_frame_name(VALUE frame)
{
	VALUE label;

	if (frame_owner(frame))
		return frame_name_of(frame);
	label = rb_profile_frame_label(frame);
	if (!RB_TYPE_P(label, T_STRING))
		return frame_name_of(frame);
	return vt_rb_intern(RSTRING_PTR(label), (size_t)RSTRING_LEN(label));
}

const char *vt_rb_frame_file(VALUE frame)
{
	VALUE path;

	if (NIL_P(frame) || !frame)
		return NULL;
	path = rb_profile_frame_path(frame);
	if (!RB_TYPE_P(path, T_STRING))
		return NULL;
	return vt_rb_intern(RSTRING_PTR(path), (size_t)RSTRING_LEN(path));
}

static const char *class_name_of(VALUE klass, int type)
{
	char buf[1024], path[1000];

	if (!klass)
		snprintf(buf, sizeof(buf), "(hidden %s)", type_name(type));
	else if (class_path(klass, path, sizeof(path)))
		return intern_str(path);
	else
		snprintf(buf, sizeof(buf), "#<Class:0x%016lx> (%s)", (unsigned long)klass, type_name(type));
	return intern_str(buf);
}

/* ---- the tables: open addressing, under the GVL ---- */

#define TABLE(name, type)                                                      \
	static struct type *name;                                              \
	static size_t name##_cap, name##_n

TABLE(classes, vt_rb_class);

struct vt_rb_site_table vt_rb_sites;
static size_t sites_n;

static int sites_grow(void)
{
	struct vt_rb_site_table t = { .mask = vt_rb_sites.mask ? 2 * vt_rb_sites.mask + 1 : 4095 };

	t.bits = vt_rb_sites.bits ? vt_rb_sites.bits + 1 : 12;
	if (!(t.slots = calloc(t.mask + 1, sizeof(*t.slots))))
		return -1;
	for (size_t i = 0; vt_rb_sites.slots && i <= vt_rb_sites.mask; i++) {
		struct vt_rb_site *s = &vt_rb_sites.slots[i];
		size_t j;

		if (!s->klass_name)
			continue;
		for (j = vt_rb_site_slot(&t, s->klass, s->where); t.slots[j].klass_name; j = (j + 1) & t.mask)
			;
		t.slots[j] = *s;
	}
	free(vt_rb_sites.slots);
	vt_rb_sites = t;
	return 0;
}

struct vt_rb_site *vt_rb_site_add(VALUE klass, int type, uintptr_t where, VALUE frame, int line,
				  VALUE code)
{
	struct vt_rb_site *s;
	size_t j;
	char site[1200];
	const char *file;

	if ((!vt_rb_sites.slots || 2 * (sites_n + 1) > vt_rb_sites.mask + 1) && sites_grow())
		return NULL;
	for (j = vt_rb_site_slot(&vt_rb_sites, klass, where); vt_rb_sites.slots[j].klass_name;
	     j = (j + 1) & vt_rb_sites.mask)
		;
	s = &vt_rb_sites.slots[j];
	file = vt_rb_frame_file(frame);
	if (file)
		snprintf(site, sizeof(site), "%s:%d", file, line);
	*s = (struct vt_rb_site){
		.klass = klass,
		.where = where,
		.frame = frame,
		.code = code,
		.serial = vt_rb_site_serial(klass, type),
		.klass_name = class_name_of(klass, type),
		.method = frame_name_of(frame),
		.site = file ? intern_str(site) : NULL,
	};
	if (!s->klass_name || !s->method || (file && !s->site)) {
		s->klass_name = NULL;
		return NULL;
	}
	sites_n++;
	vt_rb_kept_more(frame);
	if (RB_TYPE_P(code, T_IMEMO))
		vt_rb_kept_more(code);
	return s;
}

static int classes_grow(void)
{
	size_t cap = classes_cap ? classes_cap * 2 : 1024;
	struct vt_rb_class *t = calloc(cap, sizeof(*t));

	if (!t)
		return -1;
	for (size_t i = 0; i < classes_cap; i++) {
		size_t j;

		if (!classes[i].name)
			continue;
		for (j = vt_mix64(classes[i].klass) & (cap - 1); t[j].name; j = (j + 1) & (cap - 1))
			;
		t[j] = classes[i];
	}
	free(classes);
	classes = t;
	classes_cap = cap;
	return 0;
}

struct vt_rb_class *vt_rb_class_of(VALUE klass, int type)
{
	uint64_t serial = vt_rb_class_serial(klass);
	size_t j;

	if (classes_cap) {
		for (j = vt_mix64(klass) & (classes_cap - 1); classes[j].name; j = (j + 1) & (classes_cap - 1))
			if (classes[j].klass == klass && classes[j].serial == serial)
				return &classes[j];
	}
	if (2 * (classes_n + 1) > classes_cap && classes_grow())
		return NULL;
	for (j = vt_mix64(klass) & (classes_cap - 1); classes[j].name; j = (j + 1) & (classes_cap - 1))
		;
	classes[j] = (struct vt_rb_class){ .klass = klass, .serial = serial,
					   .name = class_name_of(klass, type) };
	if (!classes[j].name)
		return NULL;
	classes_n++;
	return &classes[j];
}

/* Frames by VALUE, for stacks: name and file, once each. */
struct frame_entry {
	VALUE frame;
	struct vt_rb_frame names;
};
TABLE(frames, frame_entry);

static int frames_grow(void)
{
	size_t cap = frames_cap ? frames_cap * 2 : 1024;
	struct frame_entry *t = calloc(cap, sizeof(*t));

	if (!t)
		return -1;
	for (size_t i = 0; i < frames_cap; i++) {
		size_t j;

		if (!frames[i].names.name)
			continue;
		for (j = vt_mix64(frames[i].frame) & (cap - 1); t[j].names.name; j = (j + 1) & (cap - 1))
			;
		t[j] = frames[i];
	}
	free(frames);
	frames = t;
	frames_cap = cap;
	return 0;
}

static struct frame_entry *frame_entry_of(VALUE frame)
{
	size_t j;

	if (frames_cap)
		for (j = vt_mix64(frame) & (frames_cap - 1); frames[j].names.name; j = (j + 1) & (frames_cap - 1))
			if (frames[j].frame == frame)
				return &frames[j];
	if (2 * (frames_n + 1) > frames_cap && frames_grow())
		return NULL;
	for (j = vt_mix64(frame) & (frames_cap - 1); frames[j].names.name; j = (j + 1) & (frames_cap - 1))
		;
	frames[j] = (struct frame_entry){ frame, { stack_frame_name(frame), vt_rb_frame_file(frame) } };
	if (!frames[j].names.name)
		return NULL;
	frames_n++;
	vt_rb_kept_more(frame);
	return &frames[j];
}

const struct vt_rb_frame *vt_rb_frame_of(VALUE frame)
{
	struct frame_entry *f = frame_entry_of(frame);

	return f ? &f->names : NULL;
}

/* Every frame the tables name, and the frame each site was named from
 * with the instructions its address is in. */
static void mark_names(void)
{
	for (size_t j = 0; j < frames_cap; j++)
		if (frames[j].names.name)
			rb_gc_mark(frames[j].frame);
	for (size_t j = 0; vt_rb_sites.slots && j <= vt_rb_sites.mask; j++)
		if (vt_rb_sites.slots[j].klass_name) {
			rb_gc_mark(vt_rb_sites.slots[j].frame);
			if (RB_TYPE_P(vt_rb_sites.slots[j].code, T_IMEMO))
				rb_gc_mark(vt_rb_sites.slots[j].code);
		}
}

void vt_rb_names_init(void)
{
	vt_rb_keep_init(mark_names);
}
