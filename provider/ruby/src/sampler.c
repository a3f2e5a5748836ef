/*
 * sampler.c: sampled allocations at a few percent of Ruby's time.
 *
 * Ruby 3.1 sends every allocation down its slow path while any hook of an
 * internal event (NEWOBJ, or the collector's) is on: an allocation loop
 * runs about 1.2-1.35x with a hook that does nothing. A sampler that hooks
 * every object to count most of them out costs that much. This one keeps
 * allocations on the fast path between samples (3.1; on the other layout
 * rows, which have no gate, the hook counts every object down).
 *
 * Its clock is Ruby's own count of the objects it made
 * (GC.stat(:total_allocated_objects), rb_gc_stat). The sampling points are
 * drawn on it, each object taking `unit` bytes of the clock (the slot
 * size), so every object has the same chance, 1 - exp(-unit/period), of
 * being one, and a sampled object weighs the inverse (docs/sampling.md).
 *
 * The sampler's NEWOBJ hook stays registered; what sends allocations to it
 * is the collector's has_hook bit (layout.h), which Ruby reads at every
 * allocation, and which the hook turns off between samples. Ruby still
 * takes the slow path, and so meets the hook, whenever its cache of free
 * slots runs dry: at least once a heap page of objects (409 in 3.1). That
 * is the sampler's tick: at each, with the next point within a page of
 * objects, the hook turns the bit on and counts down every object to the
 * point; after it, off again until the tick before the next point. No
 * thread, no timer, and every write into Ruby's state is made by Ruby's
 * own thread under the GVL, from the hook.
 *
 * The sampler's hook takes the collector's events as well, which Ruby
 * calls whatever the bit says: hooks.c's own GC hook would be a second.
 *
 * The bit is written only while the sampler's hook is the only one
 * (another tool's hook leaves it to Ruby: every object then comes to the
 * hook, which counts every one down), and only once rb_add_event_hook2 and
 * rb_remove_event_hook were seen to set and clear it and nothing else near
 * it. Without that the hook counts every object down, as exact as the
 * gate, at the cost of the slow path.
 *
 * A point found passed at a tick (a page longer than Ruby says) cannot be
 * taken: it is not counted, and the bytes it stood for go to the report's
 * Lost section (vmtrace_batch_unseen_bytes).
 */
#include <math.h>
#include <stdint.h>

#include <ruby/ruby.h>
#include <ruby/debug.h>
#include <ruby/version.h>

#include "vmtrace/batch.h"
#include "vmtrace/vmtrace.h"

#include "hooks.h"
#include "layout.h"
#include "sampler.h"

enum phase {
	IDLE,                  /* not sampling */
	WAITING,               /* allocations on the fast path: the hook sees the ticks */
	HOOKED,                /* the hook sees every object, counting down to the point */
};

/* The sampler's one hook: allocations, and the collector's events, which
 * its hook takes while sampling (hooks.c's GC hook would be a second). The
 * collector calls these whatever has_hook says. */
#define HOOK_EVENTS (RUBY_INTERNAL_EVENT_NEWOBJ | RUBY_INTERNAL_EVENT_GC_START | \
		     RUBY_INTERNAL_EVENT_GC_ENTER | RUBY_INTERNAL_EVENT_GC_EXIT)

/* All of it under the GVL: the hook, and the calls from ext.c. */
static int phase = IDLE;
static uint64_t next_point;          /* the count at the next sampled object */
static int64_t countdown;            /* objects to the point, counting the one at hand */
static uint64_t period, unit;
static uint64_t page_objects = 409;  /* GC::INTERNAL_CONSTANTS[:HEAP_PAGE_OBJ_LIMIT] */
static int hook_added;
static VALUE sym_total;
static struct vt_rb_sampler_stats stats;
static uint64_t sampled_bytes;       /* of the objects counted: the mean size of one */

uint64_t vt_rb_objects_made(void)
{
	return (uint64_t)rb_gc_stat(sym_total);
}

#define made() vt_rb_objects_made()

/* ---- the gate: Ruby 3.1's has_hook bit ---- */

static uint32_t *gate_flags;           /* the collector's flags word; NULL: no gate */
static uint32_t *gate_events;          /* its hook_events */
static uintptr_t gate_hooks;           /* the main ractor's hook list */
static uintptr_t gate_ours;            /* the sampler's hook, the newest of that list */

#ifdef VT_RB_HAS_HOOK
extern void *ruby_current_vm_ptr, *ruby_single_main_ractor;
#define ONE_RACTOR() (ruby_single_main_ractor != NULL)

/* The sampler's hook is the only one: the newest in the list, the list's
 * events and the collector's its own; and one ractor (Ruby forgets its
 * single one when a second starts), whose hooks are all there are. */
static int gate_alone(void)
{
	return gate_flags && ONE_RACTOR() && vt_rb_word(gate_hooks, VT_RB_HOOKS_HEAD) == gate_ours &&
	       (uint32_t)vt_rb_word(gate_hooks, VT_RB_HOOKS_EVENTS) == HOOK_EVENTS && *gate_events == HOOK_EVENTS;
}

/* Allocations to the hook (open) or on the fast path, while the sampler's
 * hook is alone: with another, the bit is Ruby's. 1 when it is as asked. */
static int gate(int open)
{
	if (!gate_alone())
		return 0;
	if (open)
		*gate_flags |= VT_RB_HAS_HOOK;
	else
		*gate_flags &= ~VT_RB_HAS_HOOK;
	return 1;
}
#else
/* a layout row without the collector's bit (layout.h): the hook counts
 * every object down */
static int gate(int open)
{
	(void)open;
	return 0;
}
#endif

/* ---- the hook ---- */

static void on_newobj_sampled(VALUE data, rb_trace_arg_t *arg);
#define AS_HOOK(fn) ((rb_event_hook_func_t)(void (*)(void))(fn))

static void hook_add(void)
{
	if (!hook_added)
		rb_add_event_hook2(AS_HOOK(on_newobj_sampled), HOOK_EVENTS, Qnil,
				   RUBY_EVENT_HOOK_FLAG_SAFE | RUBY_EVENT_HOOK_FLAG_RAW_ARG);
	hook_added = 1;
}

static void hook_remove(void)
{
	if (hook_added)
		rb_remove_event_hook(AS_HOOK(on_newobj_sampled));
	hook_added = 0;
}

/* Points below count c, passed unseen: not counted, their bytes stated;
 * the next point drawn at or past c. */
static void skip_passed(uint64_t c)
{
	uint64_t n = 0;

	while (next_point < c) {
		n++;
		next_point += vmtrace_sample_gap_objects(period, unit);
	}
	if (n) {
		double chance = -expm1(-(double)unit / (double)period);
		uint64_t mean = stats.samples ? sampled_bytes / stats.samples : unit;

		stats.late += n;
		vmtrace_batch_unseen_bytes((uint64_t)((double)n * (double)mean / chance));
	}
}

/* A tick: the object Ruby's slow path brought while the gate was shut.
 * 1 when the hook is to count it down. */
static int tick(void)
{
	uint64_t c = made(); /* this object's number */
	uint64_t now = vmtrace_sample_period_effective();

	stats.ticks++;
	if (now && now != period) {
		/* another consumer wrote another period: its law from here */
		period = now;
		next_point = c + vmtrace_sample_gap_objects(period, unit);
	}
	skip_passed(c);
	/* the next tick comes within a page of objects: wait for it while the
	 * point is beyond */
	if (next_point - c > page_objects)
		return 0;
	countdown = (int64_t)(next_point - c) + 1;
	phase = HOOKED;
	gate(1);
	return 1;
}

static void on_newobj_sampled(VALUE data, rb_trace_arg_t *arg)
{
	uint64_t gap;

	(void)data;
	if (VMTRACE_UNLIKELY(!(*(const uint32_t *)((uintptr_t)arg + VT_RB_TRACEARG_EVENT) &
			       RUBY_INTERNAL_EVENT_NEWOBJ))) {
		vt_rb_gc_event(arg);
		return;
	}
	stats.hooked++;
	if (phase == WAITING && !tick())
		return;
	if (--countdown > 0)
		return;
	sampled_bytes += vt_rb_count_sampled(arg, period, unit);
	stats.samples++;
	gap = vmtrace_sample_gap_objects(period, unit);
	next_point += gap;
	countdown = (int64_t)gap;
	/* the fast path again, when the next point lies beyond the next tick */
	if (gap > page_objects && gate(0))
		phase = WAITING;
}

/* ---- turning it on and off ---- */

/* The gate, when this Ruby's collector does what layout.h says: no hook of
 * an internal event before (the bit off, no events), and adding the
 * sampler's hook sets the bit and its events, removing it clears both,
 * twice, with the other flags in place unless a collection ran meanwhile
 * (adding allocates), and the count of objects where rb_gc_stat finds it.
 * The hook is left added. 0: no gate (the hook left removed). */
#ifdef VT_RB_HAS_HOOK
/* flags is as before but for the bit, which is `on`; a collection that ran
 * since gc_count may have changed its own flags */
static int only_the_bit(const uint32_t *flags, uint32_t before, size_t gc_count, int on)
{
	uint32_t rest = VT_RB_HAS_HOOK ^ 0xffffffffu;

	if (!(*flags & VT_RB_HAS_HOOK) != !on)
		return 0;
	return (*flags & rest) == (before & rest) || rb_gc_count() != gc_count;
}

static int gate_install(void)
{
	uintptr_t vm = (uintptr_t)ruby_current_vm_ptr, ractor = (uintptr_t)ruby_single_main_ractor;
	uintptr_t os;
	uint32_t *flags, *events, before;
	size_t gcs;

	if (!vm || !ractor || vt_rb_word(vm, VT_RB_VM_MAIN_RACTOR) != ractor ||
	    !(os = vt_rb_word(vm, VT_RB_VM_OBJSPACE)))
		return 0;
	flags = (uint32_t *)(os + VT_RB_OBJSPACE_FLAGS);
	events = (uint32_t *)(os + VT_RB_OBJSPACE_HOOK_EVENTS);
	if ((*flags & VT_RB_HAS_HOOK) || *events || vt_rb_word(os, VT_RB_OBJSPACE_MADE) != made())
		return 0;
	for (int round = 0; round < 2; round++) {
		before = *flags;
		gcs = rb_gc_count();
		hook_add();
		if (!only_the_bit(flags, before, gcs, 1) || *events != HOOK_EVENTS) {
			hook_remove();
			return 0;
		}
		before = *flags;
		gcs = rb_gc_count();
		hook_remove();
		if (!only_the_bit(flags, before, gcs, 0) || *events)
			return 0;
	}
	hook_add();
	gate_hooks = ractor + VT_RB_RACTOR_HOOKS;
	gate_ours = vt_rb_word(gate_hooks, VT_RB_HOOKS_HEAD);
	gate_flags = flags;
	gate_events = events;
	return 1;
}
#else
static int gate_install(void)
{
	return 0;
}
#endif

void vt_rb_sampler_start(void)
{
	uint64_t c;

	if (phase != IDLE)
		return;
	period = vmtrace_sample_period_effective();
	unit = vt_rb_slot_bytes();
	if (!period)
		return;
	c = made();
	next_point = c + vmtrace_sample_gap_objects(period, unit);
	countdown = (int64_t)(next_point - c);
	phase = HOOKED;
	if (!gate_install())
		gate_flags = NULL;
	stats.gate = gate_flags != NULL;
	hook_add();
	/* without the gate the hook counts down every object */
	if (countdown > (int64_t)page_objects && gate(0))
		phase = WAITING;
}

void vt_rb_sampler_stop(void)
{
	phase = IDLE;
	/* Ruby sets has_hook again from the hooks left */
	hook_remove();
	gate_flags = NULL;
}

void vt_rb_sampler_stats(struct vt_rb_sampler_stats *out)
{
	*out = stats;
}

void vt_rb_sampler_init(void)
{
	VALUE consts = rb_const_get(rb_mGC, rb_intern("INTERNAL_CONSTANTS"));
	VALUE page = rb_hash_aref(consts, ID2SYM(rb_intern("HEAP_PAGE_OBJ_LIMIT")));

	if (RB_INTEGER_TYPE_P(page))
		page_objects = NUM2ULL(page);
	sym_total = ID2SYM(rb_intern("total_allocated_objects"));
	rb_gc_stat(sym_total); /* its symbols made here, where allocating is allowed */
}
