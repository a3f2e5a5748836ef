/*
 * slots.h: a word for libvmtrace beside each slot of Ruby's heap, for the
 * live heap (slots.c).
 *
 * libvmtrace follows the live heap cheapest through a word kept with each
 * object (vmtrace_alloc_live, docs/live.md "A word per object"): the
 * allocation's key and tick, read back at the free, so neither needs a
 * table of addresses. A Ruby object has no room for it, so the extension
 * keeps one per heap slot here, found from the object's address, with the
 * bytes its allocation counted (a plain object's instance-variable buffer
 * may grow before its free).
 */
#ifndef VMTRACE_RUBY_SLOTS_H
#define VMTRACE_RUBY_SLOTS_H

#include <stdint.h>

#include <ruby/ruby.h>

struct vt_rb_slot {
	uint64_t word;                  /* vmtrace_alloc_live's; 0: none */
	uint64_t born_bytes;            /* the bytes the allocation counted */
};

/* Set up for slots of slot_bytes bytes (Ruby's RVALUE size); once, at load. */
void vt_rb_slots_init(size_t slot_bytes);
/* The slot record of obj, made (zeroed) when new if make; NULL when there
 * is none and make is 0, or no memory. Under the GVL, in a hook: it
 * allocates no Ruby object. */
struct vt_rb_slot *vt_rb_slot_of(VALUE obj, int make);

#endif
