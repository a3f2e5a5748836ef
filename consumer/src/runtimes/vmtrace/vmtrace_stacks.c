/*
 * vmtrace_stacks.c: VM stacks of a host that embeds libvmtrace
 * (vmtrace_stacks.h; docs/stacks.md has the design).
 *
 * The host describes its frame chain to libvmtrace, which exports the
 * descriptor as `vmtrace_frames`; the consumer reads it from the running
 * process and refuses --stack vm, clearly, when it is missing, damaged or
 * of a version it does not know, rather than record stacks it cannot
 * trust. The stacks themselves arrive in the BPF `stacks` map (id ->
 * frames, innermost first), sent by the provider once per consumer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "profile/row_index.h"
#include "runtimes/vmtrace/sampling.h"
#include "vmtrace/batch.h"
#include "vmtrace/frames.h"
#include "runtimes/vmtrace/vmtrace_maps.h"
#include "runtimes/vmtrace/vmtrace_stacks.h"

_Static_assert(VT_STACK_MAX_DEPTH == VMTRACE_STACK_MAX_DEPTH, "stack depth");
_Static_assert(VT_STACK_CUT == VMTRACE_STACK_CUT, "stack flags");
_Static_assert(sizeof(struct vt_stack_frame) == sizeof(struct vmtrace_batch_frame), "stack frame");

#define FIELD_MAX 4096

static bool field_ok(int32_t off, bool optional)
{
	return (optional && off == VMTRACE_FRAME_NONE) || (off >= 0 && off <= FIELD_MAX);
}

int vt_vm_stacks_prepare(pid_t pid, const struct vt_usdt_list *probes, bool spawned, const char *mode,
			 char *errbuf, size_t errlen)
{
	struct vmtrace_frames_desc d;
	struct timespec now;
	uint64_t epoch;
	int err;

	if (spawned)
		return 0; /* it describes its frames once it runs; nothing to resend */
	err = vt_provider_read(pid, probes, "vmtrace_frames", &d, sizeof(d));
	if (err == -ENOENT) {
		snprintf(errbuf, errlen, "--stack %s: the libvmtrace of pid %d has no frame descriptor "
			 "(vmtrace_frames): too old for stacks", mode, (int)pid);
		return err;
	}
	if (err) {
		snprintf(errbuf, errlen, "--stack %s: cannot read the frame descriptor of pid %d: %s",
			 mode, (int)pid, strerror(-err));
		return err;
	}
	if (d.magic == 0) {
		snprintf(errbuf, errlen, "--stack %s: pid %d has not described its VM frames "
			 "(vmtrace_frames_describe)", mode, (int)pid);
		return -ENOENT;
	}
	if (d.magic != VMTRACE_FRAMES_MAGIC || d.version != VMTRACE_FRAMES_VERSION ||
	    d.max_depth != VMTRACE_STACK_MAX_DEPTH || !field_ok(d.layout.caller, false) ||
	    !field_ok(d.layout.name, false) || !field_ok(d.layout.file, true) ||
	    !field_ok(d.layout.line, true)) {
		snprintf(errbuf, errlen, "--stack %s: the frame descriptor of pid %d is damaged or of a "
			 "version this vmtrace does not know (version %u)", mode, (int)pid, d.version);
		return -EPROTONOSUPPORT;
	}
	/* stacks the threads sent to an earlier consumer must reach this one */
	clock_gettime(CLOCK_MONOTONIC, &now);
	epoch = ((uint64_t)getpid() << 40) ^ ((uint64_t)now.tv_sec << 20) ^ (uint64_t)now.tv_nsec;
	err = vt_provider_write_u64(pid, probes, "vmtrace_stacks_epoch", epoch | 1);
	if (err)
		snprintf(errbuf, errlen, "--stack %s: cannot write into pid %d: %s", mode, (int)pid,
			 strerror(-err));
	return err;
}

/* What mapping nframes frames takes: whole pages. */
static size_t frames_len(uint64_t nframes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (nframes * sizeof(struct vt_stack_frame) + page - 1) / page * page;
}

int vt_vm_stacks_map(struct vt_vm_stacks *s, int refs_fd, int frames_fd, uint64_t nframes)
{
	void *p = mmap(NULL, frames_len(nframes), PROT_READ, MAP_SHARED, frames_fd, 0);

	if (p == MAP_FAILED)
		return -errno;
	s->refs = refs_fd;
	s->frames = p;
	s->nframes = nframes;
	return 0;
}

void vt_vm_stacks_unmap(struct vt_vm_stacks *s)
{
	vt_vm_stacks_drop(s);
	if (s->frames)
		munmap((void *)s->frames, frames_len(s->nframes));
	s->frames = NULL;
	s->nframes = 0;
}

void vt_vm_stacks_drop(struct vt_vm_stacks *s)
{
	free(s->ids);
	free(s->held);
	s->ids = NULL;
	s->held = NULL;
	s->cap = 0;
}

/* vt_adapter_read_hash's row: one stack's reference into s's table. */
static int ref_put(const void *key, const void *val, void *ctx)
{
	struct vt_vm_stacks *s = ctx;
	uint64_t id;
	size_t j;

	memcpy(&id, key, sizeof(id));
	if (!id)
		return 0;
	for (j = vt_key_slot(id, s->cap); s->ids[j]; j = (j + 1) & (s->cap - 1))
		;
	s->ids[j] = id;
	memcpy(&s->held[j], val, sizeof(s->held[j]));
	return 0;
}

int vt_vm_stacks_load(struct vt_vm_stacks *s, struct vt_adapter *a, struct bpf_map *refs)
{
	size_t cap = 16;
	int err;

	vt_vm_stacks_drop(s);
	while (cap < 2 * (size_t)bpf_map__max_entries(refs))
		cap *= 2;
	s->ids = calloc(cap, sizeof(*s->ids));
	s->held = calloc(cap, sizeof(*s->held));
	s->cap = cap;
	err = s->ids && s->held ? vt_adapter_read_hash(a, refs, ref_put, s) : -ENOMEM;
	if (err)
		vt_vm_stacks_drop(s);
	return err;
}

/* Stack id's reference: 0, or -1 when the map does not hold it. */
static int ref_of(const struct vt_vm_stacks *s, uint64_t id, struct vt_stack_ref *r)
{
	if (!s->cap)
		return bpf_map_lookup_elem(s->refs, &id, r) ? -1 : 0;
	for (size_t j = vt_key_slot(id, s->cap); s->ids[j]; j = (j + 1) & (s->cap - 1))
		if (s->ids[j] == id) {
			*r = s->held[j];
			return 0;
		}
	return -1;
}

/* The frames of VM stack id into frames[] root first: the depth, 0 when
 * the maps do not hold it; *cut when the walk cut it. */
static uint32_t vm_frames(const struct vt_vm_stacks *s, uint64_t id, vt_frame_name_fn *name, void *ctx,
			  struct vt_frame *frames, char (*fallback)[2][40], bool *cut)
{
	struct vt_stack_ref r;
	const struct vt_stack_frame *v;

	if (!s->frames || ref_of(s, id, &r) || r.depth == 0 ||
	    r.depth > VT_STACK_MAX_DEPTH || (uint64_t)r.first + r.depth > s->nframes)
		return 0;
	v = s->frames + r.first;
	for (uint32_t i = 0; i < r.depth; i++) {
		const struct vt_stack_frame *f = &v[r.depth - 1 - i]; /* root first */

		frames[i].name = (char *)name(ctx, f->name, fallback[i][0], sizeof(fallback[i][0]));
		frames[i].file = (char *)(f->file ? name(ctx, f->file, fallback[i][1],
							 sizeof(fallback[i][1])) : "");
		frames[i].line = f->line;
	}
	*cut = (r.flags & VT_STACK_CUT) != 0;
	return r.depth;
}

static int add_lost(struct vt_profile *out, uint64_t samples, uint32_t *sid, uint64_t *missing)
{
	struct vt_frame lost = { "[stack lost]", "", 0 };

	*missing += samples;
	return vt_profile_add_stack(out, &lost, 1, false, sid);
}

int vt_vm_stack_of(const struct vt_vm_stacks *s, uint64_t id, struct vt_profile *out, vt_frame_name_fn *name,
		   void *ctx, uint64_t samples, uint32_t *sid, uint64_t *cut, uint64_t *missing)
{
	static char fallback[VT_STACK_MAX_DEPTH][2][40];
	struct vt_frame frames[VT_STACK_MAX_DEPTH];
	bool was_cut = false;
	uint32_t depth = vm_frames(s, id, name, ctx, frames, fallback, &was_cut);

	if (!depth)
		return add_lost(out, samples, sid, missing);
	if (was_cut)
		*cut += samples;
	return vt_profile_add_stack(out, frames, depth, was_cut, sid);
}

int vt_vm_stacks_arm(struct vt_adapter *a, struct bpf_program *prog, const struct vt_opts *opts,
		     const char **path, char *errbuf, size_t errlen)
{
	const struct vt_usdt_list *pl = opts->probes;
	int err;

	for (size_t i = 0; i < pl->n; i++) {
		const struct vt_usdt_probe *p = &pl->v[i];

		if (strcmp(p->provider, "vmtrace") || strcmp(p->name, "stacks__armed") ||
		    !vt_usdt_has_probe(pl, "vmtrace", p->path, "alloc__batch"))
			continue;
		err = vt_vm_stacks_prepare(opts->pid, pl, opts->spawned,
					   opts->stacks == VT_STACK_BOTH ? "both" : "vm", errbuf, errlen);
		if (!err)
			err = vt_adapter_attach(a, prog, p->path, p->name, 0, errbuf, errlen);
		*path = p->path;
		return err;
	}
	snprintf(errbuf, errlen, "--stack vm: the target's libvmtrace has no stacks__armed probe "
		 "(too old for stacks)");
	return -ENOTSUP;
}

/* The frames of native stack id into frames[] root first, named by syms:
 * the depth, 0 when the map does not hold it. */
static uint32_t native_frames(int fd, uint64_t id, struct vt_symbolizer *syms, struct vt_frame *frames,
			      char (*fallback)[48])
{
	struct vt_native_stack st = { { 0 } };
	const __u64 *ips = st.ip;
	uint32_t depth = 0;

	if (bpf_map_lookup_elem(fd, &id, &st) || !ips[0])
		return 0;
	while (depth < VT_NATIVE_DEPTH && ips[depth])
		depth++;
	for (uint32_t i = 0; i < depth; i++) {
		uint32_t leaf_at = depth - 1 - i; /* root first */

		frames[i].name = (char *)vt_symbolizer_name(syms, ips[leaf_at], leaf_at > 0,
							    fallback[i], sizeof(fallback[i]));
		frames[i].file = "";
		frames[i].line = 0;
	}
	return depth;
}

int vt_native_stack_of(int fd, uint64_t id, struct vt_profile *out, struct vt_symbolizer *syms,
		       uint64_t samples, uint32_t *sid, uint64_t *missing)
{
	static char fallback[VT_NATIVE_DEPTH][48];
	struct vt_frame frames[VT_NATIVE_DEPTH];
	uint32_t depth = native_frames(fd, id, syms, frames, fallback);

	if (!depth)
		return add_lost(out, samples, sid, missing);
	return vt_profile_add_stack(out, frames, depth, false, sid);
}

int vt_both_stack_of(const struct vt_both_maps *m, uint64_t id, struct vt_profile *out,
		     struct vt_symbolizer *syms, vt_frame_name_fn *name, void *ctx, uint64_t samples,
		     uint32_t *sid, uint64_t *cut, uint64_t *missing)
{
	static char nfallback[VT_NATIVE_DEPTH][48], vfallback[VT_STACK_MAX_DEPTH][2][40];
	static struct vt_frame native[VT_NATIVE_DEPTH], frames[VT_STACK_MAX_DEPTH];
	struct vt_both_stack b;
	uint32_t nd, vd, keep;
	bool was_cut = false;

	if (bpf_map_lookup_elem(m->both, &id, &b))
		return add_lost(out, samples, sid, missing);
	nd = native_frames(m->native, b.native, syms, native, nfallback);
	vd = vm_frames(m->vm, b.vm, name, ctx, frames, vfallback, &was_cut);
	if (!nd || !vd)
		return add_lost(out, samples, sid, missing);
	/* the native frames below the VM frames, root first; a stack too deep
	 * for one record loses its outermost native frames, and says so */
	keep = nd < VT_STACK_MAX_DEPTH - vd ? nd : VT_STACK_MAX_DEPTH - vd;
	memmove(frames + keep, frames, vd * sizeof(frames[0]));
	memcpy(frames, native + (nd - keep), keep * sizeof(frames[0]));
	was_cut = was_cut || keep < nd;
	if (was_cut)
		*cut += samples;
	return vt_profile_add_stack(out, frames, keep + vd, was_cut, sid);
}

void vt_native_maps_refresh(struct vt_symbolizer *syms, struct timespec *last)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (last->tv_sec && (now.tv_sec - last->tv_sec) * 1000L + (now.tv_nsec - last->tv_nsec) / 1000000L < 100)
		return;
	*last = now;
	vt_symbolizer_snapshot(syms);
}
