/*
 * report_out.c: a report for a terminal or for a program (report_out.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/report_out.h"

void vt_report_out_open(struct vt_report_out *o, FILE *dest, struct vt_cli_args *a, bool no_pager)
{
	struct winsize ws = { 0 };
	int fd = fileno(dest);

	memset(o, 0, sizeof(*o));
	o->dest = o->file = dest;
	if (fd < 0 || !isatty(fd) || a->report.format != VT_FORMAT_TEXT)
		return;
	if (ioctl(fd, TIOCGWINSZ, &ws) || !ws.ws_col) {
		const char *cols = getenv("COLUMNS");

		ws.ws_col = cols && atoi(cols) > 0 ? (unsigned short)atoi(cols) : 80;
		ws.ws_row = 0;
	}
	a->report.width = ws.ws_col;
	if (!a->have_top)
		a->report.top = VT_TERMINAL_TOP;
	o->rows = ws.ws_row;
	if (no_pager || !o->rows)
		return;
	o->file = open_memstream(&o->buf, &o->len);
	o->page = o->file != NULL;
	if (!o->file)
		o->file = dest;
}

/* The pager's command: PAGER, else less; NULL for none. */
static const char *pager(void)
{
	const char *p = getenv("PAGER");

	if (!p)
		return "less";
	return *p && strcmp(p, "cat") ? p : NULL;
}

/* buf through the pager, its output on fd. -errno when it could not run
 * (the caller then writes buf itself), else 0. */
static int run_pager(const char *cmd, int fd, const char *buf, size_t len)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;
	int pipefd[2], status;
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		close(pipefd[0]);
		close(pipefd[1]);
		return err;
	}
	if (pid == 0) {
		if (dup2(pipefd[0], 0) < 0 || dup2(fd, 1) < 0)
			_exit(127);
		setenv("LESS", getenv("LESS") ? getenv("LESS") : "FRX", 1);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(pipefd[0]);
	/* a pager quit before the end closes the pipe: not an error */
	sigaction(SIGPIPE, &ign, &old);
	while (len) {
		ssize_t w = write(pipefd[1], buf, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		buf += w;
		len -= (size_t)w;
	}
	close(pipefd[1]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	sigaction(SIGPIPE, &old, NULL);
	return WIFEXITED(status) && WEXITSTATUS(status) == 127 ? -ENOENT : 0;
}

int vt_report_out_close(struct vt_report_out *o)
{
	size_t lines = 0;
	const char *cmd;

	if (!o->page)
		return fflush(o->dest) ? -errno : 0;
	if (fclose(o->file))
		return -errno;
	o->file = o->dest;
	for (size_t i = 0; i < o->len; i++)
		lines += o->buf[i] == '\n';
	fflush(o->dest);
	cmd = pager();
	if (!cmd || lines < o->rows || run_pager(cmd, fileno(o->dest), o->buf, o->len))
		fwrite(o->buf, 1, o->len, o->dest);
	free(o->buf);
	o->buf = NULL;
	return fflush(o->dest) ? -errno : 0;
}
