/*
 * ext.c: the vmtrace Ruby extension: libvmtrace inside a stock Ruby,
 * loaded by `require "vmtrace"` (vmtrace.rb), `ruby -rvmtrace` or
 * RUBYOPT, and by `vmtrace record -- ruby ...` on its own.
 *
 * Dormant until a consumer arms it. Loading turns on no hook: the probes'
 * gates (vmtrace/vmtrace.h) are all the state there is, and the kernel
 * raises them when a tracer attaches. A Ruby thread named "vmtrace" waits
 * for that without the GVL, reading the gates every few milliseconds, and
 * when what they want changes it takes the GVL and turns Ruby's internal
 * hooks on or off (hooks.c). A command vmtrace starts has its tracer
 * attached before loading ends, so loading turns the hooks on at once and
 * nothing the program makes is missed: vmtrace either attaches before Ruby
 * runs, or lets Ruby boot meanwhile and holds it here (VMTRACE_HOLD_FD).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <ruby/ruby.h>
#include <ruby/thread.h>
#include <ruby/version.h>

#include "vmtrace/vmtrace.h"

#include "hooks.h"
#include "layout.h"
#include "sampler.h"

#define WATCH_NS 2000000L     /* how often the waiting thread reads the gates */

static unsigned applied;      /* the hooks on now */
static VALUE armed_at = Qnil; /* GC.stat(:total_allocated_objects) as allocations were last armed */
static volatile int watch_stop;
static VALUE watcher;

#define COUNTING (VT_RB_HOOK_NEWOBJ | VT_RB_HOOK_SAMPLED)

static void apply(void)
{
	unsigned want = vt_rb_hooks_wanted();

	if (want != applied) {
		if ((want & COUNTING) && !(applied & COUNTING)) {
			uint64_t made = vt_rb_objects_made();

			armed_at = ULL2NUM(made);
			vmtrace_batch_before(made); /* the tracer's "made before counting began" */
		}
		if (!(want & VT_RB_HOOK_SAMPLED))
			vt_rb_sampler_stop();
		vt_rb_hooks_apply(want);
		if (want & VT_RB_HOOK_SAMPLED)
			vt_rb_sampler_start();
		if (!(want & COUNTING) != !(applied & COUNTING))
			vmtrace_host_armed((want & COUNTING) != 0); /* what a tracer waits for */
		applied = want;
	}
}

/* Ruby 3.1's global serials (libruby exports them): the constant caches'
 * state, bumped when any constant changes, and the class serial, bumped
 * when a class is made or its methods change (its method caches go).
 * Later Rubies keep their caches per class and constant, and export no
 * such count: the probes stay silent there (docs/runtimes.md). */
static vt_rb_serial_t seen_constant_state, seen_class_serial;

/* While a tracer wants them, each change of the serials seen at a look
 * (every WATCH_NS: changes between two looks are one event, with the
 * latest serial). */
#ifndef VT_RB_GLOBAL_SERIALS
static void look_at_serials(void)
{
}
#else
extern vt_rb_serial_t ruby_vm_global_constant_state, ruby_vm_class_serial;

static void look_at_serials(void)
{
	vt_rb_serial_t c = __atomic_load_n(&ruby_vm_global_constant_state, __ATOMIC_RELAXED);
	vt_rb_serial_t k = __atomic_load_n(&ruby_vm_class_serial, __ATOMIC_RELAXED);

	if (c != seen_constant_state && seen_constant_state)
		vmtrace_constant_cache_reset("(every constant cache)", (uint64_t)c);
	if (k != seen_class_serial && seen_class_serial)
		vmtrace_global_serial_inc((uint64_t)k, "class serial (a class made or its methods changed)");
	seen_constant_state = c;
	seen_class_serial = k;
}
#endif

/* Without the GVL: until the gates want other hooks, or Ruby interrupts. */
static void *wait_for_change(void *arg)
{
	struct timespec ts = { 0, WATCH_NS };

	(void)arg;
	while (!watch_stop && vt_rb_hooks_wanted() == applied) {
		if (VMTRACE_ENABLED(CONSTANT_CACHE_RESET) || VMTRACE_ENABLED(GLOBAL_SERIAL_INC))
			look_at_serials();
		else
			seen_constant_state = seen_class_serial = 0;
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void interrupt_wait(void *arg)
{
	(void)arg;
	watch_stop = 1;
}

static VALUE watch(void *arg)
{
	(void)arg;
	for (;;) {
		watch_stop = 0;
		rb_thread_call_without_gvl(wait_for_change, NULL, interrupt_wait, NULL);
		apply();
		rb_thread_check_ints(); /* Thread#kill and the process's exit end it here */
	}
	return Qnil;
}

static void start_watcher(void)
{
	watcher = rb_thread_create(watch, NULL);
	rb_funcall(watcher, rb_intern("name="), 1, rb_str_new_cstr("vmtrace"));
}

/* Vmtrace.armed? -> true while a consumer has allocations counted */
static VALUE armed_p(VALUE self)
{
	(void)self;
	return (applied & COUNTING) ? Qtrue : Qfalse;
}

/* Vmtrace.armed_at_allocations -> Ruby's count of objects made
 * (GC.stat(:total_allocated_objects)) when allocations were last armed, or
 * nil: what a tracer counts since is the count now less this. */
static VALUE armed_at_allocations(VALUE self)
{
	(void)self;
	return armed_at;
}

/* Vmtrace.hooks -> the Ruby hooks on now: [:newobj, :freeobj, :gc, :sampled] */
static VALUE hooks(VALUE self)
{
	VALUE a = rb_ary_new();

	(void)self;
	if (applied & VT_RB_HOOK_NEWOBJ)
		rb_ary_push(a, ID2SYM(rb_intern("newobj")));
	if (applied & VT_RB_HOOK_FREEOBJ)
		rb_ary_push(a, ID2SYM(rb_intern("freeobj")));
	if (applied & VT_RB_HOOK_GC)
		rb_ary_push(a, ID2SYM(rb_intern("gc")));
	if (applied & VT_RB_HOOK_SAMPLED)
		rb_ary_push(a, ID2SYM(rb_intern("sampled")));
	return a;
}

/* Vmtrace.sampler -> what the sampler did since loading: {samples:, late:,
 * hooked:, ticks:, gate:} (sampler.h) */
static VALUE sampler(VALUE self)
{
	struct vt_rb_sampler_stats st;
	VALUE h = rb_hash_new();

	(void)self;
	vt_rb_sampler_stats(&st);
	rb_hash_aset(h, ID2SYM(rb_intern("samples")), ULL2NUM(st.samples));
	rb_hash_aset(h, ID2SYM(rb_intern("late")), ULL2NUM(st.late));
	rb_hash_aset(h, ID2SYM(rb_intern("hooked")), ULL2NUM(st.hooked));
	rb_hash_aset(h, ID2SYM(rb_intern("ticks")), ULL2NUM(st.ticks));
	rb_hash_aset(h, ID2SYM(rb_intern("gate")), st.gate ? Qtrue : Qfalse);
	return h;
}

/* Vmtrace._after_fork: the child's own waiting thread (fork_watch calls
 * it from Process._fork; the parent's died with the fork). */
static VALUE after_fork(VALUE self)
{
	(void)self;
	start_watcher();
	apply();
	return Qnil;
}

/* Vmtrace._flush(last): every thread's counts to the tracer now; last:
 * the process ends (exit!, and Ruby's end after a fatal signal, skip the C
 * exit that makes libvmtrace's last round: exit_bang, flush_at_end). */
static VALUE flush(VALUE self, VALUE last)
{
	(void)self;
	vmtrace_batch_flush(RTEST(last));
	return Qnil;
}

/* Process._fork, prepended: a fork's child has only the forking thread, so
 * it starts its own watcher and follows the gates of its own consumers
 * (Puma, Unicorn, Resque), and so does the bus's thread (events.rb). */
static VALUE fork_watch(VALUE self)
{
	VALUE pid = rb_call_super(0, NULL), mod = rb_const_get(rb_cObject, rb_intern("Vmtrace"));
	ID events = rb_intern("@events");

	(void)self;
	if (pid == INT2FIX(0)) {
		after_fork(mod);
		if (rb_ivar_defined(mod, events) && RTEST(rb_ivar_get(mod, events)))
			rb_funcall(rb_ivar_get(mod, events), rb_intern("after_fork"), 0);
	}
	return pid;
}

/* At Ruby's end: a death by a signal Ruby re-raises at its end skips the
 * C exit where libvmtrace delivers its last counts; hand them over first. */
static void flush_at_end(VALUE unused)
{
	(void)unused;
	vmtrace_batch_flush(1);
}

/* exit!, prepended to Kernel and Process: the last counts to the tracer,
 * then Ruby's exit!, which ends the process without the C exit where
 * libvmtrace would hand them over. In C, so it allocates nothing. */
static VALUE exit_bang(int argc, VALUE *argv, VALUE self)
{
	(void)self;
	vmtrace_batch_flush(1);
	return rb_call_super(argc, argv);
}

static void flush_at_exit_bang(VALUE mod)
{
	VALUE priv = rb_define_module_under(mod, "ExitFlush");
	VALUE pub = rb_define_module_under(mod, "ExitFlushSingleton");

	rb_define_private_method(priv, "exit!", exit_bang, -1);
	rb_define_method(pub, "exit!", exit_bang, -1);
	rb_prepend_module(rb_mKernel, priv);
	rb_prepend_module(rb_singleton_class(rb_mKernel), pub);
	rb_prepend_module(rb_singleton_class(rb_mProcess), pub);
}

/* Vmtrace._gc_listen(on): keep the collector's pauses for the bus */
static VALUE gc_listen(VALUE self, VALUE on)
{
	(void)self;
	vt_rb_gc_listened = RTEST(on);
	apply();
	return Qnil;
}

/* Vmtrace._gc_pauses -> [[kind, start_ns, duration_ns, heap_bytes], ...],
 * the pauses kept since the last call, and the pauses not kept in all */
static VALUE gc_pauses(VALUE self)
{
	struct vt_rb_gc_pause p[64];
	uint64_t dropped;
	unsigned n = vt_rb_gc_take(p, 64, &dropped);
	VALUE a = rb_ary_new_capa(n);

	(void)self;
	for (unsigned i = 0; i < n; i++)
		rb_ary_push(a, rb_ary_new_from_args(4, ID2SYM(rb_intern(p[i].kind ? "major" : "minor")),
						    ULL2NUM(p[i].start_ns), ULL2NUM(p[i].duration_ns),
						    ULL2NUM(p[i].heap_bytes)));
	return rb_ary_new_from_args(2, a, ULL2NUM(dropped));
}

/* The Ruby built for, 100 * major + minor: read from the file by a
 * consumer that loads this extension into a running Ruby. */
__attribute__((visibility("default"))) const unsigned vmtrace_ruby_built_for =
	RUBY_API_VERSION_MAJOR * 100 + RUBY_API_VERSION_MINOR;

/* Refuse a Ruby other than the one built for: the hooks read its layout. */
static void check_version(void)
{
	VALUE v = rb_const_get(rb_cObject, rb_intern("RUBY_VERSION"));
	char want[32];

	snprintf(want, sizeof(want), "%d.%d.", RUBY_API_VERSION_MAJOR, RUBY_API_VERSION_MINOR);
	if (!RB_TYPE_P(v, T_STRING) || strncmp(RSTRING_PTR(v), want, strlen(want)) != 0)
		rb_raise(rb_eLoadError, "vmtrace: this extension is built for Ruby %d.%d, not %s: "
			 "build vmtrace against this Ruby's headers",
			 RUBY_API_VERSION_MAJOR, RUBY_API_VERSION_MINOR, StringValueCStr(v));
}

/* Also called by a tracer that loads the extension into a running Ruby
 * through Ruby's own loader (dln_load, from a postponed job: no Ruby code,
 * no lock, no file read but the extension's), so all a loaded extension
 * needs is set up here, in C; and once only, however it was loaded. */
void Init_vmtrace_ext(void)
{
	static int done;
	VALUE mod;

	/* a job that loads it into a Ruby still booting (one whose core runs
	 * Ruby code before RUBY_VERSION is defined) may run too soon: it then
	 * sets nothing up, and the loader queues it again */
	if (done || !rb_const_defined(rb_cObject, rb_intern("RUBY_VERSION")))
		return;
	done = 1;
	vmtrace_hold_until_attached(); /* a spawned Ruby boots while vmtrace attaches */
	check_version();
	mod = rb_define_module("Vmtrace");
	rb_define_const(mod, "RUBY_BUILT_FOR",
			rb_sprintf("%d.%d", RUBY_API_VERSION_MAJOR, RUBY_API_VERSION_MINOR));
	rb_define_singleton_method(mod, "armed?", armed_p, 0);
	rb_define_singleton_method(mod, "hooks", hooks, 0);
	rb_define_singleton_method(mod, "sampler", sampler, 0);
	rb_define_singleton_method(mod, "armed_at_allocations", armed_at_allocations, 0);
	rb_define_singleton_method(mod, "_after_fork", after_fork, 0);
	rb_define_singleton_method(mod, "_flush", flush, 1);
	rb_define_singleton_method(mod, "_gc_listen", gc_listen, 1);
	rb_define_singleton_method(mod, "_gc_pauses", gc_pauses, 0);
	flush_at_exit_bang(mod);
	rb_define_method(rb_define_module_under(mod, "ForkWatch"), "_fork", fork_watch, 0);
	rb_prepend_module(rb_singleton_class(rb_mProcess), rb_const_get(mod, rb_intern("ForkWatch")));
	rb_set_end_proc(flush_at_end, Qnil);
	vt_rb_hooks_init();
	vt_rb_sampler_init();
	rb_gc_register_address(&armed_at);
	vmtrace_host_arms_later(); /* the watcher turns the hooks on */
	apply();
	start_watcher();
}
