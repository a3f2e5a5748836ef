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
 * set: on 3.13 and newer the reference tracer, told of each new object,
 * gives the type of the object made in the block just allocated (below,
 * "held"); a block that becomes no object, and every block on 3.11 and
 * 3.12, is counted under its domain, "(object memory)" or "(PyMem
 * memory)", never a guessed type. A realloc counts its new size. The
 * hook makes no Python object: a site's names are made once, at its first
 * allocation, with the hook's own allocations passed through uncounted.
 */
#define PY_SSIZE_T_CLEAN
#define Py_BUILD_CORE 1
#include <Python.h>
#include "internal/pycore_frame.h"
#include "internal/pycore_pystate.h"
#if PY_VERSION_HEX >= 0x030E0000
#include "internal/pycore_interpframe.h"
#endif

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vmtrace/vmtrace.h"
#include "blocks.h"
#include "frames.h"
#include "intern.h"
#include "typed.h"

#define WATCH_NS 2000000L
#define OBJ_CLASS "(object memory)"
#define MEM_CLASS "(PyMem memory)"
#define OOM_CLASS "(vmtrace: out of memory for names)"

/* ---- sites: (code, instruction) -> names and key cache ---- */

/* A site's names and key caches: made once, never moved or freed, so a
 * thread's kept frames (below) may point at it. */
struct site {
	const char *method, *file_line, *file;
	int32_t line;
	struct vmtrace_key_cache obj_cache, mem_cache;
};

/* The table: a slot holds what it is found by beside its site. */
struct site_slot {
	const void *code, *instr;     /* the frame's code object and its prev_instr */
	struct site *site;            /* NULL: empty */
};

#define SITE_SLAB 1024                /* sites made at once */

static struct site_slot *sites;
static size_t sites_cap, sites_n;
static struct site *slab;
static size_t slab_left;

static uint64_t site_hash(const void *code, const void *instr)
{
	return vt_mix64((uint64_t)(uintptr_t)code * 31 + (uint64_t)(uintptr_t)instr);
}

static int sites_grow(void)
{
	size_t cap = sites_cap ? sites_cap * 2 : 4096;
	struct site_slot *t = calloc(cap, sizeof(*t));

	if (!t)
		return -1;
	for (size_t i = 0; i < sites_cap; i++) {
		size_t j;

		if (!sites[i].site)
			continue;
		for (j = site_hash(sites[i].code, sites[i].instr) & (cap - 1); t[j].site; j = (j + 1) & (cap - 1))
			;
		t[j] = sites[i];
	}
	free(sites);
	sites = t;
	sites_cap = cap;
	return 0;
}

static struct site *site_new(void)
{
	if (!slab_left) {
		if (!(slab = calloc(SITE_SLAB, sizeof(*slab))))
			return NULL;
		slab_left = SITE_SLAB;
	}
	slab_left--;
	return slab++;
}

/* an interned copy, never freed: libvmtrace's keys are these addresses */
static struct vt_interned kept;

static const char *keep(const char *s)
{
	return vt_intern_str(&kept, s);
}

static struct site *site_of(_PyInterpreterFrame *f)
{
	const void *code = f ? (const void *)VT_FRAME_CODE(f) : NULL, *instr = f ? VT_FRAME_INSTR(f) : NULL;
	size_t j;
	char buf[1200];
	const char *name = "(no Python frame)", *file = NULL;
	int line = 0;
	struct site *s;

	if (sites_cap)
		for (j = site_hash(code, instr) & (sites_cap - 1); sites[j].site; j = (j + 1) & (sites_cap - 1))
			if (sites[j].code == code && sites[j].instr == instr)
				return sites[j].site;
	if (2 * (sites_n + 1) > sites_cap && sites_grow())
		return NULL;
	if (f) {
		PyCodeObject *co = VT_FRAME_CODE(f);
		int lasti = _PyInterpreterFrame_LASTI(f);
		PyObject *et, *ev, *tb;

		/* an allocation may come while the program's exception is set:
		 * keep it, whatever the calls below do */
		PyErr_Fetch(&et, &ev, &tb);
		name = PyUnicode_AsUTF8(co->co_qualname);
		file = PyUnicode_AsUTF8(co->co_filename);
		line = PyCode_Addr2Line(co, (lasti < 0 ? 0 : lasti) * (int)sizeof(_Py_CODEUNIT));
		if (!name)
			name = "?";
		PyErr_Clear();
		PyErr_Restore(et, ev, tb);
	}
	if (!(s = site_new()))
		return NULL;
	*s = (struct site){ .method = keep(name) };
	if (file) {
		snprintf(buf, sizeof(buf), "%s:%d", file, line);
		s->file_line = keep(buf);
		s->file = keep(file);
		s->line = line;
	}
	if (!s->method)
		return NULL; /* no memory: the slab's entry stays unused */
	for (j = site_hash(code, instr) & (sites_cap - 1); sites[j].site; j = (j + 1) & (sites_cap - 1))
		;
	sites[j] = (struct site_slot){ code, instr, s };
	/* the table is keyed by the code's address: held, so a code object
	 * freed (exec'd, compiled) never gives its address to another under
	 * this one's name (a reference count, under the GIL: no allocation) */
	if (f)
		Py_INCREF(VT_FRAME_CODE(f));
	sites_n++;
	return s;
}

/* ---- whole stacks (--stack vm): a chain libvmtrace walks (<vmtrace/frames.h>) ---- */

struct pyframe {
	struct pyframe *caller;
	const char *name, *file;
	int32_t line;
	uint64_t hash;                /* of this frame and its callers (vmtrace_frames_hashed) */
};

/* An innermost frame, kept by (its callers' hash, its depth, code and
 * instruction): one function's allocations at a few places, under the
 * same callers, each find their own frame made, at an address of its own,
 * so libvmtrace knows the chain by that address (vmtrace_frames_thread_kept)
 * and nothing is remade or hashed again. */
struct leaf {
	uint64_t parent;              /* the callers' hash; 0: empty */
	const void *code, *instr;
	int32_t depth;
	struct site *site;
	struct pyframe frame;
};

#define LEAVES 256                  /* a thread's innermost frames kept, direct-mapped */

/* A thread's chain: its callers kept from the outermost frame in, so an
 * allocation remakes only the callers whose (code, instruction) changed
 * since the thread's last one, and its innermost frame from the leaves. A
 * stack deeper than libvmtrace keeps gets one frame more, outermost, that
 * says it was cut. */
struct pystack {
	struct pyframe *top;          /* the chain while an allocation is counted, else NULL */
	struct leaf *inner;           /* its innermost frame */
	_PyInterpreterFrame *inner_from; /* ... made from this interpreter frame */
	int hashed;                   /* frames[] below this have their hash (of them and their callers) */
	int depth;                    /* frames the last walk found (not cut), the innermost's included */
	struct {
		const void *code, *instr; /* what frames[k] was made from */
	} memo[VMTRACE_STACK_MAX_DEPTH + 1];
	struct pyframe frames[VMTRACE_STACK_MAX_DEPTH + 1];
	_PyInterpreterFrame *walk[VMTRACE_STACK_MAX_DEPTH];
	struct leaf leaves[LEAVES];
};

static __thread struct pystack *self_stack __attribute__((tls_model("initial-exec")));
static pthread_key_t stack_key; /* frees a thread's chain as it ends */
static const char *cut_name;

static struct pystack *thread_stack(void)
{
	if (!self_stack && (self_stack = calloc(1, sizeof(*self_stack)))) {
		pthread_setspecific(stack_key, self_stack);
		vmtrace_frames_thread_kept((void *const *)&self_stack->top);
	}
	return self_stack;
}

/* a frame's hash, from its caller's (NULL: the outermost) */
static uint64_t frame_hash(const struct pyframe *caller, const struct pyframe *p, int depth)
{
	return vt_frame_hash(caller ? caller->hash : VT_FRAME_HASH_ROOT, p->name, p->file, p->line,
			     (uint64_t)depth);
}

/* frames[k], a caller, made from (code, instr), its caller frames[k - 1];
 * the outermost changed is remembered, to hash from */
static int frame_at(struct pystack *st, int k, const void *code, const void *instr, _PyInterpreterFrame *g)
{
	struct site *s;

	if (st->memo[k].code == code && st->memo[k].instr == instr)
		return 0;
	if (g) {
		if (!(s = site_of(g)))
			return -1;
		st->frames[k] = (struct pyframe){ k ? &st->frames[k - 1] : NULL, s->method, s->file, s->line, 0 };
	} else {
		st->frames[k] = (struct pyframe){ NULL, cut_name, NULL, 0, 0 };
	}
	st->memo[k].code = code;
	st->memo[k].instr = instr;
	if (k < st->hashed)
		st->hashed = k;
	return 0;
}

/* The innermost frame at depth k, made from g, under callers frames[k - 1]. */
static struct leaf *leaf_at(struct pystack *st, int k, _PyInterpreterFrame *g)
{
	const struct pyframe *caller = k ? &st->frames[k - 1] : NULL;
	uint64_t parent = caller ? caller->hash : 1;
	const void *code = VT_FRAME_CODE(g), *instr = VT_FRAME_INSTR(g);
	struct leaf *l = &st->leaves[vt_mix64(parent ^ (uint64_t)(uintptr_t)instr * 31 ^ (uint64_t)k) & (LEAVES - 1)];
	struct site *s;

	if (l->parent == parent && l->code == code && l->instr == instr && l->depth == k)
		return l;
	if (!(s = site_of(g)))
		return NULL;
	/* another chain at this address (this thread's, or a thread's that
	 * ended and whose memory this one got): libvmtrace forgets its name */
	vmtrace_frames_changed(&l->frame);
	l->parent = parent;
	l->code = code;
	l->instr = instr;
	l->depth = k;
	l->site = s;
	l->frame = (struct pyframe){ (struct pyframe *)caller, s->method, s->file, s->line, 0 };
	l->frame.hash = frame_hash(caller, &l->frame, k);
	return l;
}

/* The chain of the thread's Python frames from f, innermost first; NULL
 * when there is none to make. */
static struct pyframe *chain_of(struct pystack *st, _PyInterpreterFrame *f)
{
	int n = 0, cut = 0, last = st->depth, from = last - 1;

	st->inner = NULL;
	/* one not started has no line yet, and tracebacks skip it; only the
	 * innermost can be (a frame that called another has started) */
	for (; f && _PyFrame_IsIncomplete(f); f = f->previous)
		;
	/* Each caller is checked against what its frame was made from as the
	 * walk passes it, taking the stack to be as deep as the last one: the
	 * checks then wait on no load of their own, and if the depth is the
	 * same, only callers from the outermost that changed (from) are
	 * remade. Otherwise every caller is checked again by its depth. */
	for (; f; f = f->previous) {
		int k = last - 1 - n;

		if (n == VMTRACE_STACK_MAX_DEPTH) {
			cut = 1;
			break;
		}
		if (VT_FRAME_SHIM(f))
			continue;
		if (n && k >= 0 && (st->memo[k].code != VT_FRAME_CODE(f) || st->memo[k].instr != VT_FRAME_INSTR(f)))
			from = k;
		st->walk[n++] = f;
	}
	if (!n)
		return NULL;
	if (cut || n != last)
		from = 0;
	if (cut && frame_at(st, 0, NULL, &cut_name, NULL))
		return NULL;
	st->depth = cut ? 0 : n; /* a cut walk's memo is one frame off */
	for (int d = from; d < n - 1; d++) {
		_PyInterpreterFrame *g = st->walk[n - 1 - d];

		if (frame_at(st, cut + d, VT_FRAME_CODE(g), VT_FRAME_INSTR(g), g))
			return NULL;
	}
	/* the callers' hashes from the outermost remade one in (or from the
	 * first past the last chain's end) */
	for (int k = st->hashed; k < cut + n - 1; k++)
		st->frames[k].hash = frame_hash(k ? &st->frames[k - 1] : NULL, &st->frames[k], k);
	st->hashed = cut + n - 1;
	if (!(st->inner = leaf_at(st, cut + n - 1, st->walk[0])))
		return NULL;
	st->inner_from = st->walk[0];
	return &st->inner->frame;
}

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

#if VT_TYPED
/* An object-domain block counted in, its type not yet known: the reference
 * tracer's next new object, when it is made in this block, gives it (no
 * bytecode runs between the two, so the site and chain found at the
 * allocation are still the thread's). Else the thread's next counted
 * allocation, a free of the block, a flush or the thread's end counts it as
 * object memory. Per thread: another thread may take the GIL between an
 * allocation that becomes no object and that thread's next one. */
struct held {
	void *p;
	size_t size;
	struct site *site;
	struct pyframe *top;          /* its chain, when stacks are wanted */
	unsigned armed;               /* the arming it was made in (armings) */
};
static unsigned armings;              /* counts the wrappers put in: a block held from an earlier
					 * arming, in a thread that made no allocation since, is dropped */
static __thread struct held held __attribute__((tls_model("initial-exec")));
static pthread_key_t held_key;        /* counts a thread's held block as it ends */
static __thread int held_keyed __attribute__((tls_model("initial-exec"))); /* held_key set */
static PyRefTracer prev_tracer;       /* the tracer found when armed, called on from ours */
static void *prev_tracer_data;

static const char *type_name(const void *type)
{
	/* a reference: while its name is kept, no other type takes its address */
	Py_INCREF((PyObject *)type);
	return keep(((PyTypeObject *)type)->tp_name);
}

static void held_count(PyTypeObject *type)
{
	struct held h = held;
	struct pystack *st = h.top ? self_stack : NULL;
	int was_in_hook = in_hook;

	held.p = NULL;
	if (h.armed != armings)
		return;
	in_hook = 1;
	if (st)
		st->top = h.top;
	count_at(h.site, type && h.site ? typed_of(h.site, type, type_name) : NULL, 1, h.size, h.p);
	if (st)
		st->top = NULL;
	in_hook = was_in_hook;
}

/* The object starts at its block, or after its pre-header: the collector's
 * links and the managed dict and weakref pointers (_PyType_PreHeaderSize). */
#define PRE_HEADER_MAX (sizeof(PyGC_Head) + 2 * sizeof(PyObject *))

static int ref_traced(PyObject *op, PyRefTracerEvent event, void *data)
{
	(void)data;
	if (event == PyRefTracer_CREATE && held.p && !in_hook) {
		uintptr_t off = (uintptr_t)op - (uintptr_t)held.p;

		held_count(off <= PRE_HEADER_MAX && off + sizeof(PyObject) <= held.size ? Py_TYPE(op) : NULL);
	}
	return prev_tracer ? prev_tracer(op, event, prev_tracer_data) : 0;
}

static void held_at_thread_end(void *unused)
{
	(void)unused;
	held_keyed = 0; /* an allocation in a later destructor sets it again */
	held.top = NULL; /* the chain goes with the thread */
	if (held.p)
		held_count(NULL);
}

/* a block going, or a flush: a block held is counted first */
#define HELD_RESOLVE(blk) \
	do { \
		if (held.p && held.p == (blk)) \
			held_count(NULL); \
	} while (0)
#else
#define HELD_RESOLVE(blk) ((void)0)
#endif

static __attribute__((noinline)) void count_slow(int obj, size_t size, void *p)
{
	PyThreadState *ts;
	_PyInterpreterFrame *f = NULL;
	struct pystack *st = NULL;
	struct site *s;

#if VT_TYPED
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
#if VT_TYPED
	if (obj) {
		if (!held_keyed)
			held_keyed = pthread_setspecific(held_key, &held) == 0;
		held = (struct held){ p, size, s, st ? st->top : NULL, armings };
		if (st)
			st->top = NULL;
		in_hook = 0;
		return;
	}
#endif
	count_at(s, NULL, obj, size, p);
	if (st)
		st->top = NULL;
	in_hook = 0;
}

/* An allocation through a wrapped domain; sampled out, it costs the
 * countdown alone, inline in the wrapper. */
static inline __attribute__((always_inline)) void count(int obj, size_t size, void *p)
{
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
		void *p = orig.realloc(orig.ctx, old, n);                                 \
		(void)ctx;                                                                \
		if (p) {                                                                  \
			HELD_RESOLVE(old);                                                \
			uncount(old);                                                     \
		}                                                                         \
		count(obj, n, p);                                                         \
		return p;                                                                 \
	}                                                                                 \
	static void dom##_free(void *ctx, void *p)                                        \
	{                                                                                 \
		(void)ctx;                                                                \
		HELD_RESOLVE(p);                                                          \
		uncount(p);                                                               \
		orig.free(orig.ctx, p);                                                   \
	}
WRAP(obj, orig_obj, 1)
WRAP(mem, orig_mem, 0)

static PyMemAllocatorEx ours_obj = { NULL, obj_malloc, obj_calloc, obj_realloc, obj_free };
static PyMemAllocatorEx ours_mem = { NULL, mem_malloc, mem_calloc, mem_realloc, mem_free };

/* ---- arming ---- */

static int installed;          /* the wrappers are in (GIL) */
static volatile int pending;   /* an apply() is asked for and has not run */

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
	if (want && !installed) {
		PyMem_GetAllocator(PYMEM_DOMAIN_OBJ, &orig_obj);
		PyMem_GetAllocator(PYMEM_DOMAIN_MEM, &orig_mem);
		PyMem_SetAllocator(PYMEM_DOMAIN_OBJ, &ours_obj);
		PyMem_SetAllocator(PYMEM_DOMAIN_MEM, &ours_mem);
#if VT_TYPED
		prev_tracer = PyRefTracer_GetTracer(&prev_tracer_data);
		PyRefTracer_SetTracer(ref_traced, NULL);
		armings++;
#endif
		installed = 1;
	} else if (!want && installed) {
#if VT_TYPED
		void *data;

		HELD_RESOLVE(held.p);
		/* put back what was there, unless another tracer came after ours */
		if (PyRefTracer_GetTracer(&data) == ref_traced)
			PyRefTracer_SetTracer(prev_tracer, prev_tracer_data);
#endif
		PyMem_SetAllocator(PYMEM_DOMAIN_OBJ, &orig_obj);
		PyMem_SetAllocator(PYMEM_DOMAIN_MEM, &orig_mem);
		installed = 0;
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
		     frees != __atomic_load_n(&sizes_on, __ATOMIC_RELAXED)) && !pending) {
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
	HELD_RESOLVE(held.p);
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
#if VT_TYPED
	held.p = NULL; /* the parent counts it */
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
	if (pthread_key_create(&stack_key, free) == 0) {
		vmtrace_frames_describe(&VMTRACE_FRAME_LAYOUT(struct pyframe, caller, name, file, line));
		vmtrace_frames_hashed((int32_t)offsetof(struct pyframe, hash));
	}
#if VT_TYPED
	if (pthread_key_create(&held_key, held_at_thread_end) != 0) {
		PyErr_SetString(PyExc_ImportError, "vmtrace: no thread-specific key left for the allocations held");
		Py_DECREF(m);
		return NULL;
	}
#endif
	cut_name = keep("(deeper frames cut)");
	apply(NULL); /* a spawned process's tracer is there already */
	start_watcher();
	pthread_atfork(NULL, NULL, at_fork_child);
	vmtrace_host_arms_later(); /* the watcher arms: the last step, so a loader sees it done */
	return m;
}
