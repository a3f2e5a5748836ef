/* heap.c: allocation and the generational mark-sweep collector (heap.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vmtrace/vmtrace.h>

#include "heap.h"
#include "vm.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void out_of_memory(void)
{
	fputs("demovm: out of memory\n", stderr);
	abort();
}

void heap_init(struct heap *h, uint64_t minor_budget)
{
	memset(h, 0, sizeof(*h));
	h->minor_budget = minor_budget;
	h->mark_cap = 1024;
	h->mark_stack = malloc(h->mark_cap * sizeof(*h->mark_stack));
	if (!h->mark_stack)
		out_of_memory();
}

static void free_list(struct obj *o)
{
	while (o) {
		struct obj *next = o->gc_next;
		free(o);
		o = next;
	}
}

void heap_destroy(struct heap *h)
{
	free_list(h->young);
	free_list(h->old);
	free(h->mark_stack);
	memset(h, 0, sizeof(*h));
}

static unsigned refs_for(const struct vm_class *k, unsigned len)
{
	return k->fixed_refs + (k->elements == VM_ELEM_REFS ? len * k->refs_per_element : 0);
}

static unsigned bytes_for(const struct vm_class *k, unsigned len)
{
	return k->fixed_bytes + (k->elements == VM_ELEM_BYTES ? len + 1 : 0);
}

unsigned obj_nrefs(const struct obj *o)
{
	return refs_for(o->klass, o->len);
}

unsigned char *obj_bytes(struct obj *o)
{
	return (unsigned char *)&o->ref[obj_nrefs(o)];
}

int vm_key_caches = 1;

struct obj *vm_new(struct vm_thread *t, const struct vm_class *klass, unsigned len, const char *site,
		   struct vmtrace_key_cache *key)
{
	struct heap *h = &t->heap;

	if (len > VM_MAX_LENGTH || (len && klass->elements == VM_ELEM_NONE)) {
		fprintf(stderr, "demovm: bad length %u for %s\n", len, klass->name);
		abort();
	}
	size_t size = sizeof(struct obj) + refs_for(klass, len) * sizeof(struct obj *) +
		      bytes_for(klass, len);
	if (h->allocated_since_gc + size > h->minor_budget)
		vm_gc(t);

	struct obj *o = calloc(1, size);
	if (!o)
		out_of_memory();
	o->klass = klass;
	o->site = site;
	o->method = (uint8_t)t->method->id;
	o->size = (uint32_t)size;
	o->len = (uint16_t)len;
	o->gc_next = h->young;
	h->young = o;
	h->young_bytes += size;
	h->allocated_since_gc += size;

	truth_alloc(&t->truth, klass->id, t->method->id, size);
	callpath_alloc(&t->paths, t->frame->path, klass->id, size);
	if (vm_key_caches)
		vmtrace_alloc_live(&o->vmtrace, key, klass->name, t->method->qualified, size, site, o);
	else
		vmtrace_alloc_at(klass->name, t->method->qualified, size, site, o);
	return o;
}

/* ---- marking ---- */

struct marker {
	struct heap *h;
	size_t top;
	int major;
};

static void mark(struct marker *mk, struct obj *o)
{
	if (!o || o->marked || (o->old && !mk->major))
		return; /* a minor collection takes old objects as live */
	o->marked = 1;
	if (mk->top == mk->h->mark_cap) {
		size_t cap = mk->h->mark_cap * 2;
		struct obj **grown = realloc(mk->h->mark_stack, cap * sizeof(*grown));
		if (!grown)
			out_of_memory();
		mk->h->mark_stack = grown;
		mk->h->mark_cap = cap;
	}
	mk->h->mark_stack[mk->top++] = o;
}

static void mark_children(struct marker *mk, struct obj *o)
{
	unsigned n = obj_nrefs(o);
	for (unsigned i = 0; i < n; i++)
		mark(mk, o->ref[i]);
}

static void drain(struct marker *mk)
{
	while (mk->top)
		mark_children(mk, mk->h->mark_stack[--mk->top]);
}

static void mark_from_roots(struct vm_thread *t, struct marker *mk)
{
	for (unsigned i = 0; i < t->sp; i++)
		mark(mk, t->stack[i]);
	for (unsigned i = 0; i < VM_GLOBAL_SLOTS; i++)
		mark(mk, t->globals[i]);
	drain(mk);
	if (!mk->major) {
		/* old objects are roots of a minor collection: whatever young
		 * object they reference survives */
		for (struct obj *o = t->heap.old; o; o = o->gc_next) {
			mark_children(mk, o);
			drain(mk);
		}
	}
}

/* ---- sweeping ---- */

static void release(struct vm_thread *t, struct obj *o)
{
	truth_free(&t->truth, o->klass->id, o->size);
	if (vm_key_caches)
		vmtrace_free_live(o->vmtrace, &t->free_keys[o->klass->id], o->klass->name, o->size, o);
	else
		vmtrace_free_at(o->klass->name, o->size, o);
	free(o);
}

/* Young survivors move to the old list; the dead are freed. */
static void sweep_young(struct vm_thread *t)
{
	struct heap *h = &t->heap;
	struct obj *o = h->young;

	while (o) {
		struct obj *next = o->gc_next;
		h->young_bytes -= o->size;
		if (o->marked) {
			o->marked = 0;
			o->old = 1;
			o->gc_next = h->old;
			h->old = o;
			h->old_bytes += o->size;
		} else {
			release(t, o);
		}
		o = next;
	}
	h->young = NULL;
}

static void sweep_old(struct vm_thread *t)
{
	struct heap *h = &t->heap;
	struct obj **link = &h->old;

	while (*link) {
		struct obj *o = *link;
		if (o->marked) {
			o->marked = 0;
			link = &o->gc_next;
		} else {
			*link = o->gc_next;
			h->old_bytes -= o->size;
			release(t, o);
		}
	}
}

static void collect(struct vm_thread *t, int major)
{
	struct heap *h = &t->heap;
	int kind = major ? VMTRACE_GC_MAJOR : VMTRACE_GC_MINOR;
	uint64_t start = now_ns();
	struct marker mk = { .h = h, .major = major };

	vmtrace_gc_begin(kind, h->young_bytes + h->old_bytes);
	mark_from_roots(t, &mk);
	if (major)
		sweep_old(t); /* before the young survivors join the old list */
	sweep_young(t);
	h->allocated_since_gc = 0;
	vmtrace_gc_end(kind, h->young_bytes + h->old_bytes);

	uint64_t pause = now_ns() - start;
	h->pause_ns_total += pause;
	if (pause > h->pause_ns_max)
		h->pause_ns_max = pause;
	if (major)
		t->truth.gc_major++;
	else
		t->truth.gc_minor++;
}

void vm_gc(struct vm_thread *t)
{
	collect(t, (++t->heap.collections % VM_MAJOR_EVERY) == 0);
}

void vm_gc_full(struct vm_thread *t)
{
	collect(t, 1);
}

void heap_count_live(struct vm_thread *t)
{
	struct obj *lists[2] = { t->heap.young, t->heap.old };

	for (int i = 0; i < 2; i++)
		for (struct obj *o = lists[i]; o; o = o->gc_next)
			truth_live(&t->truth, o->klass->id, o->method, o->site, o->size);
}
