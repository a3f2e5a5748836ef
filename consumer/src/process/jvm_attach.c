/*
 * jvm_attach.c: HotSpot's attach protocol (jvm_attach.h).
 *
 * The JVM listens on /tmp/.java_pid<PID> once asked; it is asked by a file
 * .attach_pid<PID> in its working directory (or /tmp) and a SIGQUIT, whose
 * handler looks for that file before it would print a thread dump. Paths
 * are taken through /proc/PID/root and the pid is the JVM's own in its pid
 * namespace, so a JVM in a container is reached alike. A request is
 * "1\0<command>\0<arg1>\0<arg2>\0<arg3>\0"; the answer, up to the JVM
 * closing the socket, starts with the request's status ("0") and, for load,
 * says "return code: N", the agent's Agent_OnAttach result.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "process/jvm_attach.h"

#define WAIT_SOCKET_MS 5000   /* a JVM at a long safepoint answers late */
#define WAIT_ANSWER_MS 10000  /* Agent_OnAttach runs before the answer */

struct jvm_proc {
	pid_t nspid;          /* the JVM's pid in its own namespace */
	uid_t uid;
	gid_t gid;
	unsigned long long sigcgt;
};

static int read_status(pid_t pid, struct jvm_proc *p)
{
	char path[64], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "r")))
		return -errno;
	p->nspid = pid;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "NSpid:", 6) == 0) {
			char *last = strrchr(line, '\t');

			if (last)
				p->nspid = (pid_t)atoi(last + 1);
		} else if (strncmp(line, "Uid:", 4) == 0) {
			p->uid = (uid_t)strtoul(line + 4, NULL, 10);
		} else if (strncmp(line, "Gid:", 4) == 0) {
			p->gid = (gid_t)strtoul(line + 4, NULL, 10);
		} else if (strncmp(line, "SigCgt:", 7) == 0) {
			p->sigcgt = strtoull(line + 7, NULL, 16);
		}
	}
	fclose(f);
	return 0;
}

/* True when the JVM's command line or its JAVA_TOOL_OPTIONS turn attach off. */
static int attach_disabled(pid_t pid)
{
	static const char flag[] = "-XX:+DisableAttachMechanism";
	const char *files[] = { "cmdline", "environ" };
	char path[64], buf[65536];

	for (size_t i = 0; i < 2; i++) {
		ssize_t n;
		int fd;

		snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, files[i]);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		for (ssize_t at = 0; at < n; at += (ssize_t)strlen(buf + at) + 1) {
			buf[n] = '\0';
			if (strstr(buf + at, flag))
				return 1;
		}
	}
	return 0;
}

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

static int connect_to(const char *sock_path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(sock_path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	memcpy(a.sun_path, sock_path, strlen(sock_path) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

/* Ask the JVM to open its socket: the trigger file, then SIGQUIT. */
static int start_listener(pid_t pid, const struct jvm_proc *p, const char *sock_path, char *err,
			  size_t errlen)
{
	char trigger[128];
	long long until;
	int fd, r = -ETIMEDOUT;

	snprintf(trigger, sizeof(trigger), "/proc/%d/cwd/.attach_pid%d", (int)pid, (int)p->nspid);
	fd = open(trigger, O_WRONLY | O_CREAT | O_CLOEXEC, 0660);
	if (fd < 0) {
		snprintf(trigger, sizeof(trigger), "/proc/%d/root/tmp/.attach_pid%d", (int)pid, (int)p->nspid);
		fd = open(trigger, O_WRONLY | O_CREAT | O_CLOEXEC, 0660);
	}
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot attach to JVM %d: cannot write its trigger file %s: %s",
			 (int)pid, trigger, strerror(errno));
		return r;
	}
	/* the JVM takes only a trigger owned by its own user */
	if (fchown(fd, p->uid, p->gid) && geteuid() != p->uid) {
		r = -errno;
		close(fd);
		unlink(trigger);
		snprintf(err, errlen, "cannot attach to JVM %d: cannot give the trigger file to its user "
			 "%u: %s", (int)pid, (unsigned)p->uid, strerror(errno));
		return r;
	}
	close(fd);
	if (kill(pid, SIGQUIT)) {
		r = -errno;
		unlink(trigger);
		snprintf(err, errlen, "cannot attach to JVM %d: cannot signal it: %s", (int)pid, strerror(errno));
		return r;
	}
	until = now_ms() + WAIT_SOCKET_MS;
	while (now_ms() < until) {
		struct stat sb;

		if (stat(sock_path, &sb) == 0 && S_ISSOCK(sb.st_mode)) {
			r = 0;
			break;
		}
		usleep(10000);
	}
	unlink(trigger);
	if (r)
		snprintf(err, errlen, "cannot attach to JVM %d: it did not open its attach socket within "
			 "%d s (attach disabled, or the JVM is stuck)", (int)pid, WAIT_SOCKET_MS / 1000);
	return r;
}

static int send_all(int fd, const char *buf, size_t n)
{
	while (n) {
		ssize_t w = write(fd, buf, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -errno;
		buf += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The answer up to EOF, NUL-terminated in buf. */
static int read_answer(int fd, char *buf, size_t len)
{
	size_t n = 0;
	long long until = now_ms() + WAIT_ANSWER_MS;

	while (n + 1 < len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long long left = until - now_ms();
		ssize_t r;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		r = read(fd, buf + n, len - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	return 0;
}

int vt_jvm_attach_load(pid_t pid, const char *path, const char *options, char *err, size_t errlen)
{
	struct jvm_proc p = { 0 };
	char sock_path[128], req[8192], answer[4096];
	const char *rc;
	int fd, r, n;

	if ((r = read_status(pid, &p))) {
		snprintf(err, errlen, "cannot attach to JVM %d: %s", (int)pid, strerror(-r));
		return r;
	}
	if (attach_disabled(pid)) {
		snprintf(err, errlen, "cannot attach to JVM %d: it runs with -XX:+DisableAttachMechanism",
			 (int)pid);
		return -EPERM;
	}
	snprintf(sock_path, sizeof(sock_path), "/proc/%d/root/tmp/.java_pid%d", (int)pid, (int)p.nspid);
	fd = connect_to(sock_path);
	if (fd < 0) {
		/* SIGQUIT with no handler would end the JVM */
		if (!(p.sigcgt & (1ULL << (SIGQUIT - 1)))) {
			snprintf(err, errlen, "cannot attach to JVM %d: it does not handle SIGQUIT (started "
				 "with -Xrs, or still starting)", (int)pid);
			return -EPERM;
		}
		if ((r = start_listener(pid, &p, sock_path, err, errlen)))
			return r;
		if ((fd = connect_to(sock_path)) < 0) {
			snprintf(err, errlen, "cannot attach to JVM %d: cannot connect to %s: %s", (int)pid,
				 sock_path, strerror(-fd));
			return fd;
		}
	}
	n = snprintf(req, sizeof(req), "1%cload%c%s%ctrue%c%s%c", 0, 0, path, 0, 0, options ? options : "", 0);
	if (n < 0 || (size_t)n >= sizeof(req)) {
		close(fd);
		snprintf(err, errlen, "cannot attach to JVM %d: the agent's path is too long", (int)pid);
		return -ENAMETOOLONG;
	}
	r = send_all(fd, req, (size_t)n);
	if (!r)
		r = read_answer(fd, answer, sizeof(answer));
	close(fd);
	if (r) {
		snprintf(err, errlen, "cannot attach to JVM %d: no answer to the load request: %s", (int)pid,
			 strerror(-r));
		return r;
	}
	rc = strstr(answer, "return code: ");
	if (answer[0] != '0' || (rc && atoi(rc + 13) != 0)) {
		for (char *c = answer; *c; c++)
			if (*c == '\n' || *c == '\r')
				*c = ' ';
		if (rc)
			snprintf(err, errlen, "JVM %d refused vmtrace's agent %s: Agent_OnAttach returned %d "
				 "(the JVM's stderr says why)", (int)pid, path, atoi(rc + 13));
		else
			snprintf(err, errlen, "JVM %d refused vmtrace's agent %s: it answered '%.200s'", (int)pid,
				 path, answer);
		return -EPERM;
	}
	return 0;
}
