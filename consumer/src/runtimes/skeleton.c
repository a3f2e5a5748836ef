/*
 * skeleton.c: the adapter skeleton each runtime fills in (skeleton.h).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>

#include "runtimes/adapter.h"
#include "runtimes/proc_table.h"
#include "runtimes/skeleton.h"

int vt_skeleton_opened(struct vt_adapter *a, void *skel, void (*destroy)(void *skel),
		       void (*release)(void *state), char *errbuf, size_t errlen)
{
	a->skel = skel;
	a->destroy = destroy;
	a->release = release;
	return skel ? 0 : vt_adapter_open_failed(errbuf, errlen);
}

int vt_skeleton_load(struct vt_adapter *a, struct bpf_object_skeleton *s, struct bpf_object *obj,
		     char *errbuf, size_t errlen)
{
	int err;

	vt_adapter_before_load(a, obj);
	err = bpf_object__load_skeleton(s);
	return err ? vt_adapter_load_failed(err, errbuf, errlen) : 0;
}

int vt_skeleton_load_procs(struct vt_adapter *a, struct bpf_object_skeleton *s, struct bpf_object *obj,
			   struct vt_proc_table *procs, struct bpf_map *procs_map, struct bpf_map *slots,
			   struct bpf_program *on_exec, struct bpf_program *on_exit, char *errbuf, size_t errlen)
{
	int err = vt_skeleton_load(a, s, obj, errbuf, errlen);

	if (!err && procs)
		err = vt_proc_table_open(procs, a, procs_map, slots, on_exec, on_exit, errbuf, errlen);
	return err;
}

int vt_skeleton_poll(void *state, int timeout_ms)
{
	struct vt_adapter *a = state;

	if (a->procs)
		vt_proc_table_refresh(a->procs); /* cgroups read while the processes live */
	if (!a->rb)
		return poll(NULL, 0, timeout_ms) < 0 ? -errno : 0;
	return vt_adapter_poll(a, timeout_ms);
}

void vt_skeleton_close(void *state)
{
	struct vt_adapter *a = state;

	if (!a)
		return;
	/* the reverse of attaching: a provider's arming probe first, so the
	 * target is exact again before the counting programs go */
	vt_adapter_release(a);
	if (a->destroy)
		a->destroy(a->skel);
	if (a->procs)
		vt_proc_table_free(a->procs);
	if (a->release)
		a->release(state);
	free(state);
}
