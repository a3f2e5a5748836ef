/*
 * hooks.c: Ruby's internal events, counted into libvmtrace.
 *
 * NEWOBJ: each new object, by (class, innermost Ruby-level method, its
 * file:line), through the key cache of its site (names.h), so an armed
 * batch counts it with a lookup and two adds. Bytes are those the uprobe
 * path counts: the slot, and for a plain object the instance-variable
 * buffer its class gives it at birth. With --stack vm, under the thread's
 * Ruby stack (rb_stacks.c).
 * FREEOBJ (only while frees are wanted): each freed object by class, with
 * the bytes it held.
 * While the live heap is followed, each object's allocation leaves a word
 * in its slot's record (slots.h) that its free reads back: the live heap
 * by key and tick, with no table of addresses (docs/live.md). Objects
 * whose allocation did not take the word path (--stack vm, a sampling or
 * per-event tracer) leave 0 there and take the address path.
 * GC_START/GC_ENTER/GC_EXIT: each stop of the world Ruby makes for its
 * collector (a whole collection, or one step of incremental marking or
 * lazy sweeping) is one gc__begin/gc__end pair, of the kind of its cycle.
 *
 * Hooks run under the GVL and may not allocate a Ruby object or raise:
 * every Ruby call here only reads. They are raw event hooks
 * (rb_add_event_hook2 with RUBY_EVENT_HOOK_FLAG_RAW_ARG): Ruby hands each
 * the event's argument directly, with no TracePoint object to check and
 * unwrap at every object.
 */
#include <stdint.h>

#include <ruby/ruby.h>
#include <ruby/debug.h>

#include "hooks.h"
#include "layout.h"
#include "names.h"
#include "primitives.h"
#include "rb_stacks.h"
#include "slots.h"

static size_t slot_bytes = 40;   /* GC::INTERNAL_CONSTANTS[:RVALUE_SIZE] (3.4: BASE_SLOT_SIZE), read at init */
static VALUE sym_major_by, sym_heap_live_slots;
static int gc_kind;              /* the running cycle's: VMTRACE_GC_MINOR or _MAJOR */

/* what an allocation is counted under when the tables could not grow */
static struct vmtrace_key_cache oom_cache;
#define OOM_CLASS "(vmtrace: out of memory for names)"

/* Where the innermost frame running Ruby code is executing (its pc), read
 * from the frames of the execution context ec (layout.h); 0 when no frame
 * runs Ruby code. Objects a C method makes belong to its Ruby caller. */
static uintptr_t where_frame(uintptr_t ec)
{
	uintptr_t cfp, end;

	if (!ec)
		return 0;
	cfp = vt_rb_word(ec, VT_RB_EC_CFP);
	end = vt_rb_word(ec, VT_RB_EC_STACK) + vt_rb_word(ec, VT_RB_EC_STACK_SIZE) * sizeof(VALUE);
	/* a C frame is pushed with no pc and never gets one (rb_stacks.c) */
	for (; cfp && cfp + VT_RB_CFP_SIZE <= end; cfp += VT_RB_CFP_SIZE)
		if (vt_rb_word(cfp, VT_RB_CFP_PC))
			return cfp;
	return 0;
}

static uintptr_t ruby_where(uintptr_t ec)
{
	uintptr_t cfp = where_frame(ec);

	return cfp ? vt_rb_word(cfp, VT_RB_CFP_PC) : 0;
}

/* The instruction sequence where points into, which the site keeps alive
 * so no other code comes to that address: it may be a frame that
 * rb_profile_frames does not show (a file being required runs its
 * top level under the require's line), and so not the frame that names
 * the site. */
static VALUE where_code(uintptr_t ec)
{
	uintptr_t cfp = where_frame(ec);

	return cfp ? (VALUE)vt_rb_word(cfp, VT_RB_CFP_ISEQ) : Qnil;
}

/* The innermost frame running Ruby code and its line: C methods have line
 * 0 in rb_profile_frames; objects they make belong to their Ruby caller,
 * as ObjectSpace's allocation_sourceline says. */
static VALUE ruby_frame(int *line)
{
	VALUE f[16];
	int l[16], n = rb_profile_frames(0, 1, f, l);

	if (n == 1 && l[0] > 0) {
		*line = l[0];
		return f[0];
	}
	n = rb_profile_frames(0, 16, f, l);
	for (int i = 0; i < n; i++)
		if (l[i] > 0) {
			*line = l[i];
			return f[i];
		}
	*line = 0;
	return Qnil;
}

/* Bytes of an instance-variable buffer made with a plain object of klass:
 * Ruby gives one at birth when the class knows more ivars than fit in the
 * slot (rb_class_allocate_instance). */
#ifdef VT_RB_EXT_IV_INDEX_TBL
static uint64_t ivar_buffer_at_birth(VALUE klass)
{
	uintptr_t ext, tbl;
	uint64_t n;

	if (!klass || !(ext = vt_rb_word(klass, VT_RB_CLASS_EXT)) ||
	    !(tbl = vt_rb_word(ext, VT_RB_EXT_IV_INDEX_TBL)))
		return 0;
	n = (uint64_t)vt_rb_word(tbl, VT_RB_ST_NUM_ENTRIES);
	return n > VT_RB_EMBED_LEN_MAX ? n * sizeof(VALUE) : 0;
}
#endif

#ifdef VT_RB_SLOT_SIZE_CALL
size_t rb_gc_obj_slot_size(VALUE obj); /* exported by libruby, declared in its internal gc.h */
#endif

static int stacks_armed(void)
{
	return vmtrace__gate_table()[VMTRACE_PROBE_STACKS_ARMED].part.semaphore != 0;
}

static int live_armed(void)
{
	return vmtrace__gate_table()[VMTRACE_PROBE_LIVE_BATCH].part.semaphore != 0;
}

/* Only sampled allocations are wanted: a period is in force, and neither
 * the live heap nor a subscriber of the bus needs every object. */
int vt_rb_sampled_by_count(void)
{
	return vmtrace_sample_period_effective() && !live_armed() &&
	       !vmtrace__gate_table()[VMTRACE_PROBE_OBJECT_ALLOC].part.subscribers;
}

/* ---- the hooks ---- */

/* A NEWOBJ or FREEOBJ event's object, read from its argument (layout.h):
 * rb_tracearg_object() is a call into libruby that checks the event kind
 * the hook was registered for. */
static VALUE event_object(rb_trace_arg_t *arg)
{
	return (VALUE)vt_rb_word((uintptr_t)arg, VT_RB_TRACEARG_DATA);
}

/* 1 when the object at s was counted by its key alone: only the batch
 * counts allocations (no stacks, live heap, sampling or per-event
 * tracer) and s's key is cached. What vmtrace_alloc_cached() does first,
 * here so the common case takes no more; a site's cache serves its one
 * key for ever (names.h), so its id needs no check. */
static inline int counted_by_key(struct vt_rb_site *s, uint64_t bytes)
{
	const vmtrace_gate *g = vmtrace__gate_table();

	return VMTRACE__ALLOC_KEYED_OK(g[VMTRACE_PROBE_OBJECT_ALLOC].any) &&
	       g[VMTRACE_PROBE_ALLOC_BATCH].part.semaphore && vmtrace__owned_count(&s->cache, bytes);
}

/* The rest of an object's counting, out of the common path so that path
 * keeps few registers and no frame: a site's first object (its names),
 * the whole stack, the live heap, sampling, a per-event tracer. */
/* What every counting path past the cached key does first: a site's first
 * object names it, once; with stacks armed, the thread's Ruby stack is
 * taken. The site, NULL when the tables could not grow. */
static struct vt_rb_site *site_and_stack(VALUE klass, int type, uintptr_t ec, uintptr_t where,
					 struct vt_rb_site *s)
{
	VALUE frame;
	int line;

	if (VMTRACE_UNLIKELY(!s)) {
		frame = ruby_frame(&line);
		s = vt_rb_site_add(klass, type, where, where ? frame : Qnil, line,
				   where ? where_code(ec) : Qnil);
	}
	if (VMTRACE_UNLIKELY(stacks_armed()))
		vt_rb_take_stack(ec);
	return s;
}

static __attribute__((noinline)) void newobj_rest(VALUE obj, VALUE klass, int type, uintptr_t ec,
						  uintptr_t where, struct vt_rb_site *s, uint64_t bytes)
{
	struct vt_rb_slot *slot;

	s = site_and_stack(klass, type, ec, where, s);
	if (VMTRACE_UNLIKELY(live_armed()) && (slot = vt_rb_slot_of(obj, 1))) {
		slot->word = 0;
		slot->born_bytes = bytes;
		if (s) {
			vmtrace_alloc_live(&slot->word, &s->cache, s->klass_name, s->method, bytes, s->site,
					   (void *)obj);
			return;
		}
	}
	if (VMTRACE_UNLIKELY(!s)) {
		vmtrace_alloc_cached(&oom_cache, OOM_CLASS, NULL, bytes, NULL, (void *)obj);
		return;
	}
	vmtrace_alloc_cached(&s->cache, s->klass_name, s->method, bytes, s->site, (void *)obj);
}

/* What a NEWOBJ event's object is counted under. */
struct newobj {
	VALUE obj, klass;
	int type;
	uintptr_t ec, where;           /* the thread's context; its innermost Ruby frame's pc */
	uint64_t bytes;
	struct vt_rb_site *s;          /* NULL: a site not seen yet */
};

static inline void newobj_read(rb_trace_arg_t *arg, struct newobj *n)
{
	n->obj = event_object(arg);
	n->klass = RBASIC(n->obj)->klass;
	n->type = RB_BUILTIN_TYPE(n->obj);
	n->bytes = slot_bytes;
	/* an internal object's class word may hold anything (imemo keeps data
	 * there): only a class names a class */
	if (n->type == T_IMEMO || (n->klass && !RB_TYPE_P(n->klass, T_CLASS)))
		n->klass = 0;
	n->ec = vt_rb_word((uintptr_t)arg, VT_RB_TRACEARG_EC);
	n->where = ruby_where(n->ec);
	n->s = vt_rb_site_find(n->klass, n->type, n->where);
#ifdef VT_RB_SLOT_SIZE_CALL
	n->bytes = rb_gc_obj_slot_size(n->obj);
#else
	if (n->type == T_OBJECT)
		n->bytes += ivar_buffer_at_birth(n->klass);
#endif
}

static void on_newobj(VALUE data, rb_trace_arg_t *arg)
{
	struct newobj n;

	(void)data;
	newobj_read(arg, &n);
	if (__builtin_expect(n.s != NULL, 1) && counted_by_key(n.s, n.bytes))
		return;
	newobj_rest(n.obj, n.klass, n.type, n.ec, n.where, n.s, n.bytes);
}

uint64_t vt_rb_count_sampled(rb_trace_arg_t *arg, uint64_t period, uint64_t unit)
{
	struct newobj n;

	newobj_read(arg, &n);
	n.s = site_and_stack(n.klass, n.type, n.ec, n.where, n.s);
	if (VMTRACE_UNLIKELY(!n.s))
		vmtrace_alloc_sampled_unit(OOM_CLASS, NULL, n.bytes, NULL, (void *)n.obj, period, unit);
	else
		vmtrace_alloc_sampled_unit(n.s->klass_name, n.s->method, n.bytes, n.s->site, (void *)n.obj,
					   period, unit);
	return n.bytes;
}

uint64_t vt_rb_slot_bytes(void)
{
	return slot_bytes;
}

static void on_freeobj(VALUE data, rb_trace_arg_t *arg)
{
	VALUE obj = event_object(arg);
	VALUE klass = RBASIC(obj)->klass;
	int type = RB_BUILTIN_TYPE(obj);
	uint64_t bytes = slot_bytes;
	struct vt_rb_class *c;
	struct vt_rb_slot *slot;

	(void)data;
	/* a class swept before its instances in the same collection is no
	 * class any more: its objects are counted as hidden ones */
	if (type == T_IMEMO || (klass && !RB_TYPE_P(klass, T_CLASS)))
		klass = 0;
#ifdef VT_RB_SLOT_SIZE_CALL
	bytes = rb_gc_obj_slot_size(obj); /* as at its birth: buffers grown since are not counted there */
#else
	if (type == T_OBJECT && !RB_FL_TEST_RAW(obj, ROBJECT_EMBED))
		bytes += (uint64_t)ROBJECT(obj)->as.heap.numiv * sizeof(VALUE);
#endif
	c = vt_rb_class_of(klass, type);
	if (VMTRACE_UNLIKELY(live_armed()) && (slot = vt_rb_slot_of(obj, 0)) && slot->word) {
		uint64_t word = slot->word;

		slot->word = 0;
		if (c) {
			vmtrace_free_live_born(word, &c->free_cache, c->name, bytes, slot->born_bytes,
					       (void *)obj);
			return;
		}
	}
	if (VMTRACE_UNLIKELY(!c)) {
		vmtrace_free_cached(&oom_cache, OOM_CLASS, bytes, (void *)obj);
		return;
	}
	vmtrace_free_cached(&c->free_cache, c->name, bytes, (void *)obj);
}

static uint64_t heap_bytes(void)
{
	return (uint64_t)rb_gc_stat(sym_heap_live_slots) * slot_bytes;
}

/* Pauses for the Ruby bus's :gc subscribers (vmtrace.rb), kept here under
 * the GVL until its thread takes them: a hook cannot call Ruby. */
#define GC_RING 256
static struct vt_rb_gc_pause gc_ring[GC_RING];
static unsigned gc_head, gc_n;
static uint64_t gc_ring_dropped, gc_entered_ns;
volatile int vt_rb_gc_listened;

static void gc_keep(uint64_t end_ns, uint64_t heap)
{
	if (gc_n == GC_RING) {
		gc_ring_dropped++;
		return;
	}
	gc_ring[(gc_head + gc_n++) % GC_RING] = (struct vt_rb_gc_pause){
		gc_kind, gc_entered_ns, end_ns - gc_entered_ns, heap };
}

unsigned vt_rb_gc_take(struct vt_rb_gc_pause *out, unsigned max, uint64_t *dropped)
{
	unsigned n = 0;

	while (n < max && gc_n) {
		out[n++] = gc_ring[gc_head];
		gc_head = (gc_head + 1) % GC_RING;
		gc_n--;
	}
	*dropped = gc_ring_dropped;
	return n;
}

void vt_rb_gc_event(rb_trace_arg_t *arg)
{
	rb_event_flag_t ev = rb_tracearg_event_flag(arg);

	if (ev & RUBY_INTERNAL_EVENT_GC_START)
		gc_kind = NIL_P(rb_gc_latest_gc_info(sym_major_by)) ? VMTRACE_GC_MINOR : VMTRACE_GC_MAJOR;
	if (ev & RUBY_INTERNAL_EVENT_GC_ENTER) {
		if (vt_rb_gc_listened)
			gc_entered_ns = vmtrace__now_ns();
		vmtrace_gc_begin(gc_kind, heap_bytes());
	}
	if (ev & RUBY_INTERNAL_EVENT_GC_EXIT) {
		uint64_t heap = heap_bytes();

		vmtrace_gc_end(gc_kind, heap);
		if (vt_rb_gc_listened)
			gc_keep(vmtrace__now_ns(), heap);
	}
}

static void on_gc(VALUE data, rb_trace_arg_t *arg)
{
	(void)data;
	vt_rb_gc_event(arg);
}

typedef void (*raw_hook_fn)(VALUE data, rb_trace_arg_t *arg);
/* Ruby takes a raw hook as its general hook type (the flag tells them
 * apart); void (*)(void) is the cast C allows between the two. */
#define AS_HOOK(fn) ((rb_event_hook_func_t)(void (*)(void))(fn))

/* The hooks: what each is called on, and whether it is on now. */
static const struct hook {
	raw_hook_fn fn;
	rb_event_flag_t events;
	unsigned bit;
} hooks[] = {
	{ on_newobj, RUBY_INTERNAL_EVENT_NEWOBJ, VT_RB_HOOK_NEWOBJ },
	{ on_freeobj, RUBY_INTERNAL_EVENT_FREEOBJ, VT_RB_HOOK_FREEOBJ },
	{ on_gc, RUBY_INTERNAL_EVENT_GC_START | RUBY_INTERNAL_EVENT_GC_ENTER | RUBY_INTERNAL_EVENT_GC_EXIT,
	  VT_RB_HOOK_GC },
};
static unsigned hooks_on;

void vt_rb_hooks_init(void)
{
	VALUE consts = rb_const_get(rb_mGC, rb_intern("INTERNAL_CONSTANTS"));
	VALUE rvalue = rb_hash_aref(consts, ID2SYM(rb_intern("RVALUE_SIZE")));

	if (NIL_P(rvalue)) /* 3.4 names it so */
		rvalue = rb_hash_aref(consts, ID2SYM(rb_intern("BASE_SLOT_SIZE")));
	if (RB_INTEGER_TYPE_P(rvalue))
		slot_bytes = NUM2SIZET(rvalue);
	vt_rb_slots_init(slot_bytes);
	sym_major_by = ID2SYM(rb_intern("major_by"));
	sym_heap_live_slots = ID2SYM(rb_intern("heap_live_slots"));
	/* both make their symbols at their first call: make it here, where
	 * allocating is allowed, not in a GC hook where it is a [BUG] */
	rb_gc_stat(sym_heap_live_slots);
	rb_gc_latest_gc_info(sym_major_by);
	vt_rb_names_init();
	vt_rb_stacks_describe();
}

static void turn(const struct hook *h, int on)
{
	if (on && !(hooks_on & h->bit)) {
		rb_add_event_hook2(AS_HOOK(h->fn), h->events, Qnil,
				   RUBY_EVENT_HOOK_FLAG_SAFE | RUBY_EVENT_HOOK_FLAG_RAW_ARG);
		hooks_on |= h->bit;
	} else if (!on && (hooks_on & h->bit)) {
		rb_remove_event_hook(AS_HOOK(h->fn));
		hooks_on &= ~h->bit;
	}
}

unsigned vt_rb_hooks_wanted(void)
{
	unsigned want = 0;

	if (VMTRACE_ALLOC_ENABLED())
		want |= vt_rb_sampled_by_count() ? VT_RB_HOOK_SAMPLED : VT_RB_HOOK_NEWOBJ;
	if (VMTRACE_FREE_ENABLED())
		want |= VT_RB_HOOK_FREEOBJ;
	/* sampled, the sampler's one hook takes the collector's events too
	 * (sampler.c: its gate needs its hook alone) */
	if ((VMTRACE_ENABLED(GC_BEGIN) || VMTRACE_ENABLED(GC_END) || vt_rb_gc_listened) &&
	    !(want & VT_RB_HOOK_SAMPLED))
		want |= VT_RB_HOOK_GC;
	return want;
}

void vt_rb_hooks_apply(unsigned want)
{
	for (size_t i = 0; i < sizeof(hooks) / sizeof(hooks[0]); i++)
		turn(&hooks[i], (want & hooks[i].bit) != 0);
}
