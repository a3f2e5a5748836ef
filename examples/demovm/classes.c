/* classes.c: class and method tables, cached dispatch, the global serial. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vmtrace/vmtrace.h>

#include "classes.h"
#include "intern.h"
#include "vm.h"

static struct vm_class classes[VM_CLASS_MAX];
static unsigned nclasses;
static struct vm_method methods[VM_METHOD_MAX];
static unsigned nmethods;

/* Writers (redefinition, inclusion) exclude lookups that walk the tables. */
static pthread_rwlock_t class_lock = PTHREAD_RWLOCK_INITIALIZER;
static uint64_t global_serial;

static const char *const reason_names[VM_REASON__COUNT] = {
	[VM_REASON_METHOD_REDEFINED] = "method redefined",
	[VM_REASON_MODULE_INCLUDED] = "module included",
};
static const char *reason_interned[VM_REASON__COUNT];

static void die(const char *what, const char *name)
{
	fprintf(stderr, "demovm: %s: %s\n", what, name);
	abort();
}

const char *vm_serial_reason_name(enum vm_serial_reason r)
{
	if (!reason_interned[r])
		reason_interned[r] = intern(reason_names[r]);
	return reason_interned[r];
}

struct vm_class *vm_class_define(const char *name, const struct vm_class *super,
				 unsigned fixed_refs, unsigned fixed_bytes,
				 enum vm_elements elements, unsigned refs_per_element)
{
	if (nclasses == VM_CLASS_MAX)
		die("class table full at", name);
	/* the reasons are interned at boot, before any thread reads them */
	for (unsigned r = 0; r < VM_REASON__COUNT; r++)
		vm_serial_reason_name(r);

	struct vm_class *c = &classes[nclasses];
	c->id = nclasses++;
	c->name = intern(name);
	c->super = super;
	c->fixed_refs = fixed_refs;
	c->fixed_bytes = fixed_bytes;
	c->elements = elements;
	c->refs_per_element = refs_per_element;
	return c;
}

struct vm_method *vm_method_define(struct vm_class *klass, const char *name,
				   vm_impl impl, const char *file, int line)
{
	char qualified[128];
	const char *base = strrchr(file, '/');

	if (nmethods == VM_METHOD_MAX || klass->nmethods == VM_CLASS_METHODS)
		die("method table full at", name);
	snprintf(qualified, sizeof(qualified), "%s#%s", klass->name, name);

	struct vm_method *m = &methods[nmethods];
	m->id = nmethods++;
	m->name = intern(name);
	m->qualified = intern(qualified);
	m->file = intern(base ? base + 1 : file);
	m->line = line;
	m->owner = klass;
	m->impl = impl;
	m->definitions = 1;
	klass->methods[klass->nmethods++] = m;
	return m;
}

unsigned vm_class_count(void) { return nclasses; }
const struct vm_class *vm_class_at(unsigned id) { return &classes[id]; }
unsigned vm_method_count(void) { return nmethods; }
const struct vm_method *vm_method_at(unsigned id) { return &methods[id]; }

uint64_t vm_global_serial(void)
{
	return __atomic_load_n(&global_serial, __ATOMIC_ACQUIRE);
}

static struct vm_method *own_method(const struct vm_class *klass, const char *name)
{
	for (unsigned i = 0; i < klass->nmethods; i++)
		if (strcmp(klass->methods[i]->name, name) == 0)
			return klass->methods[i];
	return NULL;
}

/* The method klass#name resolves to, walking up the superclasses. */
static struct vm_method *lookup(const struct vm_class *klass, const char *name)
{
	struct vm_method *m = NULL;

	pthread_rwlock_rdlock(&class_lock);
	for (const struct vm_class *c = klass; c && !m; c = c->super)
		m = own_method(c, name);
	pthread_rwlock_unlock(&class_lock);
	return m;
}

struct obj *vm_send(struct vm_thread *t, struct vm_method_cache *cache,
		    const struct vm_class *klass, const char *name,
		    struct obj *self, struct obj *other, uint64_t n)
{
	uint64_t serial = vm_global_serial();
	struct vm_method *m;

	if (cache->serial == serial && cache->klass == klass && cache->method) {
		m = cache->method;
		cache->hits++;
	} else {
		m = lookup(klass, name);
		if (!m)
			die("undefined method", name);
		/* filled under the serial read before the lookup: a redefinition
		 * racing with us leaves the cache stale, never wrongly valid */
		cache->serial = serial;
		cache->klass = klass;
		cache->method = m;
		cache->misses++;
	}

	const struct vm_method *caller = t->method;
	unsigned sp = t->sp;
	struct vm_frame frame = { t->frame, m->qualified, m->file, m->line,
				  callpath_enter(&t->paths, t->frame->path, m->id) };

	/* the frame is whole before it is linked: an allocation may walk it */
	__atomic_store_n(&t->frame, &frame, __ATOMIC_RELEASE);
	t->method = m;
	vmtrace_method_entry(m->owner->name, m->name, m->file, m->line);
	struct obj *result = m->impl(t, self, other, n);
	vmtrace_method_return(m->owner->name, m->name, m->file, m->line);
	t->method = caller;
	t->frame = frame.caller;
	t->sp = sp; /* the callee's temporaries die with its frame */
	return result;
}

static uint64_t bump_serial(struct vm_thread *t, enum vm_serial_reason reason)
{
	uint64_t serial = __atomic_add_fetch(&global_serial, 1, __ATOMIC_ACQ_REL);

	t->truth.serial_incs[reason]++;
	vmtrace_global_serial_inc(serial, reason_interned[reason]);
	return serial;
}

void vm_method_redefine(struct vm_thread *t, const struct vm_class *klass, const char *name)
{
	pthread_rwlock_wrlock(&class_lock);
	struct vm_method *m = own_method(klass, name);
	if (!m)
		die("cannot redefine undefined method", name);
	m->definitions++;
	uint64_t serial = bump_serial(t, VM_REASON_METHOD_REDEFINED);
	pthread_rwlock_unlock(&class_lock);

	t->truth.method_resets[m->id]++;
	vmtrace_method_cache_reset(klass->name, m->name, serial);
}

void vm_module_include(struct vm_thread *t, const struct vm_class *klass)
{
	pthread_rwlock_wrlock(&class_lock);
	uint64_t serial = bump_serial(t, VM_REASON_MODULE_INCLUDED);
	pthread_rwlock_unlock(&class_lock);

	t->truth.class_resets[klass->id]++;
	vmtrace_method_cache_reset(klass->name, NULL, serial);
}
