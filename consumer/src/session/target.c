/*
 * target.c: finding, starting and watching the traced process.
 *
 * Starting a command with its probes live from its first instruction.
 * `vmtrace record -- CMD` must not miss an event CMD fires early, even one
 * fired from a shared library's constructor, which runs before main. So:
 *
 *  1. fork; the child blocks on a pipe before it calls exec.
 *  2. The parent lists the probes CMD will have: those of the program file
 *     and those of the shared libraries the dynamic loader will map for it,
 *     named by the loader itself (`PT_INTERP --list PROGRAM`, what ldd does,
 *     with the same environment, so RUNPATH, LD_LIBRARY_PATH and the loader
 *     cache resolve exactly as they will for CMD).
 *  3. The parent attaches by path with the child's pid. A uprobe belongs to
 *     a file (inode and offset) and is filtered by pid, so it needs no
 *     mapping yet: when the exec'd program maps each file, the kernel
 *     inserts the breakpoints and bumps the semaphores (uprobe ref_ctr) in
 *     that mapping, before any code in it can run. The pid stays the same
 *     across exec.
 *  4. The parent writes a byte, and any environment entries the adapter
 *     asked for (runtime.h, spawn_env), then closes the pipe: the child sets
 *     them and execs (a failed exec is reported back through a
 *     close-on-exec pipe).
 *
 * A runtime whose counting starts in a module the command loads itself
 * (vmtrace's Ruby extension) can instead hold the command at that module
 * (runtime.h, spawn_early): the child execs at once with the read end of a
 * third pipe named in VMTRACE_HOLD_FD, so the runtime boots while the
 * parent loads and attaches, and the module waits on that pipe, before it
 * counts anything, until vt_target_unhold.
 *
 * No ptrace: the child is an ordinary child, so tracing it needs nothing
 * beyond what attaching to any pid needs, and a debugger can still attach.
 * Libraries the program dlopen()s later are not covered (they are not
 * known before it runs); `record -p` after they are loaded covers them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process/proc_info.h"
#include "runtimes/runtime.h"
#include "session/target.h"

extern char **environ;

int vt_parse_pid(const char *s, pid_t *out)
{
	char *end;
	long v;

	if (!s || !*s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v <= 0 || v > INT_MAX)
		return -EINVAL;
	*out = (pid_t)v;
	return 0;
}

static int pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static void target_init(struct vt_target *t)
{
	memset(t, 0, sizeof(*t));
	t->pidfd = t->go_fd = t->exec_err_fd = t->hold_fd = -1;
}

/* The thread group (process) of thread id tid, from /proc; 0 when unknown. */
static pid_t thread_group_of(pid_t tid)
{
	long tgid = vt_proc_status_field(tid, "Tgid:");

	return tgid > 0 ? (pid_t)tgid : 0;
}

int vt_target_open_pid(struct vt_target *t, pid_t pid, char *err, size_t errlen)
{
	pid_t tgid = thread_group_of(pid);

	target_init(t);
	/* /proc/TID exists for every thread, but probes, maps and pidfds
	 * belong to the process */
	if (tgid > 0 && tgid != pid) {
		snprintf(err, errlen, "%d is a thread of pid %d, not a process (use -p %d)", (int)pid,
			 (int)tgid, (int)tgid);
		return -EINVAL;
	}
	t->pid = pid;
	t->pidfd = pidfd_open_(pid);
	if (t->pidfd < 0) {
		int e = errno;

		if (e == ESRCH || e == EINVAL) {
			snprintf(err, errlen, "no process with pid %d", (int)pid);
			return -ESRCH;
		}
		snprintf(err, errlen, "cannot watch pid %d: %s", (int)pid, strerror(e));
		return -e;
	}
	return 0;
}

/* argv0 as execvp would find it: a name with a slash is a path, any other
 * is looked up in PATH. */
static char *find_program(const char *argv0)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (strchr(argv0, '/'))
		return access(argv0, X_OK) == 0 ? strdup(argv0) : NULL;
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t len = strcspn(path, ":");
		struct stat sb;

		if (len == 0)
			snprintf(buf, sizeof(buf), "./%s", argv0);
		else
			snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, path, argv0);
		if (stat(buf, &sb) == 0 && S_ISREG(sb.st_mode) && access(buf, X_OK) == 0)
			return strdup(buf);
		path += len;
		if (*path == ':')
			path++;
	}
	return NULL;
}

/* In the held-back child, after the release byte: "NAME=VALUE" strings,
 * each NUL-terminated, until EOF; set each before exec. One that starts
 * with VT_SPAWN_ARG is an argument instead, put into *args (at most
 * max, their number in *nargs). The parent is single-threaded when it
 * forks, so malloc is safe here. */
static int apply_env(int fd, char **args, size_t max, size_t *nargs)
{
	size_t len = 0, cap = 0;
	char *buf = NULL;
	ssize_t n;

	for (;;) {
		if (len == cap) {
			char *nb = realloc(buf, cap = cap ? 2 * cap : 4096);

			if (!nb)
				return -1;
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	*nargs = 0;
	for (size_t i = 0; i < len; i += strlen(buf + i) + 1) {
		if (!memchr(buf + i, '\0', len - i))
			return -1;
		if (buf[i] == VT_SPAWN_ARG[0]) {
			if (*nargs == max)
				return -1;
			args[(*nargs)++] = buf + i + 1;
		} else if (putenv(buf + i) != 0) {
			return -1;
		}
	}
	return 0; /* buf stays: putenv and args keep the strings */
}

/* argv with args put right after the program's name, or NULL. */
static char **with_args(char *const argv[], char **args, size_t nargs)
{
	size_t n = 0;
	char **v;

	while (argv[n])
		n++;
	v = calloc(n + nargs + 1, sizeof(*v));
	if (!v)
		return NULL;
	v[0] = argv[0];
	memcpy(v + 1, args, nargs * sizeof(*v));
	memcpy(v + 1 + nargs, argv + 1, n * sizeof(*v)); /* the rest and its NULL */
	return v;
}

int vt_target_spawn(struct vt_target *t, char *const argv[], char *err, size_t errlen)
{
	int go[2], exec_err[2], hold[2];
	pid_t pid;

	target_init(t);
	if (!argv || !argv[0]) {
		snprintf(err, errlen, "no command to run after --");
		return -EINVAL;
	}
	t->exe = find_program(argv[0]);
	if (!t->exe) {
		snprintf(err, errlen, "cannot run %s: %s", argv[0],
			 strchr(argv[0], '/') ? strerror(errno) : "command not found");
		return -ENOENT;
	}
	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(exec_err, O_CLOEXEC) < 0 || pipe2(hold, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "cannot start %s: %s", argv[0], strerror(errno));
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		int e = errno;

		snprintf(err, errlen, "cannot start %s: %s", argv[0], strerror(e));
		close(go[0]); close(go[1]); close(exec_err[0]); close(exec_err[1]);
		close(hold[0]); close(hold[1]);
		return -e;
	}
	if (pid == 0) {
		char c, fd_env[32], *args[VT_SPAWN_ENV_MAX], **run;
		size_t nargs;
		int e;

		close(go[1]);
		close(exec_err[0]);
		close(hold[1]);
		/* the parent's SIGINT/SIGTERM handlers must not outlive exec as
		 * ignored signals: give the command the defaults */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		/* one byte: released; EOF without it: vmtrace died before
		 * attaching, so do not run untraced */
		ssize_t n;

		do
			n = read(go[0], &c, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1)
			_exit(127);
		if (apply_env(go[0], args, VT_SPAWN_ENV_MAX, &nargs) < 0 ||
		    !(run = with_args(argv, args, nargs)))
			_exit(127);
		/* 'h': held at the runtime's module, which reads the hold pipe */
		if (c == 'h') {
			snprintf(fd_env, sizeof(fd_env), "%d", hold[0]);
			if (fcntl(hold[0], F_SETFD, 0) < 0 || setenv("VMTRACE_HOLD_FD", fd_env, 1) < 0)
				_exit(127);
		}
		execv(t->exe, run);
		e = errno;
		if (write(exec_err[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(exec_err[1]);
	close(hold[0]);
	t->pid = t->cmd_pid = pid;
	t->spawned = true;
	t->go_fd = go[1];
	t->exec_err_fd = exec_err[0];
	t->hold_fd = hold[1];
	t->pidfd = pidfd_open_(pid);
	if (t->pidfd < 0) {
		int e = errno;

		snprintf(err, errlen, "cannot watch pid %d: %s", (int)pid, strerror(e));
		return -e;
	}
	return 0;
}

char *vt_find_program(const char *argv0)
{
	return find_program(argv0);
}

/* All of buf to fd, or -1. */
static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int release(struct vt_target *t, const char *how, const char *const *env, char *err, size_t errlen)
{
	int e = 0;
	ssize_t n;

	if (t->go_fd < 0)
		return 0;
	/* the release byte, then each entry with its NUL (apply_env) */
	int w = write_all(t->go_fd, how, 1);

	for (size_t i = 0; env && env[i] && w == 0; i++)
		w = write_all(t->go_fd, env[i], strlen(env[i]) + 1);
	if (w) {
		e = errno;
		snprintf(err, errlen, "cannot start %s: %s", t->exe, strerror(e));
		return -e;
	}
	close(t->go_fd);
	t->go_fd = -1;
	/* EOF: exec succeeded (close-on-exec); an int: its errno */
	do
		n = read(t->exec_err_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(t->exec_err_fd);
	t->exec_err_fd = -1;
	if (n == (ssize_t)sizeof(e)) {
		snprintf(err, errlen, "cannot run %s: %s", t->exe, strerror(e));
		vt_target_wait_exit(t, -1);
		return -e;
	}
	return 0;
}

int vt_target_release(struct vt_target *t, const char *const *env, char *err, size_t errlen)
{
	int r = release(t, "g", env, err, errlen);

	if (t->hold_fd >= 0) {
		close(t->hold_fd); /* the command ran without it: no one waits there */
		t->hold_fd = -1;
	}
	return r;
}

int vt_target_release_held(struct vt_target *t, const char *const *env, char *err, size_t errlen)
{
	return release(t, "h", env, err, errlen);
}

void vt_target_unhold(struct vt_target *t)
{
	if (t->hold_fd < 0)
		return;
	/* a command gone, or one that never read it: nothing to tell (EPIPE) */
	(void)!write(t->hold_fd, "u", 1);
	close(t->hold_fd);
	t->hold_fd = -1;
}

bool vt_target_wait_exit(struct vt_target *t, int timeout_ms)
{
	struct pollfd pfd = { .fd = t->pidfd, .events = POLLIN };

	if (t->exited)
		return true;
	if (t->pidfd < 0)
		return false;
	if (poll(&pfd, 1, timeout_ms) <= 0)
		return false;
	if (t->spawned) {
		int status = 0;

		while (waitpid(t->cmd_pid, &status, 0) < 0 && errno == EINTR)
			;
		t->exit_status = status;
	}
	t->exited = true;
	return true;
}

int vt_target_exit_fd(const struct vt_target *t)
{
	return t->pidfd;
}

char *vt_target_comm(pid_t pid)
{
	char path[64], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = '\0';
	return strdup(buf);
}

char *vt_target_cmdline(pid_t pid)
{
	char path[64], buf[4096];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	while (n > 0 && buf[n - 1] == '\0')
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[n] = '\0';
	return strdup(buf);
}

void vt_target_close(struct vt_target *t)
{
	if (t->spawned && !t->exited && t->cmd_pid > 0) {
		/* held back: it never runs; running: end it, as perf does, and
		 * one that ignores SIGTERM (a daemon) gets SIGKILL after a grace
		 * period rather than holding vmtrace for ever */
		kill(t->cmd_pid, t->go_fd >= 0 || t->hold_fd >= 0 ? SIGKILL : SIGTERM);
		if (!vt_target_wait_exit(t, VT_TARGET_TERM_GRACE_MS)) {
			kill(t->cmd_pid, SIGKILL);
			vt_target_wait_exit(t, -1);
		}
	}
	if (t->go_fd >= 0)
		close(t->go_fd);
	if (t->hold_fd >= 0)
		close(t->hold_fd);
	if (t->exec_err_fd >= 0)
		close(t->exec_err_fd);
	if (t->pidfd >= 0)
		close(t->pidfd);
	free(t->exe);
	free(t->interp);
	target_init(t);
}
