/*
 * skeleton.c: the adapter skeleton each runtime fills in (skeleton.h).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>

#include "runtimes/adapter.h"
#include "runtimes/proc_table.h"
#include "runtimes/skeleton.h"

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
