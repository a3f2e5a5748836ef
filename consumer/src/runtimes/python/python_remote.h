/*
 * python_remote.h: PEP 768's remote execution, spoken by vmtrace itself
 * (CPython 3.14 and later): a script file's path written into the main
 * thread's remote-debugger block, its pending flag and its eval breaker's
 * stop bit set, all through the target's memory; the interpreter runs the
 * file, in a namespace of its own, at its next eval-breaker check. No
 * thread is stopped. Where each field is comes from the _Py_DebugOffsets
 * the runtime publishes at the start of _PyRuntime, read through
 * python_debug_rows.h's row for its version.
 */
#ifndef VMTRACE_PYTHON_REMOTE_H
#define VMTRACE_PYTHON_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "process/target_fs.h"

/* The file names (prefixes) of the modules that hold CPython itself: the
 * python3.N program, or libpython3.N for a program that embeds it. */
extern const char *const vt_python_modules[];

/* A script file placed in the target's root, removed by vt_py_remote_done. */
struct vt_py_remote {
	struct vt_tfs tfs;
	struct vt_tfs_made made;
	pid_t pid;
	uint64_t pending_at;     /* the main thread's pending flag, 0 before it is set */
};

/* Ask CPython pid to run the Python source text. 0 when asked; -ENOTSUP
 * when its version has no row here or publishes no offsets (another way
 * must be taken); -EPERM when remote debugging is off in it
 * (PYTHON_DISABLE_REMOTE_DEBUG, -X disable-remote-debug, a build without
 * it); -EBUSY when a remote script is pending already; -errno. One line in
 * err for each but -ENOTSUP. */
int vt_py_remote_exec(struct vt_py_remote *rx, pid_t pid, const char *text, char *err, size_t errlen);

/* Remove the script file, if one was placed; when the script has not run
 * (ran false), its pending flag is cleared first, so a runtime that comes
 * to it later finds nothing to run rather than a file gone. */
void vt_py_remote_done(struct vt_py_remote *rx, bool ran);

#endif
