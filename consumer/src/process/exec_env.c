/*
 * exec_env.c: the arguments and environment of a process stopped at its
 * exec (exec_env.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>

#include "process/exec_env.h"

#define MAX_WORDS 65536          /* argc, argv, envp, auxv: what one read of 512 KiB holds */
#define MAX_STRING (128 * 1024)  /* the kernel's longest argument or environment string */

static ssize_t mem_io(pid_t pid, uint64_t addr, void *buf, size_t len, int write)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = write ? process_vm_writev(pid, &local, 1, &remote, 1, 0)
			  : process_vm_readv(pid, &local, 1, &remote, 1, 0);

	return n < 0 ? -errno : n;
}

/* Whether the string at addr starts with name and '='. */
static int named(pid_t pid, uint64_t addr, const char *name, size_t len)
{
	char head[256];

	if (len + 1 > sizeof(head) || mem_io(pid, addr, head, len + 1, 0) != (ssize_t)(len + 1))
		return 0;
	return memcmp(head, name, len) == 0 && head[len] == '=';
}

/* Write "name=value" over the string at addr, when it fits. */
static int put_value(pid_t pid, uint64_t addr, const char *name, const char *value)
{
	size_t len = strlen(name) + 1 + strlen(value) + 1, old;
	char *s = malloc(MAX_STRING);
	ssize_t n;
	int err;

	if (!s)
		return -ENOMEM;
	n = mem_io(pid, addr, s, MAX_STRING, 0);
	if (n <= 0) {
		free(s);
		return n < 0 ? (int)n : -EIO;
	}
	old = strnlen(s, (size_t)n);
	err = old == (size_t)n ? -E2BIG : old + 1 < len ? -ENOSPC : 0;
	if (!err) {
		memcpy(s, name, strlen(name));
		s[strlen(name)] = '=';
		memcpy(s + strlen(name) + 1, value, strlen(value) + 1);
		n = mem_io(pid, addr, s, len, 1);
		err = n == (ssize_t)len ? 0 : n < 0 ? (int)n : -EIO;
	}
	free(s);
	return err;
}

/* The new program's initial stack at regs->rsp: argc, argv and its NULL,
 * envp and its NULL, the auxiliary vector up to AT_NULL's pair; read into
 * *w (malloc'd), env0 the index of envp[0], end one past AT_NULL's pair. */
static int read_table(pid_t pid, const struct user_regs_struct *regs, uint64_t **w, size_t *env0,
		      size_t *end)
{
	size_t n, i;
	ssize_t got;

	*w = malloc(MAX_WORDS * sizeof(**w));
	if (!*w)
		return -ENOMEM;
	/* the stack's top may end the read early: what it holds is enough */
	got = mem_io(pid, regs->rsp, *w, MAX_WORDS * sizeof(**w), 0);
	if (got < (ssize_t)sizeof(**w))
		return got < 0 ? (int)got : -EIO;
	n = (size_t)got / sizeof(**w);
	*env0 = (*w)[0] < n ? (size_t)(*w)[0] + 2 : SIZE_MAX; /* past argc, argv and its NULL */
	if (*env0 >= n || (*w)[*env0 - 1])
		return -E2BIG;
	for (i = *env0; i < n && (*w)[i]; i++)
		;
	/* the auxiliary vector: (type, value) pairs up to AT_NULL's */
	for (i++; i + 1 < n && (*w)[i]; i += 2)
		;
	if (i + 1 >= n)
		return -E2BIG;
	*end = i + 2;
	return 0;
}

int vt_exec_env_put(pid_t pid, const char *name, const char *value)
{
	struct user_regs_struct regs;
	size_t len = strlen(name), env0, i, found = SIZE_MAX, end;
	uint64_t *w = NULL;
	ssize_t got;
	int err;

	if (ptrace(PTRACE_GETREGS, pid, NULL, &regs))
		return -errno;
	if ((err = read_table(pid, &regs, &w, &env0, &end)))
		goto out;
	for (i = env0; w[i] && found == SIZE_MAX; i++)
		if (named(pid, w[i], name, len))
			found = i;
	if (found == SIZE_MAX)
		goto out;
	if (value) {
		err = put_value(pid, w[found], name, value);
		goto out;
	}
	memmove(&w[found], &w[found + 1], (end - found - 1) * sizeof(*w));
	w[end - 1] = 0;
	got = mem_io(pid, regs.rsp + found * sizeof(*w), &w[found], (end - found) * sizeof(*w), 1);
	if (got != (ssize_t)((end - found) * sizeof(*w)))
		err = got < 0 ? (int)got : -EIO;
out:
	free(w);
	return err;
}

int vt_exec_arg_insert(pid_t pid, size_t at, const char *arg)
{
	struct user_regs_struct regs;
	size_t env0, end, len = strlen(arg) + 1;
	uint64_t *w = NULL, str, table;
	ssize_t got;
	int err;

	if (len > MAX_STRING)
		return -E2BIG;
	if (ptrace(PTRACE_GETREGS, pid, NULL, &regs))
		return -errno;
	if ((err = read_table(pid, &regs, &w, &env0, &end)))
		goto out;
	if (at < 1 || at > w[0]) {
		err = -EINVAL;
		goto out;
	}
	/* below the old table, in the room the kernel maps under a new
	 * stack: the string, then the table one word longer, 16-aligned as
	 * the ABI has the stack at entry */
	str = (regs.rsp - len) & ~(uint64_t)15;
	table = (str - (end + 1) * sizeof(*w)) & ~(uint64_t)15;
	memmove(&w[at + 2], &w[at + 1], (end - at - 1) * sizeof(*w));
	w[at + 1] = str;
	w[0]++;
	got = mem_io(pid, str, (void *)arg, len, 1);
	if (got == (ssize_t)len)
		got = mem_io(pid, table, w, (end + 1) * sizeof(*w), 1) == (ssize_t)((end + 1) * sizeof(*w))
			      ? 0 : -EIO;
	if (got) {
		err = got < 0 ? (int)got : -EIO;
		goto out;
	}
	regs.rsp = table;
	if (ptrace(PTRACE_SETREGS, pid, NULL, &regs))
		err = -errno;
out:
	free(w);
	return err;
}
