/*
 * batch_keys.c: interned keys for cached allocation sites, and a thread's
 * counts by key id (batch_keys.h says who touches what).
 *
 * The registry is static memory (no malloc: the host's allocator may be
 * what is traced): the keys, and an open-addressing index of their ids
 * that a lookup reads without a lock. Interning a new key takes a spin
 * lock by trying once: a signal handler that finds it held (its own
 * thread interrupted mid-intern) gets 0 and its event is counted in the
 * thread's table instead, so nothing waits and nothing is lost.
 */
#include <stdatomic.h>
#include <sys/mman.h>

#include "batch_keys.h"

#define INDEX_SLOTS (2 * VMTRACE__KEYS_MAX) /* at most half full */

/* zero: no entry matches an event until it is interned (ids from 1) */
struct vmtrace__key vmtrace__keys[VMTRACE__KEYS_MAX];
__thread uint64_t (*vmtrace__keyed)[2] __attribute__((tls_model("initial-exec")));

static _Atomic uint32_t index_ids[INDEX_SLOTS]; /* 0: empty; set once (release) */
static _Atomic uint32_t nkeys = 1;              /* ids below this are interned */
static atomic_flag intern_lock = ATOMIC_FLAG_INIT;

static uint32_t key_hash(const char *k, const char *m, const char *s)
{
	uint64_t h = ((uint64_t)k ^ ((uint64_t)m * 0xC2B2AE3D27D4EB4Full) ^
		      ((uint64_t)s * 0x165667B19E3779F9ull)) * 0x9E3779B97F4A7C15ull;
	return (uint32_t)(h >> 40);
}

/* The id of the key, or 0 with *slot the empty index slot it would take. */
static uint32_t find(const char *k, const char *m, const char *s, uint32_t *slot)
{
	for (uint32_t i = key_hash(k, m, s) % INDEX_SLOTS;; i = (i + 1) % INDEX_SLOTS) {
		uint32_t id = atomic_load_explicit(&index_ids[i], memory_order_acquire);
		const struct vmtrace__key *key = &vmtrace__keys[id];

		if (!id) {
			*slot = i;
			return 0;
		}
		if (key->not_klass == ~(uintptr_t)k && key->method == m && key->site == s)
			return id;
	}
}

uint32_t vt_key_intern(const char *klass, const char *method, const char *site)
{
	uint32_t slot, id = find(klass, method, site, &slot);

	if (id)
		return id;
	if (atomic_flag_test_and_set_explicit(&intern_lock, memory_order_acquire))
		return 0;
	/* another thread may have interned it since the lock-free look */
	id = find(klass, method, site, &slot);
	if (!id && (id = atomic_load_explicit(&nkeys, memory_order_relaxed)) < VMTRACE__KEYS_MAX) {
		struct vmtrace__key *key = &vmtrace__keys[id];

		/* the class last: an entry half written matches no event */
		key->method = method;
		key->site = site;
		__atomic_store_n(&key->not_klass, ~(uintptr_t)klass, __ATOMIC_RELEASE);
		atomic_store_explicit(&nkeys, id + 1, memory_order_release);
		atomic_store_explicit(&index_ids[slot], id, memory_order_release);
	} else if (id >= VMTRACE__KEYS_MAX) {
		id = 0;
	}
	atomic_flag_clear_explicit(&intern_lock, memory_order_release);
	return id;
}

uint32_t vt_key_count(void)
{
	return atomic_load_explicit(&nkeys, memory_order_acquire);
}

const struct vmtrace__key *vt_key_get(uint32_t id)
{
	return &vmtrace__keys[id];
}

struct vt_keyed *vt_keyed_new(void)
{
	/* zero pages: nothing counted, nothing sent; untouched ones cost nothing */
	struct vt_keyed *kd = mmap(NULL, sizeof(*kd), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return kd == MAP_FAILED ? NULL : kd;
}

void vt_keyed_free(struct vt_keyed *kd)
{
	munmap(kd, sizeof(*kd));
}

void vt_keyed_flush(struct vt_keyed *kd, int kind, struct vt_flush *f)
{
	uint32_t n = vt_key_count();

	for (uint32_t id = 1; id < n; id++) {
		const struct vmtrace__key *key = &vmtrace__keys[id];
		int is_free = key->site == VMTRACE__FREE_SITE;
		uint64_t c, b;

		if (is_free != (kind == VMTRACE_BATCH_FREE))
			continue;
		c = __atomic_load_n(&kd->counts[id][0], __ATOMIC_RELAXED);
		b = __atomic_load_n(&kd->counts[id][1], __ATOMIC_RELAXED);
		if (c == kd->sent[id][0] && b == kd->sent[id][1])
			continue;
		/* a free's key is delivered as the table's: method and site 0;
		 * exact counts, so as many samples as events */
		vt_flush_put(f, ~key->not_klass, is_free ? 0 : (uint64_t)key->method,
			     is_free ? 0 : (uint64_t)key->site, 0, c - kd->sent[id][0], b - kd->sent[id][1],
			     c - kd->sent[id][0]);
		kd->sent[id][0] = c;
		kd->sent[id][1] = b;
	}
}
