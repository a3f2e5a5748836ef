/*
 * names.h: the names libvmtrace's keys carry, made inside Ruby's hooks
 * without allocating a Ruby object.
 *
 * libvmtrace keys an event by three interned C strings (class, method,
 * site), read later by the consumer through their addresses. A Ruby event
 * gives VALUEs instead: the object's class, and the innermost Ruby-level
 * frame (a method entry or an instruction sequence) with its line. The site
 * table maps each (class, frame, line) seen to the three strings and to the
 * key's cache (vmtrace_alloc_cached), so an event after the first costs one
 * lookup. Names are copied into memory that is never freed or moved, once
 * per distinct text.
 *
 * Every call here runs under the GVL (Ruby's hooks do), so the tables take
 * no lock.
 */
#ifndef VMTRACE_RUBY_NAMES_H
#define VMTRACE_RUBY_NAMES_H

#include <stdint.h>

#include <ruby/ruby.h>

#include "vmtrace/vmtrace.h"

#include "layout.h"

/* One (class, place) and what it is counted as: the place is where the
 * innermost Ruby frame was executing (its pc), 0 when no Ruby frame ran. */
struct vt_rb_site {
	VALUE klass;
	uintptr_t where;
	VALUE frame;                  /* named from; kept alive (keep.h) */
	VALUE code;                   /* the instructions where is in; kept alive, so where stays theirs */
	uint64_t serial;              /* the class's serial: another class at klass's address misses
					 (vt_rb_site_serial: a hidden object's type) */
	const char *klass_name, *method, *site;
	struct vmtrace_key_cache cache;  /* only ever for this site's three names: its id needs no check */
};

/* One class and what its frees are counted as. */
struct vt_rb_class {
	VALUE klass;
	uint64_t serial;
	const char *name;
	struct vmtrace_key_cache free_cache;
};

/* What tells klass from another class once at its address (layout.h):
 * its serial, or where there is none its path; 0 for no class. Inline:
 * each object's site lookup reads it. */
static inline uint64_t vt_rb_class_serial(VALUE klass)
{
#ifdef VT_RB_CLASS_SERIAL
	return klass ? (uint64_t)vt_rb_word(klass, VT_RB_CLASS_SERIAL) : 0;
#else
	return klass ? (uint64_t)vt_rb_word(klass, VT_RB_CLASS_PATH) : 0;
#endif
}

/* The sites by (class, place): open addressing from a multiplicative
 * hash's top bits (one multiply: every object looks its site up). */
struct vt_rb_site_table {
	struct vt_rb_site *slots;     /* mask + 1 of them; NULL before the first site */
	size_t mask;
	unsigned bits;                /* log2(mask + 1) */
};
extern struct vt_rb_site_table vt_rb_sites;

static inline size_t vt_rb_site_slot(const struct vt_rb_site_table *t, VALUE klass, uintptr_t where)
{
	return (size_t)((((uint64_t)klass * 31) ^ (uint64_t)where) * 0x9E3779B97F4A7C15ull >> (64 - t->bits));
}

/* What tells classes apart at one address: a class's serial; for a hidden
 * object (klass 0) its Ruby type, which names it ("(hidden imemo)"). */
static inline uint64_t vt_rb_site_serial(VALUE klass, int type)
{
	return klass ? vt_rb_class_serial(klass) : (uint64_t)type;
}

/* The site of an allocation of an object of klass (0: a hidden object of
 * Ruby type `type`) made where `where` (layout.h), or NULL when it has none
 * yet. Inline: every object's. */
static inline struct vt_rb_site *vt_rb_site_find(VALUE klass, int type, uintptr_t where)
{
	const struct vt_rb_site_table *t = &vt_rb_sites;
	uint64_t serial;

	if (__builtin_expect(!t->slots, 0))
		return NULL;
	serial = vt_rb_site_serial(klass, type);
	for (size_t j = vt_rb_site_slot(t, klass, where); t->slots[j].klass_name; j = (j + 1) & t->mask) {
		struct vt_rb_site *s = &t->slots[j];

		if (s->klass == klass && s->where == where && s->serial == serial)
			return s;
	}
	return NULL;
}

/* ... made, of Ruby type `type`, named from frame:line (rb_profile_frames;
 * Qnil: no Ruby frame), where pointing into the instruction sequence code
 * (kept alive with frame). NULL only when memory ran out. */
struct vt_rb_site *vt_rb_site_add(VALUE klass, int type, uintptr_t where, VALUE frame, int line,
				  VALUE code);

/* The class entry of klass (for frees), or NULL when memory ran out. */
struct vt_rb_class *vt_rb_class_of(VALUE klass, int type);

/* A frame of a stack: its name, "Owner#method" ("Owner.method" for a
 * singleton's) or the label of a block or file ("block in make",
 * "<main>"), and its file (NULL when it has none), interned. */
struct vt_rb_frame {
	const char *name, *file;
};
const struct vt_rb_frame *vt_rb_frame_of(VALUE frame);
const char *vt_rb_frame_file(VALUE frame);

/* Keep what the tables name alive (keep.h); once, at load. */
void vt_rb_names_init(void);

/* A string interned: the same address for the same text, for ever. */
const char *vt_rb_intern(const char *s, size_t len);

#endif
