/*
 * python_remote.c: PEP 768's remote execution (python_remote.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "process/proc_info.h"
#include "runtimes/python/python_debug_rows.h"
#include "runtimes/python/python_remote.h"

#define FIELD_MAX (1u << 20) /* an offset read from the target past this is no offset */
#define PATH_SIZE_MAX 4096   /* nor a path buffer larger than this */

const char *const vt_python_modules[] = { "python3", "libpython3", NULL };

/* A word of the target at addr. */
static int word(pid_t pid, uint64_t addr, uint64_t *v)
{
	return vt_proc_mem_read(pid, addr, v, sizeof(*v));
}

/* The published offset at slot of _Py_DebugOffsets (at runtime), checked
 * for size: what the target wrote there is not trusted. */
static int offset(pid_t pid, uint64_t runtime, uint16_t slot, uint64_t *v)
{
	int r = word(pid, runtime + slot, v);

	return r ? r : *v < FIELD_MAX ? 0 : -EINVAL;
}

/* The script in a file of the target's /tmp, made as its user, readable
 * by it alone; its path there into path. */
static int place(struct vt_py_remote *rx, pid_t pid, const char *text, char *path, size_t len)
{
	char name[64];
	int fd = -EEXIST, r;
	size_t n = strlen(text);

	if ((r = vt_tfs_open(&rx->tfs, pid)))
		return r;
	for (unsigned i = 0; i < 16 && fd == -EEXIST; i++) {
		snprintf(name, sizeof(name), "vmtrace-load-%d-%u.py", (int)pid, i);
		fd = vt_tfs_create(&rx->tfs, rx->tfs.root, "tmp", name, 0400, &rx->made);
	}
	if (fd < 0)
		return fd;
	r = write(fd, text, n) == (ssize_t)n ? 0 : -EIO;
	close(fd);
	if (!r && snprintf(path, len, "/tmp/%s", name) >= (int)len)
		r = -ENAMETOOLONG;
	return r;
}

int vt_py_remote_exec(struct vt_py_remote *rx, pid_t pid, const char *text, char *err, size_t errlen)
{
	const struct vt_py_debug_row *row = NULL;
	uint64_t runtime, head[2], off[8], interp, tstate, enabled, pending, breaker;
	char path[PATH_SIZE_MAX];
	int r;

	memset(rx, 0, sizeof(*rx));
	rx->tfs.root = rx->tfs.cwd = rx->made.dir = -1;
	rx->pid = pid;
	/* the cookie and the version: a runtime that publishes none is not ours to ask */
	if (vt_proc_symbol_in(pid, vt_python_modules, "_PyRuntime", &runtime) ||
	    vt_proc_mem_read(pid, runtime, head, sizeof(head)) || memcmp(head, "xdebugpy", 8) != 0)
		return -ENOTSUP;
	for (size_t i = 0; i < VT_PY_DEBUG_ROWS; i++)
		if (vt_py_debug_rows[i].version == (head[1] >> 16 & 0xffff))
			row = &vt_py_debug_rows[i];
	if (!row)
		return -ENOTSUP;
	if ((r = offset(pid, runtime, row->interpreters_head, &off[0])) ||
	    (r = offset(pid, runtime, row->threads_main, &off[1])) ||
	    (r = offset(pid, runtime, row->eval_breaker, &off[2])) ||
	    (r = offset(pid, runtime, row->remote_debugger_support, &off[3])) ||
	    (r = offset(pid, runtime, row->remote_debugging_enabled, &off[4])) ||
	    (r = offset(pid, runtime, row->debugger_pending_call, &off[5])) ||
	    (r = offset(pid, runtime, row->debugger_script_path, &off[6])) ||
	    (r = offset(pid, runtime, row->debugger_script_path_size, &off[7])) || off[7] > PATH_SIZE_MAX ||
	    (r = word(pid, runtime + off[0], &interp)) || !interp || (r = word(pid, interp + off[1], &tstate)) ||
	    !tstate) {
		snprintf(err, errlen, "CPython %d's debug offsets do not lead to its main thread", (int)pid);
		return r ? r : -EINVAL;
	}
	if ((r = vt_proc_mem_read(pid, interp + off[4], &enabled, sizeof(int))) || !(int)enabled) {
		snprintf(err, errlen, "CPython %d has remote debugging off (PYTHON_DISABLE_REMOTE_DEBUG, "
			 "-X disable-remote-debug, or built without it)", (int)pid);
		return r ? r : -EPERM;
	}
	if ((r = vt_proc_mem_read(pid, tstate + off[3] + off[5], &pending, sizeof(int))))
		return r;
	if ((int)pending) {
		snprintf(err, errlen, "CPython %d has a remote script pending already", (int)pid);
		return -EBUSY;
	}
	if ((r = place(rx, pid, text, path, off[7] < sizeof(path) ? off[7] : sizeof(path)))) {
		snprintf(err, errlen, "cannot place the script in the /tmp of CPython %d: %s", (int)pid,
			 r == -ELOOP ? "a symbolic link on the way" : strerror(-r));
		return r;
	}
	/* the path, then the flag, then the stop bit: the order CPython's own
	 * sys.remote_exec writes them in */
	const int one = 1;

	if ((r = vt_proc_mem_write(pid, tstate + off[3] + off[6], path, strlen(path) + 1)) ||
	    (r = vt_proc_mem_write(pid, (rx->pending_at = tstate + off[3] + off[5]), &one, sizeof(one))) ||
	    (r = word(pid, tstate + off[2], &breaker))) {
		snprintf(err, errlen, "cannot write into CPython %d: %s", (int)pid, strerror(-r));
		return r;
	}
	breaker |= row->please_stop_bit;
	if ((r = vt_proc_mem_write(pid, tstate + off[2], &breaker, sizeof(breaker)))) {
		snprintf(err, errlen, "cannot write into CPython %d: %s", (int)pid, strerror(-r));
		return r;
	}
	return 0;
}

void vt_py_remote_done(struct vt_py_remote *rx, bool ran)
{
	const int zero = 0;

	if (!ran && rx->pending_at)
		vt_proc_mem_write(rx->pid, rx->pending_at, &zero, sizeof(zero));
	vt_tfs_remove(&rx->tfs, &rx->made);
	if (rx->made.dir >= 0)
		close(rx->made.dir);
	rx->made.dir = -1;
	vt_tfs_close(&rx->tfs);
}
