/*
 * target_probes.c: the probes a target has (target.h): a running
 * process's, from what it maps; a command's, before it runs, from its
 * program and the libraries its dynamic loader will map for it (the
 * loader's own `--list`, as ldd does), and a script's, from its
 * interpreter's.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "session/target.h"

extern char **environ;

/* The program interpreter (PT_INTERP) of path, or NULL for a static program. */
static char *program_interpreter(const char *path)
{
	char *interp = NULL;
	size_t nphdr;
	Elf *elf;
	int fd;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && elf_getphdrnum(elf, &nphdr) == 0) {
		for (size_t i = 0; i < nphdr && !interp; i++) {
			GElf_Phdr ph;
			size_t len;
			char *raw;

			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_INTERP)
				continue;
			raw = elf_rawfile(elf, &len);
			if (raw && ph.p_offset < len && ph.p_filesz <= len - ph.p_offset &&
			    ph.p_filesz > 1 && memchr(raw + ph.p_offset, '\0', ph.p_filesz))
				interp = strdup(raw + ph.p_offset);
		}
	}
	elf_end(elf);
	close(fd);
	return interp;
}

/* Append the probes of every library the loader names for exe. Lines look
 * like "\tlibfoo.so.1 => /path/libfoo.so.1 (0x...)" or "\t/lib64/ld-linux... (0x...)". */
static int add_library_probes(const char *exe, struct vt_usdt_list *out)
{
	char *interp = program_interpreter(exe);
	char *argv[] = { interp, "--list", (char *)exe, NULL };
	posix_spawn_file_actions_t fa;
	char *line = NULL;
	size_t cap = 0;
	int pipefd[2], status, err = 0;
	pid_t pid;
	FILE *f;

	if (!interp)
		return 0; /* static: everything is in the program */
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		free(interp);
		return -errno;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	err = posix_spawn(&pid, interp, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	if (err) {
		close(pipefd[0]);
		free(interp);
		return -err;
	}
	f = fdopen(pipefd[0], "r");
	while (f && getline(&line, &cap, f) > 0) {
		char *p = strstr(line, "=> "), *end;

		p = p ? p + 3 : line + strspn(line, " \t");
		if (*p != '/')
			continue; /* vdso, or "not found" */
		end = strstr(p, " (0x");
		if (!end)
			end = p + strcspn(p, "\n");
		*end = '\0';
		int r = vt_usdt_read_file(p, out);
		if (r == -ENOMEM) {
			err = r;
			break;
		}
	}
	free(line);
	if (f)
		fclose(f);
	else
		close(pipefd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	free(interp);
	return err;
}

/*
 * The program the kernel will really run for path: path itself, or for a
 * script ("#!INTERP [ARG]") its interpreter, followed through nested
 * scripts and through env(1) to the program env looks up in PATH
 * ("#!/usr/bin/env python3" runs python3). malloc'd; NULL when path is
 * neither (or the chain is longer than the kernel allows).
 */
static char *program_behind(const char *path, int depth)
{
	char buf[256], *interp, *arg, *end;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 2 || buf[0] != '#' || buf[1] != '!')
		return depth ? strdup(path) : NULL;
	if (depth >= 4) /* the kernel's own limit on nested interpreters */
		return NULL;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	interp = buf + 2 + strspn(buf + 2, " \t");
	end = interp + strcspn(interp, " \t");
	arg = *end ? end + 1 + strspn(end + 1, " \t") : end;
	*end = '\0';
	if (!*interp)
		return NULL;
	const char *base = strrchr(interp, '/') ? strrchr(interp, '/') + 1 : interp;
	if (!strcmp(base, "env")) {
		/* skip env's options (-S splits the rest, as here) and NAME=VALUE */
		for (;;) {
			char *word = arg, *next = word + strcspn(word, " \t");

			if (*next)
				*next++ = '\0';
			arg = next + strspn(next, " \t");
			if (!*word)
				return NULL;
			if (word[0] == '-' || strchr(word, '='))
				continue;
			char *prog = vt_find_program(word);
			char *real = prog ? program_behind(prog, depth + 1) : NULL;

			free(prog);
			return real;
		}
	}
	return program_behind(interp, depth + 1);
}

int vt_target_probes(struct vt_target *t, struct vt_usdt_list *out, char *err, size_t errlen)
{
	int r;

	if (!t->spawned) {
		r = vt_usdt_read_pid(t->pid, out);
		if (r == -ESRCH)
			snprintf(err, errlen, "no process with pid %d", (int)t->pid);
		else if (r == -EACCES || r == -EPERM)
			snprintf(err, errlen, "not permitted to read the mappings of pid %d "
				 "(needs root, or ptrace access to it)", (int)t->pid);
		else if (r)
			snprintf(err, errlen, "cannot read the probes of pid %d: %s", (int)t->pid,
				 strerror(-r));
		return r;
	}
	r = vt_usdt_read_file(t->exe, out);
	if (r == -ENOEXEC) {
		/* a script: the probes are its interpreter's */
		free(t->interp);
		t->interp = program_behind(t->exe, 0);
		if (!t->interp) {
			snprintf(err, errlen, "cannot read the probes of %s: neither an ELF program "
				 "nor a script whose interpreter can be found", t->exe);
			return r;
		}
		r = vt_usdt_read_file(t->interp, out);
	}
	if (r) {
		snprintf(err, errlen, "cannot read the probes of %s: %s",
			 t->interp ? t->interp : t->exe,
			 r == -ENOEXEC ? "not an ELF program" : strerror(-r));
		return r;
	}
	r = add_library_probes(t->interp ? t->interp : t->exe, out);
	if (r) {
		snprintf(err, errlen, "cannot list the libraries of %s: %s",
			 t->interp ? t->interp : t->exe, strerror(-r));
		return r;
	}
	return 0;
}

int vt_program_probes(const char *exe, struct vt_usdt_list *out)
{
	int r = vt_usdt_read_file(exe, out);

	return r ? r : add_library_probes(exe, out);
}
