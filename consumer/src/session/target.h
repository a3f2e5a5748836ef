/*
 * target.h: the process vmtrace traces: an existing pid, or a command it
 * starts itself, held back until the probes are attached (target.c tells
 * how). Functions return 0 or a negative errno and put a one-line reason in
 * err; they never print.
 */
#ifndef VMTRACE_TARGET_H
#define VMTRACE_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "process/usdt_notes.h"

struct vt_target {
	pid_t pid;            /* read-only: the process traced */
	pid_t cmd_pid;        /* read-only: a spawned command's own process: pid, or the
				 shim or wrapper pid was followed from (follow.h) */
	bool spawned;         /* read-only: started by vmtrace */
	bool exited;          /* read-only: seen gone */
	int exit_status;      /* read-only: wait status of a spawned command that exited */
	char *exe;            /* read-only: the program a spawned target runs */
	char *interp;         /* read-only: when exe is a script, the program that runs it
				 (its probes are the target's), else NULL */
	int pidfd;            /* private: readable once the process is gone */
	int go_fd;            /* private: spawn handshake, -1 once released */
	int exec_err_fd;      /* private: reports a failed exec */
	int hold_fd;          /* private: a command released held, until vt_target_unhold */
};

/* Parse a pid argument strictly (digits only, > 0). 0 or -EINVAL. */
int vt_parse_pid(const char *s, pid_t *out);

/* An existing process: -ESRCH "no process with pid N". */
int vt_target_open_pid(struct vt_target *t, pid_t pid, char *err, size_t errlen);

/* Fork a child that waits, before exec, for vt_target_release. argv[0] is
 * looked up in PATH as execvp would. -ENOENT/-EACCES for a bad command. */
int vt_target_spawn(struct vt_target *t, char *const argv[], char *err, size_t errlen);

/* Every USDT probe the target has or, for a spawned target that has not
 * run yet, will have: its program and the shared libraries the dynamic
 * loader will map for it (DT_NEEDED, resolved by the loader itself). For
 * a script ("#!"), the program is its interpreter, found as the kernel and
 * env(1) find it. */
int vt_target_probes(struct vt_target *t, struct vt_usdt_list *out, char *err, size_t errlen);

/* The probes of the program exe and of the libraries the loader maps for
 * it, as vt_target_probes finds them for a command (record --all's runtime
 * libraries). 0 or -errno. */
int vt_program_probes(const char *exe, struct vt_usdt_list *out);
/* argv0 as execvp would find it (malloc'd), or NULL. */
char *vt_find_program(const char *argv0);

/* Let a spawned target exec, first setting env ("NAME=VALUE" strings,
 * NULL-terminated; env may be NULL) in its environment. -errno (with err)
 * when exec failed. */
int vt_target_release(struct vt_target *t, const char *const *env, char *err, size_t errlen);

/* vt_target_release for a command whose runtime holds it at the module
 * that counts (runtime.h, spawn_early): it execs now with VMTRACE_HOLD_FD
 * in its environment, and that module waits, before it counts anything,
 * for vt_target_unhold. */
int vt_target_release_held(struct vt_target *t, const char *const *env, char *err, size_t errlen);
/* Let a command released held go on (the probes are attached); nothing
 * for one released otherwise, or gone. */
void vt_target_unhold(struct vt_target *t);

/* Wait up to timeout_ms for the target to exit: true once it has (a
 * spawned target is reaped). A negative timeout waits for ever. */
bool vt_target_wait_exit(struct vt_target *t, int timeout_ms);

/* The file descriptor that becomes readable when the target exits. */
int vt_target_exit_fd(const struct vt_target *t);

/* The target's command line, arguments separated by spaces (malloc'd), or
 * NULL when it cannot be read. */
char *vt_target_cmdline(pid_t pid);
/* Its /proc/PID/comm without the newline, "" when it cannot be read
 * (malloc'd; NULL on ENOMEM). */
char *vt_target_comm(pid_t pid);

/* End a spawned target still held back or running (SIGTERM; SIGKILL when
 * it is still there VT_TARGET_TERM_GRACE_MS later; then reap), close
 * everything. Accepts one vt_target_open_pid or vt_target_spawn set up,
 * also after they failed; not a zeroed struct (its descriptors read 0). */
#define VT_TARGET_TERM_GRACE_MS 2000
void vt_target_close(struct vt_target *t);

#endif /* VMTRACE_TARGET_H */
