/*
 * vmtrace_events.c: ring buffer records to timeline events
 * (vmtrace_events.h).
 */
#include <errno.h>

#include "runtimes/vmtrace/vmtrace_events.h"

int vt_vmtrace_events_add(struct vt_profile *out, const struct vt_gc_event *ev, size_t n,
			  vt_name_fn *name, void *ctx, uint64_t *dropped)
{
	char fb1[64], fb2[64];
	int err = 0;

	for (size_t i = 0; !err && i < n; i++) {
		const struct vt_gc_event *e = &ev[i];
		struct vt_event t = { .tid = e->tid, .at_ns = (int64_t)e->ts_ns, .serial = e->serial };

		switch (e->type) {
		case VT_RING_SIGNAL:
			t.kind = VT_EVENT_SIGNAL;
			t.arg = e->kind;
			t.dur_ns = e->duration_ns;
			break;
		case VT_RING_METHOD_CACHE_RESET:
			t.kind = VT_EVENT_METHOD_CACHE_RESET;
			t.name = (char *)name(ctx, e->heap_bytes, fb1, sizeof(fb1));
			t.name2 = (char *)name(ctx, e->alloc_total, fb2, sizeof(fb2));
			break;
		case VT_RING_CONSTANT_CACHE_RESET:
			t.kind = VT_EVENT_CONSTANT_CACHE_RESET;
			t.name = (char *)name(ctx, e->heap_bytes, fb1, sizeof(fb1));
			break;
		default:
			continue; /* a record this reader does not know */
		}
		if (out->events.n >= VT_TIMELINE_MAX) {
			(*dropped)++;
			continue;
		}
		err = vt_profile_add_event(out, &t);
	}
	return err;
}
