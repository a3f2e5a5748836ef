/*
 * module.c: vmtrace's CPython extension (`import vmtrace`): libvmtrace
 * inside CPython 3.11 to 3.14 (frames.h), counting the bytes Python's
 * allocators give, by function and line.
 *
 * Dormant until a consumer arms it: importing installs nothing. A thread of
 * the extension's own (no Python thread, no GIL) reads the probes' gates
 * every 2 ms; when allocations are wanted or no longer, it asks the
 * interpreter (Py_AddPendingCall, safe from any thread) to run apply() in
 * the main thread with the GIL, which wraps the object and memory domains'
 * allocators (PyMem_SetAllocator, as tracemalloc does) or puts back the ones
 * it found.
 *
 * Armed, each allocation through those domains counts its requested size
 * (the bytes tracemalloc counts) under the Python function running and the
 * line it is at (the thread's innermost interpreter frame), through
 * libvmtrace's cached keys. The allocator runs before an object's type is
 * set: the block is held (below, "held") until its object is made, told by
 * the reference tracer on 3.13 and newer, read from its header at the
 * thread's next allocation on 3.11 and 3.12 (header_types.h); a block that
 * becomes no object is counted under its domain, "(object memory)" or
 * "(PyMem memory)", never a guessed type. A realloc counts its new size. The
 * hook makes no Python object: a site's names are made once, at its first
 * allocation, with the hook's own allocations passed through uncounted.
 */
#include "frames.h" /* CPython's headers first */

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vmtrace/vmtrace.h"
#include "blocks.h"
#include "frame_chain.h"
#include "header_types.h"
#include "intern.h"
#include "sites.h"
#include "typed.h"

#define WATCH_NS 2000000L
#define OBJ_CLASS "(object memory)"
#define MEM_CLASS "(PyMem memory)"
#define OOM_CLASS "(vmtrace: out of memory for names)"

/* blocks are counted from when frees were wanted (blocks.h) */
static int sizes_on;

/* ---- the allocator wrappers ---- */

static PyMemAllocatorEx orig_obj, orig_mem;
static int in_hook; /* under the GIL: the hook's own allocations pass through */
static struct vmtrace_key_cache oom_cache, free_obj_cache, free_mem_cache;

/* One allocation at site s (NULL: no memory for its names) under its type
 * t, or its domain when t is NULL; frees wanted, its block keeps the word of
 * libvmtrace's live heap with its size (put after the names: making them
 * may free blocks, which moves others in the table). */
static void count_at(struct site *s, struct typed *t, int obj, size_t size, void *p)
{
	struct vmtrace_key_cache *cache = t ? &t->cache : !s ? &oom_cache : obj ? &s->obj_cache : &s->mem_cache;
	const char *klass = t ? t->name : !s ? OOM_CLASS : obj ? OBJ_CLASS : MEM_CLASS;
	const char *method = s ? s->method : NULL, *site = s ? s->file_line : NULL;

	if (sizes_on) {
		uint64_t word = 0;

		vmtrace_alloc_live(&word, cache, klass, method, size, site, p);
		block_put(p, size, obj, word);
	} else {
		vmtrace_alloc_cached(cache, klass, method, size, site, p);
	}
}

/* An object-domain block counted in, its type not yet known: the type is
 * set right after the allocator returns. With the reference tracer (3.13
 * and newer), its next new object, when made in this block, gives it;
 * before it, the thread's next allocation or the block's free reads it
 * from the header (header_types.h). No bytecode runs between the two, so
 * the site and chain found at the allocation are still the thread's. A
 * block that became no object, and one the tracer saw nothing made in
 * before the thread's next allocation, a free, a flush or the thread's end,
 * counts as object memory. Per thread: another thread may take the GIL
 * between an allocation that becomes no object and that thread's next
 * one. */
struct held {
	void *p;
	size_t size;
	struct site *site;
	struct pyframe *top;          /* its chain, when stacks are wanted */
	unsigned armed;               /* the arming it was made in (armings) */
#if VT_TYPED_BY_TRACER
	unsigned long seen;           /* allocations_seen when it was held */
#endif
};
static unsigned armings;              /* counts the wrappers put in and taken out: a block held
					 * from an earlier arming, in a thread that made no
					 * allocation since, is dropped unread */
static __thread struct held held __attribute__((tls_model("initial-exec")));
static pthread_key_t held_key;        /* counts a thread's held block as it ends */
static __thread int held_keyed __attribute__((tls_model("initial-exec"))); /* held_key set */

static const char *type_name(const void *type)
{
	/* a reference: while its name is kept, no other type takes its address */
	Py_INCREF((PyObject *)type);
	return keep(((PyTypeObject *)type)->tp_name);
}

#if VT_TYPED_BY_TRACER
/* Sampled, with no other tracer, ours is set only while a block is held:
 * CPython calls a tracer at every object's creation and destruction, free
 * lists' included, which costs more than the few blocks sampled in (perf:
 * 2.5% of pydoc's samples in ref_traced alone). Exact, a block is held at
 * nearly every allocation, so it stays set. Under the GIL. */
static int tracer_lazy;               /* ours comes and goes with the blocks held */
static unsigned holders;              /* threads holding a block of this arming (atomic: a
					 * thread ends without the GIL) */

static int ref_traced(PyObject *op, PyRefTracerEvent event, void *data);

/* Every thread's allocations counted so far (under the GIL). Exact, frees
 * are not seen (frees_matter()), so a block that became no object may be
 * freed while still held, another thread may get that memory, make an
 * object in it and put it in a free list, and this thread may take it back
 * with no allocation of its own between: an object made after any other
 * allocation is never the held block's (none is made while another thread
 * runs between a block's allocation and its object). */
static unsigned long allocations_seen;

static void hold_begin(void)
{
	void *data;

	/* a tracer set since by another is left alone: the block is then
	 * counted as object memory */
	if (tracer_lazy && __atomic_fetch_add(&holders, 1, __ATOMIC_RELAXED) == 0 && !PyRefTracer_GetTracer(&data))
		PyRefTracer_SetTracer(ref_traced, NULL);
}

static void hold_end(void)
{
	void *data;

	/* a thread ending holds no GIL: ours stays until the next hold ends */
	if (tracer_lazy && __atomic_sub_fetch(&holders, 1, __ATOMIC_RELAXED) == 0 && PyGILState_Check() &&
	    PyRefTracer_GetTracer(&data) == ref_traced)
		PyRefTracer_SetTracer(NULL, NULL);
}
#else
#define hold_end() ((void)0)
#endif

/* the entry of type at site s: the site's last, or the table's */
static struct typed *typed_at(struct site *s, PyTypeObject *type)
{
	if (s->last_typed && s->last_typed->type == type)
		return s->last_typed;
	return s->last_typed = typed_of(s, type, type_name);
}

static void held_count(PyTypeObject *type)
{
	struct held h = held;
	struct pystack *st = h.top ? self_stack : NULL;
	int was_in_hook = in_hook;

	held.p = NULL;
	if (h.armed != armings)
		return;
	hold_end();
	in_hook = 1;
	if (st)
		st->top = h.top;
	count_at(h.site, type && h.site ? typed_at(h.site, type) : NULL, 1, h.size, h.p);
	if (st)
		st->top = NULL;
	in_hook = was_in_hook;
}

#if VT_TYPED_BY_TRACER
static PyRefTracer prev_tracer;       /* the tracer found when armed, called on from ours */
static void *prev_tracer_data;

static int ref_traced(PyObject *op, PyRefTracerEvent event, void *data)
{
	(void)data;
	if (event == PyRefTracer_CREATE && held.p && !in_hook) {
		uintptr_t off = (uintptr_t)op - (uintptr_t)held.p;
		int in_block = off <= VT_PRE_HEADER_MAX && off + sizeof(PyObject) <= held.size;

		held_count(in_block && held.seen == allocations_seen ? Py_TYPE(op) : NULL);
	}
	return prev_tracer ? prev_tracer(op, event, prev_tracer_data) : 0;
}

/* the held block counted now: its type was told when its object was made */
#define held_settle(dying) held_count(NULL)
#else
/* the held block counted now, its type read from its header: only while
 * the block is surely the thread's, allocated in this arming and not freed */
static void held_settle(int dying)
{
	const struct typed *last = held.site ? held.site->last_typed : NULL;

	held_count(held.armed == armings ? header_type(held.p, held.size, dying, last ? last->type : NULL) : NULL);
}
#endif

static void held_at_thread_end(void *unused)
{
	(void)unused;
	held_keyed = 0; /* an allocation in a later destructor sets it again */
	held.top = NULL; /* the chain goes with the thread */
	if (held.p)
		held_settle(0);
}

/* a block going (freed, or moved by realloc): a block held is counted first */
#define HELD_GOING(blk) \
	do { \
		if (held.p && held.p == (blk)) \
			held_settle(1); \
	} while (0)
/* a flush, or the wrappers taken out */
#define HELD_NOW() \
	do { \
		if (held.p) \
			held_settle(0); \
	} while (0)

static __attribute__((noinline)) void count_slow(int obj, size_t size, void *p)
{
	PyThreadState *ts;
	_PyInterpreterFrame *f = NULL;
	struct pystack *st = NULL;
	struct site *s;

#if VT_TYPED_BY_TRACER
	allocations_seen++;
	if (held.p)
		held_count(NULL); /* no object was made in it */
#endif
	/* count() let it through: a block, not the hook's own, and sampled in
	 * unless frees are wanted, whose sizes are kept in any case */
	if (sizes_on && vmtrace_alloc_skipped(size)) {
		block_put(p, size, obj, 0);
		return;
	}
	in_hook = 1;
	ts = VT_TSTATE(); /* inline: the allocator's callers hold the GIL */
	if (ts)
		f = vt_frame_python(VT_CURRENT_FRAME(ts));
	if (VMTRACE_UNLIKELY(vmtrace__gate_table()[VMTRACE_PROBE_STACKS_ARMED].part.semaphore) &&
	    (st = thread_stack()))
		st->top = chain_of(st, f);
	/* the chain's innermost frame has the allocation's site, unless f is
	 * a frame not started, which the chain leaves out */
	s = st && st->top && st->inner_from == f ? st->inner->site : site_of(f);
	if (obj) {
		if (!held_keyed)
			held_keyed = pthread_setspecific(held_key, &held) == 0;
		held = (struct held){ p, size, s, st ? st->top : NULL, armings };
#if VT_TYPED_BY_TRACER
		held.seen = allocations_seen;
		hold_begin();
#endif
		if (st)
			st->top = NULL;
		in_hook = 0;
		return;
	}
	count_at(s, NULL, obj, size, p);
	if (st)
		st->top = NULL;
	in_hook = 0;
}

/* An allocation through a wrapped domain; sampled out, it costs the
 * countdown alone, inline in the wrapper. */
static inline __attribute__((always_inline)) void count(int obj, size_t size, void *p)
{
#if !VT_TYPED_BY_TRACER
	if (VMTRACE_UNLIKELY(held.p != NULL) && !in_hook)
		held_settle(0); /* its object is made by now, or never will be */
#endif
	if (p && !in_hook && (VMTRACE_UNLIKELY(sizes_on) || !vmtrace_alloc_skipped(size)))
		count_slow(obj, size, p);
}

/* A block goes: its free, with the size it was allocated with. */
static __attribute__((noinline)) void uncount_slow(void *p)
{
	uint64_t so, word;

	if (!p || !block_take(p, &so, &word))
		return;
	vmtrace_free_live(word, so & 1 ? &free_obj_cache : &free_mem_cache, so & 1 ? OBJ_CLASS : MEM_CLASS,
			  so >> 1, p);
}

static inline __attribute__((always_inline)) void uncount(void *p)
{
	if (VMTRACE_UNLIKELY(sizes_on))
		uncount_slow(p);
}

#define WRAP(dom, orig, obj)                                                              \
	static void *dom##_malloc(void *ctx, size_t n)                                    \
	{                                                                                 \
		void *p = orig.malloc(orig.ctx, n);                                       \
		(void)ctx;                                                                \
		count(obj, n, p);                                                         \
		return p;                                                                 \
	}                                                                                 \
	static void *dom##_calloc(void *ctx, size_t k, size_t n)                          \
	{                                                                                 \
		void *p = orig.calloc(orig.ctx, k, n);                                    \
		(void)ctx;                                                                \
		count(obj, k * n, p);                                                     \
		return p;                                                                 \
	}                                                                                 \
	static void *dom##_realloc(void *ctx, void *old, size_t n)                        \
	{                                                                                 \
		void *p;                                                                  \
		(void)ctx;                                                                \
		HELD_GOING(old); /* read while it is still there */                      \
		p = orig.realloc(orig.ctx, old, n);                                       \
		if (p)                                                                    \
			uncount(old);                                                     \
		count(obj, n, p);                                                         \
		return p;                                                                 \
	}                                                                                 \
	static void dom##_free(void *ctx, void *p)                                        \
	{                                                                                 \
		(void)ctx;                                                                \
		HELD_GOING(p);                                                            \
		uncount(p);                                                               \
		orig.free(orig.ctx, p);                                                   \
	}
WRAP(obj, orig_obj, 1)
WRAP(mem, orig_mem, 0)

/* A free matters while the blocks' sizes are kept (--live); on 3.11 and
 * 3.12, where a held block's header is read before it goes; and sampled,
 * where the thread's next look at a held block may be many allocations
 * away, and a block freed meanwhile may come back as another's object.
 * Exact on 3.13 and newer, each allocation settles the block held before
 * it, so a free has nothing to do: it goes straight to the allocator. */
static int frees_matter(void)
{
	return __atomic_load_n(&sizes_on, __ATOMIC_RELAXED) || !VT_TYPED_BY_TRACER ||
	       vmtrace_sample_period_effective() != 0;
}

static int frees_wrapped; /* what frees_matter() said when the wrappers went in */

/* The wrappers in, over orig_obj and orig_mem, their frees as
 * frees_matter() says (an allocator's context kept: ours use none). */
static void wrap(void)
{
	PyMemAllocatorEx o = { orig_obj.ctx, obj_malloc, obj_calloc, obj_realloc, obj_free };
	PyMemAllocatorEx m = { orig_mem.ctx, mem_malloc, mem_calloc, mem_realloc, mem_free };
	int frees = frees_matter();

	__atomic_store_n(&frees_wrapped, frees, __ATOMIC_RELAXED);
	if (!frees) {
		o.free = orig_obj.free;
		m.free = orig_mem.free;
	}
	PyMem_SetAllocator(PYMEM_DOMAIN_OBJ, &o);
	PyMem_SetAllocator(PYMEM_DOMAIN_MEM, &m);
}

/* ---- arming ---- */

static int installed;          /* the wrappers are in (GIL) */
static volatile int pending;   /* an apply() is asked for and has not run */

/* armed, with the frees wrapped otherwise than frees_matter() says now
 * (--live, or the sampling period, changed): the watcher asks, apply() mends */
static int frees_stale(int want)
{
	return want && __atomic_load_n(&installed, __ATOMIC_RELAXED) &&
	       frees_matter() != __atomic_load_n(&frees_wrapped, __ATOMIC_RELAXED);
}

static int apply(void *arg)
{
	int want = VMTRACE_ALLOC_ENABLED() != 0;
	int frees = want && VMTRACE_FREE_ENABLED();

	(void)arg;
	if (frees != sizes_on) {
		sizes_on = frees;
		if (!frees)
			blocks_clear();
	}
	if (frees_stale(want))
		wrap();
	if (want && !installed) {
#if !VT_TYPED_BY_TRACER
		header_types_arm(); /* before the wrappers: its own allocations uncounted */
#endif
		PyMem_GetAllocator(PYMEM_DOMAIN_OBJ, &orig_obj);
		PyMem_GetAllocator(PYMEM_DOMAIN_MEM, &orig_mem);
		wrap();
#if VT_TYPED_BY_TRACER
		prev_tracer = PyRefTracer_GetTracer(&prev_tracer_data);
		/* another tracer's calls go on through ours, set for good */
		tracer_lazy = !prev_tracer && vmtrace_sample_period_effective() != 0;
		holders = 0;
		if (!tracer_lazy)
			PyRefTracer_SetTracer(ref_traced, NULL);
#endif
		armings++;
		installed = 1;
	} else if (!want && installed) {
		HELD_NOW();
#if VT_TYPED_BY_TRACER
		void *data;

		/* put back what was there, unless another tracer came after ours */
		if (PyRefTracer_GetTracer(&data) == ref_traced)
			PyRefTracer_SetTracer(prev_tracer, prev_tracer_data);
		tracer_lazy = 0;
		holders = 0;
#endif
		PyMem_SetAllocator(PYMEM_DOMAIN_OBJ, &orig_obj);
		PyMem_SetAllocator(PYMEM_DOMAIN_MEM, &orig_mem);
		/* other threads' held blocks may be freed unseen from now on:
		 * dropped unread at their next look */
		armings++;
		installed = 0;
#if !VT_TYPED_BY_TRACER
		header_types_disarm();
#endif
	}
	vmtrace_host_armed(installed); /* what a tracer attaching waits for */
	pending = 0;
	return 0;
}

#if PY_VERSION_HEX >= 0x030d0000
#define finalizing() Py_IsFinalizing()
#else
#define finalizing() _Py_IsFinalizing()
#endif

static void *watch(void *arg)
{
	struct timespec ts = { 0, WATCH_NS };
	int looks = 0; /* since the call was asked for */

	(void)arg;
	for (;;) {
		int want = VMTRACE_ALLOC_ENABLED() != 0;
		int frees = want && VMTRACE_FREE_ENABLED();

		if ((want != __atomic_load_n(&installed, __ATOMIC_RELAXED) ||
		     frees != __atomic_load_n(&sizes_on, __ATOMIC_RELAXED) || frees_stale(want)) &&
		    !pending) {
			pending = 1;
			looks = 0;
			if (Py_AddPendingCall(apply, NULL) < 0)
				pending = 0; /* the queue was full: the next look asks again */
		}
		nanosleep(&ts, NULL);
		/* 3.11 lets the main thread see a pending call only when the main
		 * thread asked, or when it takes the GIL back: a program that
		 * never lets go of the GIL (one thread, no I/O) would never run
		 * it. Asking for the GIL once makes it let go, and look. */
		if (pending && ++looks == 5 && !finalizing()) {
			PyGILState_STATE g = PyGILState_Ensure();

			PyGILState_Release(g);
		}
	}
	return NULL;
}

static void start_watcher(void)
{
	pthread_t t;
	pthread_attr_t a;
	sigset_t all, old;

	/* no signal for this thread: Python handles them in the main one */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_create(&t, &a, watch, NULL);
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* ---- the module ---- */

/* vmtrace.armed() -> True while a consumer has allocations counted */
static PyObject *armed(PyObject *self, PyObject *unused)
{
	(void)self, (void)unused;
	return PyBool_FromLong(installed);
}

/* vmtrace._flush(last): every thread's counts to the tracer now */
static PyObject *flush(PyObject *self, PyObject *last)
{
	(void)self;
	HELD_NOW();
	vmtrace_batch_flush(PyObject_IsTrue(last) > 0);
	Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
	{ "armed", armed, METH_NOARGS, "True while a vmtrace consumer has allocations counted." },
	{ "_flush", flush, METH_O, "Hand every thread's counts to the tracer now." },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT, "vmtrace",
	"vmtrace's provider inside CPython: dormant until a vmtrace consumer attaches.",
	-1, methods, NULL, NULL, NULL, NULL,
};

static void at_fork_child(void)
{
	pending = 0;
	held.p = NULL; /* the parent counts it */
#if VT_TYPED_BY_TRACER
	/* the parent's other threads' blocks: none is held in the child */
	if (tracer_lazy && holders) {
		void *data;

		holders = 0;
		if (PyRefTracer_GetTracer(&data) == ref_traced)
			PyRefTracer_SetTracer(NULL, NULL);
	}
#endif
	start_watcher();
}

PyMODINIT_FUNC PyInit_vmtrace(void)
{
	PyObject *m;

	vmtrace_hold_until_attached(); /* a spawned Python boots while vmtrace attaches */
	if (Py_Version >> 16 != (PY_VERSION_HEX >> 16)) {
		PyErr_Format(PyExc_ImportError, "vmtrace: this extension is built for CPython %d.%d, "
			     "not %lu.%lu: build vmtrace against this Python's headers",
			     PY_MAJOR_VERSION, PY_MINOR_VERSION, Py_Version >> 24, (Py_Version >> 16) & 0xff);
		return NULL;
	}
	m = PyModule_Create(&module);
	if (!m)
		return NULL;
	frame_chain_init();
	if (pthread_key_create(&held_key, held_at_thread_end) != 0) {
		PyErr_SetString(PyExc_ImportError, "vmtrace: no thread-specific key left for the allocations held");
		Py_DECREF(m);
		return NULL;
	}
	apply(NULL); /* a spawned process's tracer is there already */
	start_watcher();
	pthread_atfork(NULL, NULL, at_fork_child);
	vmtrace_host_arms_later(); /* the watcher arms: the last step, so a loader sees it done */
	return m;
}
