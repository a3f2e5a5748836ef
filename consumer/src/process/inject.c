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

#include "process/elf_code.h"
#include "process/inject.h"
#include "process/target_fs.h"
#include "process/usdt_notes.h"

#define XSTATE_MAX (16 * 1024) /* larger than any xsave area (AVX-512: about 2.7 KiB) */
#define RED_ZONE 128           /* below the stack pointer, the stopped code's own */
#define MAPS_MAX 65536         /* mappings read at most: every read bounded */

/* A field of /proc/PID/status ("TracerPid:"), as a number; -1 if absent. */
static long status_field(pid_t pid, const char *field)
{
	char path[64], line[256];
	size_t n = strlen(field);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "re")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n)) {
			v = strtol(line + n, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

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
	long tracer = status_field(pid, "TracerPid:");
	int status, r;

	memset(in, 0, sizeof(*in));
	in->tid = -1;
	if (tracer > 0) {
		snprintf(err, errlen, "pid %d is traced already (by pid %ld)", (int)pid, tracer);
		return -EBUSY;
	}
	if (status_field(pid, "Seccomp:") == 1) {
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
	if ((r = vt_inject_write(in->tid, regs.rsp, &zero, sizeof(zero)))) {
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

int vt_inject_write(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec local = { (void *)buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_writev(pid, &local, 1, &remote, 1, 0);

	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EFAULT;
}

int vt_inject_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EFAULT;
}

struct mapping {
	unsigned long start, end, off, inode;
	char *path;
};

/* pid's file mappings, at most MAPS_MAX; their number or -errno. */
static int read_maps(pid_t pid, struct mapping **out)
{
	char file[64], *line = NULL;
	size_t cap = 0;
	struct mapping *m = NULL;
	int n = 0, size = 0;
	FILE *f;

	snprintf(file, sizeof(file), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(file, "re")))
		return -errno;
	while (n < MAPS_MAX && getline(&line, &cap, f) > 0) {
		unsigned long start, end, off, inode;
		int at = 0;

		if (sscanf(line, "%lx-%lx %*s %lx %*s %lu %n", &start, &end, &off, &inode, &at) < 4 || !at ||
		    !inode || line[at] != '/')
			continue;
		if (n == size) {
			struct mapping *g = realloc(m, (size_t)(size = size ? size * 2 : 64) * sizeof(*m));

			if (!g)
				break;
			m = g;
		}
		line[strcspn(line, "\n")] = '\0';
		char *path = strdup(line + at);

		if (!path)
			break;
		m[n++] = (struct mapping){ start, end, off, inode, path };
	}
	free(line);
	fclose(f);
	*out = m;
	return n;
}

static bool name_starts(const char *path, const char *const *prefixes)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (; *prefixes; prefixes++)
		if (!strncmp(base, *prefixes, strlen(*prefixes)))
			return true;
	return false;
}

int vt_inject_symbol(pid_t pid, const char *const *prefixes, const char *name, uint64_t *addr)
{
	struct mapping *m = NULL;
	int n = read_maps(pid, &m), r = -ENOENT;

	for (int i = 0; i < n && r; i++) {
		char reach[PATH_MAX + 64];
		uint64_t vaddr, off, first;
		bool seen = false;

		for (int j = 0; j < i; j++)
			seen = seen || m[j].inode == m[i].inode;
		if (seen || !name_starts(m[i].path, prefixes) ||
		    vt_tfs_reach_mapped(pid, m[i].start, m[i].end, m[i].path, m[i].inode, reach, sizeof(reach)) ||
		    vt_elf_symbol(reach, name, &vaddr, &off))
			continue;
		/* the load bias: where the file's first page is mapped, less its
		 * link-time address (0 for a fixed executable); .bss included */
		for (int j = 0; j < n && r; j++)
			if (m[j].inode == m[i].inode && !strcmp(m[j].path, m[i].path) && m[j].off == 0 &&
			    !vt_elf_first_vaddr(reach, &first)) {
				*addr = m[j].start - (first & ~4095ULL) + vaddr;
				r = 0;
			}
	}
	for (int i = 0; i < n; i++)
		free(m[i].path);
	free(m);
	return n < 0 ? n : r;
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
