/*
 * follow.c: following a spawned command to the process that runs a
 * runtime (follow.h).
 *
 * Every process of the command's tree is a tracee of ours, in one of two
 * states: stopped (a ptrace stop we have not resumed) or running. Stops
 * come from waitpid(-1, __WALL), which, while we trace, also reports the
 * tracees that are not our children:
 *   exec       the process runs a new program: ask take(); resumed if not
 *   fork/vfork a new tracee (it starts with a PTRACE_EVENT_STOP of its own)
 *   event stop the start of a new tracee, or a group stop: resumed
 *   signal     a signal on its way to the tracee: resumed with it, so the
 *              program sees every signal as it would untraced
 *   exit       gone; the command's own exit is its status (we reaped it)
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "session/follow.h"

struct tracee {
	pid_t pid;
	bool stopped;
};

struct tree {
	struct tracee *v;
	size_t n, cap;
	char seen[512];   /* the programs run, for the error when none is taken */
};

static struct tracee *find(struct tree *tr, pid_t pid)
{
	for (size_t i = 0; i < tr->n; i++)
		if (tr->v[i].pid == pid)
			return &tr->v[i];
	return NULL;
}

static struct tracee *add(struct tree *tr, pid_t pid)
{
	struct tracee *t = find(tr, pid);

	if (t)
		return t;
	if (tr->n == tr->cap) {
		size_t cap = tr->cap ? 2 * tr->cap : 8;
		struct tracee *v = realloc(tr->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		tr->v = v;
		tr->cap = cap;
	}
	tr->v[tr->n] = (struct tracee){ pid, false };
	return &tr->v[tr->n++];
}

static void drop(struct tree *tr, pid_t pid)
{
	struct tracee *t = find(tr, pid);

	if (t)
		*t = tr->v[--tr->n];
}

static void resume(struct tracee *t, int sig)
{
	if (ptrace(PTRACE_CONT, t->pid, NULL, (void *)(long)sig) == 0)
		t->stopped = false;
}

static void note_program(struct tree *tr, const char *exe)
{
	const char *base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
	size_t used = strlen(tr->seen), len = strlen(base);

	if (strstr(tr->seen, base) || used + len + 3 > sizeof(tr->seen))
		return; /* named already, or no room: the list is what fits */
	if (used)
		memcpy(tr->seen + used, ", ", 2), used += 2;
	memcpy(tr->seen + used, base, len + 1);
}

/* The command t->cmd_pid was reaped here: keep its status for the session. */
static void command_gone(struct vt_target *t, int status)
{
	t->exit_status = status;
	t->exited = true;
}

/* Let every tracee but keep go: the stopped ones at once, the running ones
 * once an interrupt has stopped them. */
static void let_go(struct vt_target *t, struct tree *tr, pid_t keep)
{
	for (size_t i = 0; i < tr->n; i++)
		if (tr->v[i].pid != keep && !tr->v[i].stopped)
			ptrace(PTRACE_INTERRUPT, tr->v[i].pid, NULL, NULL);
	/* by index: a fork caught on the way adds its child, to let go too */
	for (size_t i = 0; i < tr->n; i++) {
		pid_t pid = tr->v[i].pid;
		bool stopped = tr->v[i].stopped;
		int status, sig = 0;

		if (pid == keep)
			continue;
		while (!stopped) {
			pid_t p = waitpid(pid, &status, __WALL);
			unsigned long child = 0;

			if (p < 0 && errno == EINTR)
				continue;
			if (p < 0 || WIFEXITED(status) || WIFSIGNALED(status)) {
				if (p == t->cmd_pid)
					command_gone(t, status);
				break;
			}
			stopped = true;
			/* a signal on its way: deliver it with the detach */
			if (!(status >> 16) && WSTOPSIG(status) != SIGTRAP)
				sig = WSTOPSIG(status);
			/* a fork as it was interrupted: its child is ours too */
			if (((status >> 16) == PTRACE_EVENT_FORK || (status >> 16) == PTRACE_EVENT_VFORK) &&
			    ptrace(PTRACE_GETEVENTMSG, pid, NULL, &child) == 0 && child)
				add(tr, (pid_t)child);
		}
		if (stopped)
			ptrace(PTRACE_DETACH, pid, NULL, (void *)(long)sig);
	}
}

int vt_follow(struct vt_target *t, const char *const *env, vt_follow_fn take, void *ctx,
	      char *err, size_t errlen)
{
	struct tree tr = { 0 };
	int r;

	if (ptrace(PTRACE_SEIZE, t->cmd_pid, NULL,
		   (void *)(long)(PTRACE_O_TRACEEXEC | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
				  PTRACE_O_EXITKILL)) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot follow %s into the programs it runs: ptrace: %s",
			 t->exe, strerror(-r));
		return r;
	}
	if (!add(&tr, t->cmd_pid))
		return -ENOMEM;
	r = vt_target_release(t, env, err, errlen);
	if (r)
		goto out;
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, __WALL);
		struct tracee *tc;

		if (pid < 0) {
			r = -errno;
			if (r == -EINTR)
				snprintf(err, errlen, "interrupted while following %s", t->exe);
			else if (r == -ECHILD)
				goto none;
			else
				snprintf(err, errlen, "cannot follow %s: %s", t->exe, strerror(-r));
			goto out;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			if (pid == t->cmd_pid)
				command_gone(t, status);
			drop(&tr, pid);
			if (!tr.n)
				goto none;
			continue;
		}
		tc = add(&tr, pid);
		if (!tc) {
			r = -ENOMEM;
			goto out;
		}
		tc->stopped = true;
		switch (status >> 16) {
		case PTRACE_EVENT_EXEC: {
			char link[64], exe[PATH_MAX];
			ssize_t n;

			snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
			n = readlink(link, exe, sizeof(exe) - 1);
			if (n > 0) {
				exe[n] = '\0';
				note_program(&tr, exe);
				if (take(pid, exe, ctx)) {
					t->pid = pid;
					let_go(t, &tr, pid);
					r = 0;
					goto out;
				}
			}
			resume(tc, 0);
			break;
		}
		case PTRACE_EVENT_FORK:
		case PTRACE_EVENT_VFORK: {
			unsigned long child = 0;

			if (ptrace(PTRACE_GETEVENTMSG, pid, NULL, &child) == 0 && child &&
			    !add(&tr, (pid_t)child)) {
				r = -ENOMEM;
				goto out;
			}
			resume(tc, 0);
			break;
		}
		case 0:
			/* a signal on its way to the program */
			resume(tc, WSTOPSIG(status) == SIGTRAP ? 0 : WSTOPSIG(status));
			break;
		default:
			/* PTRACE_EVENT_STOP: a new tracee's first stop, or a group stop */
			resume(tc, 0);
			break;
		}
	}
none:
	snprintf(err, errlen, "%s ran no program with vmtrace probes nor those of a known runtime "
		 "(it ran: %s)", t->exe, tr.seen[0] ? tr.seen : "nothing");
	r = -ENOENT;
out:
	if (r)
		let_go(t, &tr, 0);
	free(tr.v);
	return r;
}

void vt_follow_release(struct vt_target *t)
{
	ptrace(PTRACE_DETACH, t->pid, NULL, NULL);
}
