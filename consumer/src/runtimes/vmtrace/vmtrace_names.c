/*
 * vmtrace_names.c: the names behind the target's string pointers
 * (vmtrace_names.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "runtimes/adapter.h"
#include "runtimes/vmtrace/vmtrace_maps.h"
#include "runtimes/vmtrace/vmtrace_names.h"

void vt_names_init(struct vt_names *n, pid_t pid, int names_fd, int long_names_fd,
		   int unresolved_fd)
{
	memset(n, 0, sizeof(*n));
	n->pid = pid;
	n->mem_fd = -1;
	n->names_fd = names_fd;
	n->long_names_fd = long_names_fd;
	n->unresolved_fd = unresolved_fd;
}

void vt_names_set_procs(struct vt_names *n, struct vt_proc_table *procs)
{
	n->procs = procs;
}

void vt_names_free(struct vt_names *n)
{
	if (n->mem_fd >= 0)
		close(n->mem_fd);
	n->mem_fd = -1;
	vt_name_cache_free(&n->cache);
}

/* head (len bytes) followed by VT_NAMES_CUT, in a new string. */
static char *cut_name(const char *head, size_t len)
{
	char *s = malloc(len + sizeof(VT_NAMES_CUT));

	if (s) {
		memcpy(s, head, len);
		memcpy(s + len, VT_NAMES_CUT, sizeof(VT_NAMES_CUT));
	}
	return s;
}

/* The NUL-terminated string at ptr in the target's memory, cut (and *cut
 * set) when it has no NUL in its first VT_NAMES_READ_MAX bytes; NULL when
 * unreadable. */
static char *read_target_string(struct vt_names *n, uint64_t ptr, bool *cut)
{
	char *buf, *s = NULL;
	size_t have = 0;
	pid_t pid = n->pid;

	if (n->procs) {
		const struct vt_proc_info *pi = vt_proc_table_get(n->procs, vt_proc_slot_of(ptr));

		/* once it exited, its pid may be another process's */
		if (!pi || !vt_proc_table_current(n->procs, vt_proc_slot_of(ptr)))
			return NULL;
		pid = pi->pid;
		ptr = vt_proc_ptr_of(ptr);
		if (n->mem_fd >= 0 && n->mem_pid != pid) {
			close(n->mem_fd);
			n->mem_fd = -1;
		}
	}
	/* opened on first need, not at init: a spawned target has not run
	 * exec yet then, and the file would show the memory it leaves behind */
	if (n->mem_fd < 0) {
		char mem[64];

		n->mem_pid = pid;
		snprintf(mem, sizeof(mem), "/proc/%d/mem", (int)pid);
		n->mem_fd = open(mem, O_RDONLY | O_CLOEXEC);
		if (n->mem_fd < 0)
			return NULL;
	}
	buf = malloc(VT_NAMES_READ_MAX);
	if (!buf)
		return NULL;
	while (have < VT_NAMES_READ_MAX - 1) {
		/* small chunks first: most names are short and may end just
		 * before an unmapped page */
		size_t want = have ? VT_NAMES_READ_MAX - 1 - have : 64;
		ssize_t got = pread(n->mem_fd, buf + have, want, (off_t)(ptr + have));

		if (got <= 0)
			break;
		if (memchr(buf + have, '\0', (size_t)got)) {
			s = strdup(buf);
			break;
		}
		have += (size_t)got;
	}
	if (!s && have == VT_NAMES_READ_MAX - 1) {
		s = cut_name(buf, have);
		*cut = true;
	}
	free(buf);
	return s;
}

const char *vt_names_get(struct vt_names *n, uint64_t ptr, bool *cut, int *err)
{
	struct vt_name kname;
	struct vt_long_name *lname;
	struct name_entry *e;

	if (cut)
		*cut = false;
	if (!(n->procs ? vt_proc_ptr_of(ptr) : ptr))
		return "";
	e = vt_name_cache_get(&n->cache, ptr);
	if (!e) {
		*err = -ENOMEM;
		return NULL;
	}
	if (e->name) {
		if (cut)
			*cut = e->cut;
		return e->name;
	}
	if (bpf_map_lookup_elem(n->names_fd, &ptr, &kname) == 0) {
		kname.s[VT_NAME_MAX - 1] = '\0';
		e->name = strdup(kname.s);
		return e->name;
	}
	lname = malloc(sizeof(*lname));
	if (lname && bpf_map_lookup_elem(n->long_names_fd, &ptr, lname) == 0) {
		size_t len = strnlen(lname->s, sizeof(lname->s) - 1);

		/* a full buffer is only the name's start: the whole from /proc,
		 * or the start shown cut */
		if (len < sizeof(lname->s) - 1)
			e->name = strdup(lname->s);
		else if (!(e->name = read_target_string(n, ptr, &e->cut)))
			e->name = cut_name(lname->s, len), e->cut = true;
	} else {
		e->name = read_target_string(n, ptr, &e->cut);
		/* so the kernel stops retrying it for new keys */
		if (e->name && strlen(e->name) < VT_NAME_MAX) {
			memset(&kname, 0, sizeof(kname));
			strcpy(kname.s, e->name);
			bpf_map_update_elem(n->names_fd, &ptr, &kname, BPF_NOEXIST);
		}
	}
	free(lname);
	if (cut)
		*cut = e->cut;
	return e->name;
}

static int load_row(const void *key, const void *val, void *ctx)
{
	struct vt_names *n = ctx;
	const struct vt_name *kname = val;
	struct name_entry *e = vt_name_cache_get(&n->cache, *(const uint64_t *)key);

	if (!e)
		return -ENOMEM;
	if (!e->name) {
		size_t len = strnlen(kname->s, VT_NAME_MAX - 1);

		if (!(e->name = malloc(len + 1)))
			return -ENOMEM;
		memcpy(e->name, kname->s, len);
		e->name[len] = '\0';
	}
	return 0;
}

int vt_names_load(struct vt_names *n, struct vt_adapter *a, struct bpf_map *names_map)
{
	return vt_adapter_read_hash(a, names_map, load_row, n);
}

void vt_names_drain(struct vt_names *n)
{
	uint64_t key, next;
	int err = 0;
	uint64_t *done = NULL;
	size_t ndone = 0, cap = 0;

	if (bpf_map_get_next_key(n->unresolved_fd, NULL, &next))
		return;
	do {
		key = next;
		vt_names_get(n, key, NULL, &err);
		if (ndone == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			uint64_t *d = realloc(done, ncap * sizeof(*d));

			if (!d)
				break;
			done = d;
			cap = ncap;
		}
		done[ndone++] = key;
	} while (bpf_map_get_next_key(n->unresolved_fd, &key, &next) == 0);
	for (size_t i = 0; i < ndone; i++)
		bpf_map_delete_elem(n->unresolved_fd, &done[i]);
	free(done);
}
