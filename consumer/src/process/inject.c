/*
 * inject.c: calls made in one thread of a running process (inject.h).
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>

#include "process/inject.h"
#include "process/proc_info.h"

#define XSTATE_MAX (16 * 1024) /* larger than any xsave area (AVX-512: about 2.7 KiB) */
#define RED_ZONE 128           /* below the stack pointer, the stopped code's own */

/* The state letter of a thread (R, S, D, T...), or 0. */
static char thread_state(pid_t pid, pid_t tid)
{
	char path[96], buf[512], *close_paren;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	if (!(f = fopen(path, "re")))
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* the name may hold spaces and parentheses: the state follows the last ')' */
	close_paren = strrchr(buf, ')');
	return close_paren && close_paren[1] == ' ' ? close_paren[2] : 0;
}

static void sleep_us(long us)
{
	struct timespec ts = { 0, us * 1000 };

	nanosleep(&ts, NULL);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Wait up to timeout_ms for tid to change state: 1 with its status, 0 on
 * timeout, -errno. */
static int wait_thread(pid_t tid, int *status, int timeout_ms)
{
	long long until = now_ms() + timeout_ms;

	for (long us = 20;; us = us < 2000 ? us * 2 : us) {
		pid_t r = waitpid(tid, status, __WALL | WNOHANG);

		if (r == tid)
			return 1;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (now_ms() >= until)
			return 0;
		sleep_us(us);
	}
}

static int get_xstate(struct vt_inject *in)
{
	struct iovec iov;

	if (!(in->xstate = malloc(XSTATE_MAX)))
		return -ENOMEM;
	iov = (struct iovec){ in->xstate, XSTATE_MAX };
	if (ptrace(PTRACE_GETREGSET, in->tid, (void *)NT_X86_XSTATE, &iov) < 0)
		return -errno;
	in->xlen = iov.iov_len;
	return 0;
}

int vt_inject_stop(struct vt_inject *in, pid_t pid, pid_t tid, char *err, size_t errlen)
{
	long tracer = vt_proc_status_field(pid, "TracerPid:");
	int status, r;

	memset(in, 0, sizeof(*in));
	in->tid = -1;
	if (tracer > 0) {
		snprintf(err, errlen, "pid %d is traced already (by pid %ld)", (int)pid, tracer);
		return -EBUSY;
	}
	if (vt_proc_status_field(pid, "Seccomp:") == 1) {
		snprintf(err, errlen, "pid %d runs under seccomp's strict mode: it may make no call", (int)pid);
		return -EPERM;
	}
	if (thread_state(pid, tid) == 'T' || thread_state(pid, tid) == 't') {
		snprintf(err, errlen, "pid %d is stopped", (int)pid);
		return -EAGAIN;
	}
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0) {
		r = -errno;
		long scope = -1;
		FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");

		if (f) {
			if (fscanf(f, "%ld", &scope) != 1)
				scope = -1;
			fclose(f);
		}
		if (r == -EPERM && scope >= 0)
			snprintf(err, errlen, "ptrace of pid %d refused (Yama's ptrace_scope is %ld, or a "
				 "security module)", (int)pid, scope);
		else
			snprintf(err, errlen, "ptrace of pid %d: %s", (int)pid, strerror(-r));
		return r;
	}
	in->tid = tid;
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot stop thread %d of pid %d: %s", (int)tid, (int)pid, strerror(-r));
		return r;
	}
	for (;;) {
		r = wait_thread(tid, &status, 1000);
		if (r <= 0) {
			snprintf(err, errlen, "thread %d of pid %d did not stop%s", (int)tid, (int)pid,
				 r ? "" : " within 1 s");
			return r ? r : -ETIME;
		}
		if (!WIFSTOPPED(status)) {
			in->tid = -1;
			snprintf(err, errlen, "thread %d of pid %d ended", (int)tid, (int)pid);
			return -ESRCH;
		}
		if (status >> 16 == PTRACE_EVENT_STOP)
			break;
		/* a signal on its way in first: it goes on as it would have */
		ptrace(PTRACE_CONT, tid, NULL, (void *)(long)WSTOPSIG(status));
	}
	r = ptrace(PTRACE_GETREGS, tid, NULL, &in->saved) < 0 ? -errno : get_xstate(in);
	if (r) {
		snprintf(err, errlen, "cannot read the registers of thread %d: %s", (int)tid, strerror(-r));
		return r;
	}
	in->saved_ok = true;
	return 0;
}

int vt_inject_call(struct vt_inject *in, uint64_t fn, const uint64_t *args, int n, uint64_t *ret,
		   int timeout_ms, char *err, size_t errlen)
{
	struct user_regs_struct regs = in->saved;
	unsigned long long *slots[6] = { &regs.rdi, &regs.rsi, &regs.rdx, &regs.rcx, &regs.r8, &regs.r9 };
	const uint64_t zero = 0;
	int status, r;

	if (n > 6)
		return -EINVAL;
	for (int i = 0; i < n; i++)
		*slots[i] = args[i];
	/* past the red zone, 16-byte aligned, then the return address 0: at the
	 * function's entry rsp + 8 is aligned, as a call leaves it */
	regs.rsp = ((in->saved.rsp - RED_ZONE - 64) & ~15ULL) - 8;
	if ((r = vt_proc_mem_write(in->tid, regs.rsp, &zero, sizeof(zero)))) {
		snprintf(err, errlen, "cannot write to the stack of thread %d: %s", (int)in->tid, strerror(-r));
		return r;
	}
	regs.rip = fn;
	regs.rax = 0;
	regs.orig_rax = (uint64_t)-1; /* no system call to restart while the call runs */
	if (ptrace(PTRACE_SETREGS, in->tid, NULL, &regs) < 0 || ptrace(PTRACE_CONT, in->tid, NULL, NULL) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot run a call in thread %d: %s", (int)in->tid, strerror(-r));
		return r;
	}
	for (long long until = now_ms() + timeout_ms;;) {
		long left = (long)(until - now_ms());

		r = wait_thread(in->tid, &status, left > 0 ? (int)left : 0);
		if (r < 0 || (r > 0 && !WIFSTOPPED(status))) {
			in->tid = -1;
			snprintf(err, errlen, "the thread ended during a call");
			return -ESRCH;
		}
		if (r == 0) {
			/* stopped where it is: the release puts it back as it was */
			ptrace(PTRACE_INTERRUPT, in->tid, NULL, NULL);
			while (wait_thread(in->tid, &status, 1000) > 0 && WIFSTOPPED(status) &&
			       status >> 16 != PTRACE_EVENT_STOP)
				ptrace(PTRACE_CONT, in->tid, NULL, (void *)(long)WSTOPSIG(status));
			snprintf(err, errlen, "a call in thread %d did not return within %d ms", (int)in->tid,
				 timeout_ms);
			return -ETIME;
		}
		if (status >> 16 == PTRACE_EVENT_STOP) {
			ptrace(PTRACE_CONT, in->tid, NULL, NULL);
			continue;
		}
		if (WSTOPSIG(status) == SIGSEGV) {
			if (ptrace(PTRACE_GETREGS, in->tid, NULL, &regs) < 0)
				return -errno;
			if (regs.rip == 0) {
				*ret = regs.rax;
				return 0;
			}
			snprintf(err, errlen, "a call in thread %d faulted at %#llx", (int)in->tid,
				 (unsigned long long)regs.rip);
			return -EFAULT;
		}
		/* another signal: delivered as it would have been */
		ptrace(PTRACE_CONT, in->tid, NULL, (void *)(long)WSTOPSIG(status));
	}
}

void vt_inject_release(struct vt_inject *in)
{
	if (in->tid > 0) {
		if (in->saved_ok) {
			struct iovec iov = { in->xstate, in->xlen };

			/* the registers as stopped (a system call's orig_rax with
			 * them: it restarts), and whatever signal it stops at now
			 * not delivered */
			ptrace(PTRACE_SETREGSET, in->tid, (void *)NT_X86_XSTATE, &iov);
			ptrace(PTRACE_SETREGS, in->tid, NULL, &in->saved);
		}
		ptrace(PTRACE_DETACH, in->tid, NULL, NULL);
	}
	free(in->xstate);
	in->xstate = NULL;
	in->tid = -1;
}

int vt_inject_threads(pid_t pid, pid_t *tids, int max)
{
	char path[64];
	struct dirent *e;
	int n = 0, running = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(d = opendir(path)))
		return -errno;
	while (n < max && (e = readdir(d))) {
		char *end;
		long tid = strtol(e->d_name, &end, 10);

		if (*end || tid <= 0)
			continue;
		tids[n++] = (pid_t)tid;
		if (thread_state(pid, (pid_t)tid) == 'R') {
			/* running ones first, in the order found */
			pid_t t = tids[n - 1];

			memmove(tids + running + 1, tids + running, (size_t)(n - 1 - running) * sizeof(*tids));
			tids[running++] = t;
		}
	}
	closedir(d);
	return n;
}
