/* constants.c: the constant table and its per-site caches (constants.h). */
#include <pthread.h>

#include <vmtrace/vmtrace.h>

#include "constants.h"
#include "intern.h"
#include "vm.h"

static const char *const names[VM_CONST__COUNT] = {
	[VM_CONST_LIMIT] = "LIMIT",
	[VM_CONST_SCALE] = "SCALE",
	[VM_CONST_EPSILON] = "EPSILON",
};

static const char *interned[VM_CONST__COUNT];
static double values[VM_CONST__COUNT];
static pthread_mutex_t constant_lock = PTHREAD_MUTEX_INITIALIZER;
/* moves on every reassignment; caches filled under an older state are stale */
static uint64_t constant_state = 1;

void constants_init(void)
{
	for (int c = 0; c < VM_CONST__COUNT; c++)
		interned[c] = intern(names[c]);
	values[VM_CONST_LIMIT] = 100.0;
	values[VM_CONST_SCALE] = 1.5;
	values[VM_CONST_EPSILON] = 1e-9;
}

const char *vm_constant_name(enum vm_constant c)
{
	return interned[c];
}

double vm_constant_get(struct vm_constant_cache *cache, enum vm_constant c)
{
	uint64_t state = __atomic_load_n(&constant_state, __ATOMIC_ACQUIRE);

	if (cache->state == state) {
		cache->hits++;
		return cache->value;
	}
	pthread_mutex_lock(&constant_lock);
	cache->value = values[c];
	cache->state = __atomic_load_n(&constant_state, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&constant_lock);
	cache->misses++;
	return cache->value;
}

void vm_constant_set(struct vm_thread *t, enum vm_constant c, double value)
{
	pthread_mutex_lock(&constant_lock);
	values[c] = value;
	uint64_t state = __atomic_add_fetch(&constant_state, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_unlock(&constant_lock);

	t->truth.constant_resets[c]++;
	vmtrace_constant_cache_reset(interned[c], state);
}
