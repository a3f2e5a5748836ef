/*
 * skeleton.h: the adapter skeleton each runtime fills in (runtime.h). An
 * adapter's state begins with its struct vt_adapter; open sets the
 * adapter's skel, destroy and, when the state holds more, release; then
 * poll and close are these, the same for every runtime.
 */
#ifndef VMTRACE_SKELETON_H
#define VMTRACE_SKELETON_H

/* runtime.h's poll: record --all's processes read while they live (their
 * cgroups), and the ring buffer's events taken in; a runtime with no ring
 * waits the slice out. */
int vt_skeleton_poll(void *state, int timeout_ms);

/* runtime.h's close: detached (adapter.h, vt_adapter_release), the BPF
 * skeleton destroyed, the processes' table freed, the state's own released,
 * the state freed. Accepts NULL. */
void vt_skeleton_close(void *state);

#endif
