/* SPDX-License-Identifier: GPL-2.0 */
/*
 * common.bpf.h: helpers every vmtrace BPF program shares.
 *
 * Include after the kernel types (vmlinux.h or the UAPI headers) and
 * <bpf/bpf_helpers.h>. Everything here is always inlined: a map passed as a
 * `void *` argument becomes the constant map reference the verifier needs.
 */
#ifndef VMTRACE_COMMON_BPF_H
#define VMTRACE_COMMON_BPF_H

#include "runtimes/map_sizes.h"

#ifndef EEXIST
#define EEXIST 17                /* vmlinux.h has no errno macros */
#endif

/* A map of one stanza: VT_MAP(name, BPF_MAP_TYPE_..., key, value, entries). */
#define VT_MAP(name_, type_, key_, value_, entries_) \
	struct {                                     \
		__uint(type, type_);                 \
		__uint(max_entries, entries_);       \
		__type(key, key_);                   \
		__type(value, value_);               \
	} name_ SEC(".maps")
/* A ring buffer of bytes_ bytes (a power of two pages). */
#define VT_RINGBUF(name_, bytes_)                    \
	struct {                                     \
		__uint(type, BPF_MAP_TYPE_RINGBUF);  \
		__uint(max_entries, bytes_);         \
	} name_ SEC(".maps")
/* A counting map: its size a placeholder, set by the adapter before load
 * (--map-entries, else map_sizes.h's default). */
#define VT_COUNTING_MAP(name_, type_, key_, value_) VT_MAP(name_, type_, key_, value_, VT_COUNT_MAP_DEFAULT)

/* The current thread's id: the key of every per-thread map. */
static __always_inline __u32 vt_tid(void)
{
	return (__u32)bpf_get_current_pid_tgid();
}

/* Add n to slot of a per-CPU array of __u64 counters. */
static __always_inline void vt_count(void *map, __u32 slot, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(map, &slot);

	if (v)
		*v += n;
}

/* Copy the NUL-terminated user string at src into dst[size]. A NULL src
 * (the runtime gave no name) leaves dst as it is. A string the process has
 * not paged in leaves "" and counts slot `unreadable`; one cut to fit counts
 * slot `truncated` of the counter array map. */
static __always_inline void vt_copy_str(char *dst, __u32 size, const char *src,
					void *map, __u32 unreadable, __u32 truncated)
{
	long n;
	char next;

	if (!src)
		return;
	n = bpf_probe_read_user_str(dst, size, src);
	if (n < 0) {
		dst[0] = '\0';
		vt_count(map, unreadable, 1);
		return;
	}
	/* n == size: it filled the field; it was cut unless it ends right there */
	if (n == size && (bpf_probe_read_user(&next, 1, src + size - 1) || next != '\0'))
		vt_count(map, truncated, 1);
}

/* How vt_get_or_insert() found its value. */
enum vt_got {
	VT_GOT_OLD,              /* there already, or another CPU inserted it first */
	VT_GOT_NEW,              /* this call inserted it */
	VT_GOT_REFUSED,          /* the map refused the insert: full or out of memory */
};

/* Insert a copy of *init under key unless another CPU got there first, then
 * look the key up. NULL when the map refused (*got says so) or, seldom, when
 * the key went away again before the lookup. */
static __always_inline void *vt_insert(void *map, const void *key, const void *init, enum vt_got *got)
{
	long err = bpf_map_update_elem(map, key, init, BPF_NOEXIST);

	if (err && err != -EEXIST) {
		*got = VT_GOT_REFUSED;
		return NULL;
	}
	*got = err ? VT_GOT_OLD : VT_GOT_NEW;
	return bpf_map_lookup_elem(map, key);
}

/* The value under key in a hash map, inserted as a copy of *init when
 * missing (see vt_insert()). Updates of an existing key stay in place. */
static __always_inline void *vt_get_or_insert(void *map, const void *key, const void *init, enum vt_got *got)
{
	void *v = bpf_map_lookup_elem(map, key);

	if (v) {
		*got = VT_GOT_OLD;
		return v;
	}
	return vt_insert(map, key, init, got);
}

#endif /* VMTRACE_COMMON_BPF_H */
