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
 *
 * The JVM's cwd and /tmp are its user's (or a container's), so every file
 * there is reached through target_fs.h: no link followed, the trigger made
 * new as that user and removed only if it is still the one made, the socket
 * checked for type and owner and connected through the descriptor that was
 * checked. The answer is the JVM's word: bounded in size and time, and
 * quoted only as printable text.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtimes/jvm/jvm_attach.h"
#include "process/target_fs.h"

#define WAIT_SOCKET_MS 5000   /* a JVM at a long safepoint answers late */
#define WAIT_ANSWER_MS 10000  /* Agent_OnAttach runs before the answer */

struct jvm {
	pid_t pid;
	pid_t nspid;                     /* the JVM's pid in its own namespace */
	unsigned long long sigcgt;
	struct vt_tfs fs;                /* its root and cwd, its user */
	char sock[48];                   /* "tmp/.java_pid<NSpid>", below its root */
	char trigger[48];                /* ".attach_pid<NSpid>" */
};

/* Its pid in its own namespace (the last of NSpid) and the signals it catches. */
static int read_proc(struct jvm *j)
{
	char path[64], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)j->pid);
	if (!(f = fopen(path, "re")))
		return errno == ENOENT ? -ESRCH : -errno;
	j->nspid = j->pid;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "NSpid:", 6) == 0) {
			char *last = strrchr(line, '\t');

			if (last)
				j->nspid = (pid_t)atoi(last + 1);
		} else if (strncmp(line, "SigCgt:", 7) == 0) {
			j->sigcgt = strtoull(line + 7, NULL, 16);
		}
	}
	fclose(f);
	return j->nspid > 0 ? 0 : -EIO;
}

/* True when the JVM's command line or its environment (JAVA_TOOL_OPTIONS,
 * JDK_JAVA_OPTIONS) give flag. */
static int flag_given(pid_t pid, const char *flag)
{
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

/* The JVM's attach socket, when one is there: a socket owned by the JVM's
 * user at its /tmp/.java_pid<NSpid>, reached with no link followed. Its
 * O_PATH descriptor, -ENOENT, or -errno with the reason in err. */
static int find_socket(const struct jvm *j, char *err, size_t errlen)
{
	char what[96];
	int fd = vt_tfs_socket(&j->fs, j->fs.root, j->sock, j->fs.uid);

	if (fd >= 0 || fd == -ENOENT)
		return fd;
	snprintf(err, errlen, "cannot attach to JVM %d: /%s is %s, not the JVM's attach socket (a "
		 "socket of uid %u)", (int)j->pid, j->sock,
		 vt_tfs_describe(&j->fs, j->fs.root, j->sock, what, sizeof(what)), (unsigned)j->fs.uid);
	return fd;
}

/* A trigger file someone else left (jcmd) that the JVM takes as it is: a
 * regular file of its user or root. It is neither opened nor removed. */
static bool usable_trigger(const struct jvm *j, int base, const char *path)
{
	struct stat st;
	int fd = vt_tfs_openat(&j->fs, base, path, O_PATH, 0);
	bool ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		  (st.st_uid == j->fs.uid || st.st_uid == 0);

	if (fd >= 0)
		close(fd);
	return ok;
}

/* The trigger, .attach_pid<NSpid> in the JVM's working directory, else in
 * its /tmp (where HotSpot looks, in that order): made new as the JVM's
 * user, so it is theirs and nothing planted there is opened or changed. */
static int make_trigger(const struct jvm *j, struct vt_tfs_made *made, char *err, size_t errlen)
{
	const struct { int base; const char *dir; } at[2] = { { j->fs.cwd, "." }, { j->fs.root, "tmp" } };
	char why[2][128];

	for (int i = 0; i < 2; i++) {
		char path[64];
		int fd = vt_tfs_create(&j->fs, at[i].base, at[i].dir, j->trigger, 0600, made);

		if (fd >= 0) {
			close(fd);
			return 0;
		}
		snprintf(path, sizeof(path), "%s/%s", at[i].dir, j->trigger);
		if (fd == -EEXIST && usable_trigger(j, at[i].base, path))
			return 0;
		if (fd == -EEXIST)
			vt_tfs_describe(&j->fs, at[i].base, path, why[i], sizeof(why[i]));
		else if (at[i].base < 0)
			snprintf(why[i], sizeof(why[i]), "not readable");
		else
			snprintf(why[i], sizeof(why[i]), "%s", fd == -ELOOP ? "a symbolic link on the way"
				 : strerror(-fd));
	}
	snprintf(err, errlen, "cannot attach to JVM %d: cannot make its trigger file %s in its working "
		 "directory (%s there) or in /tmp (%s there)", (int)j->pid, j->trigger, why[0], why[1]);
	return -EEXIST;
}

/* Ask the JVM to open its socket: the trigger, then SIGQUIT, whose handler
 * looks for the trigger before it would print a thread dump. The socket's
 * O_PATH descriptor, or -errno with the reason in err. */
static int start_listener(const struct jvm *j, char *err, size_t errlen)
{
	struct vt_tfs_made made;
	long long until;
	int r, sock = -ETIMEDOUT;

	if ((r = make_trigger(j, &made, err, errlen)))
		return r;
	if (kill(j->pid, SIGQUIT)) {
		r = -errno;
		vt_tfs_remove(&j->fs, &made);
		snprintf(err, errlen, "cannot attach to JVM %d: cannot signal it: %s", (int)j->pid,
			 strerror(-r));
		return r;
	}
	until = now_ms() + WAIT_SOCKET_MS;
	while (now_ms() < until) {
		/* something else at the path may yet be replaced by the JVM's socket */
		if ((sock = find_socket(j, err, errlen)) >= 0)
			break;
		usleep(10000);
	}
	vt_tfs_remove(&j->fs, &made);
	if (sock == -ENOENT || sock == -ETIMEDOUT) {
		char what[96] = "nothing";

		/* HotSpot takes the first trigger it finds, and only its user's or root's */
		if (j->fs.cwd >= 0)
			vt_tfs_describe(&j->fs, j->fs.cwd, j->trigger, what, sizeof(what));
		if (strcmp(what, "nothing"))
			snprintf(err, errlen, "cannot attach to JVM %d: it did not open its attach socket within "
				 "%d s; its working directory holds %s at %s, which the JVM looks at before "
				 "/tmp's", (int)j->pid, WAIT_SOCKET_MS / 1000, what, j->trigger);
		else
			snprintf(err, errlen, "cannot attach to JVM %d: it did not open its attach socket "
				 "within %d s (attach disabled, or the JVM is stuck)", (int)j->pid,
				 WAIT_SOCKET_MS / 1000);
		sock = -ETIMEDOUT;
	}
	return sock;
}

/* All of buf on the non-blocking socket, by the answer's deadline. */
static int send_all(int fd, const char *buf, size_t n, long long until)
{
	while (n) {
		ssize_t w = write(fd, buf, n);

		if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };
			long long left = until - now_ms();

			if (left <= 0)
				return -ETIMEDOUT;
			poll(&pfd, 1, (int)left);
			continue;
		}
		if (w <= 0)
			return w < 0 ? -errno : -EPIPE;
		buf += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The answer up to EOF, NUL-terminated in buf. */
static int read_answer(int fd, char *buf, size_t len, long long until)
{
	size_t n = 0;

	while (n + 1 < len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long long left = until - now_ms();
		ssize_t r;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		r = read(fd, buf + n, len - 1 - n);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
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

/* text (n bytes) as one printable line: what a JVM answers is its own. */
static void printable(char *out, size_t len, const char *text, size_t n)
{
	size_t o = 0;

	for (size_t i = 0; i < n && text[i] && o + 1 < len; i++)
		out[o++] = (unsigned char)text[i] < 0x20 || (unsigned char)text[i] >= 0x7f ? ' ' : text[i];
	out[o] = '\0';
}

/* The load request on the connected socket, its answer read and judged:
 * status "0" and, when it says one, "return code: 0". */
static int load(const struct jvm *j, int fd, const char *path, const char *options, char *err,
		size_t errlen)
{
	char req[8192], answer[4096], shown[201], *end;
	const char *rc;
	bool status_ok;
	long code = 0;
	long long until;
	int n, r;

	n = snprintf(req, sizeof(req), "1%cload%c%s%ctrue%c%s%c", 0, 0, path, 0, 0, options ? options : "", 0);
	if (n < 0 || (size_t)n >= sizeof(req)) {
		snprintf(err, errlen, "cannot attach to JVM %d: the agent's path is too long", (int)j->pid);
		return -ENAMETOOLONG;
	}
	until = now_ms() + WAIT_ANSWER_MS;
	r = send_all(fd, req, (size_t)n, until);
	if (!r)
		r = read_answer(fd, answer, sizeof(answer), until);
	if (r) {
		snprintf(err, errlen, "cannot attach to JVM %d: no answer to the load request: %s",
			 (int)j->pid, strerror(-r));
		return r;
	}
	/* "0\n" and, for load, "return code: N\n" (Agent_OnAttach's) */
	rc = strstr(answer, "return code: ");
	status_ok = answer[0] == '0' && (answer[1] == '\n' || answer[1] == '\0');
	if (rc) {
		errno = 0;
		code = strtol(rc + 13, &end, 10);
		if (end == rc + 13 || errno)
			rc = NULL; /* not a number: quoted below */
	}
	if (status_ok && (!rc || code == 0))
		return 0;
	if (status_ok && rc) {
		snprintf(err, errlen, "JVM %d refused vmtrace's agent %s: Agent_OnAttach returned %ld "
			 "(the JVM's stderr says why)", (int)j->pid, path, code);
	} else {
		printable(shown, sizeof(shown), answer, strlen(answer));
		snprintf(err, errlen, "JVM %d refused vmtrace's agent %s: it answered '%s'", (int)j->pid,
			 path, shown);
	}
	return -EPERM;
}

int vt_jvm_attach_load(pid_t pid, const char *path, const char *options, char *err, size_t errlen)
{
	struct jvm j = { .pid = pid };
	int sock, fd, r;

	if ((r = read_proc(&j))) {
		snprintf(err, errlen, "cannot attach to JVM %d: %s", (int)pid, strerror(-r));
		return r;
	}
	if (flag_given(pid, "-XX:+DisableAttachMechanism")) {
		snprintf(err, errlen, "cannot attach to JVM %d: it runs with -XX:+DisableAttachMechanism",
			 (int)pid);
		return -EPERM;
	}
	/* JDK 21+ (JEP 451): no agent loaded into it while it runs */
	if (flag_given(pid, "-XX:-EnableDynamicAgentLoading")) {
		snprintf(err, errlen, "cannot load vmtrace's agent into JVM %d: it runs with "
			 "-XX:-EnableDynamicAgentLoading", (int)pid);
		return -EPERM;
	}
	if ((r = vt_tfs_open(&j.fs, pid))) {
		vt_tfs_close(&j.fs);
		snprintf(err, errlen, "cannot attach to JVM %d: cannot open its root: %s", (int)pid,
			 strerror(-r));
		return r;
	}
	snprintf(j.sock, sizeof(j.sock), "tmp/.java_pid%d", (int)j.nspid);
	snprintf(j.trigger, sizeof(j.trigger), ".attach_pid%d", (int)j.nspid);
	sock = find_socket(&j, err, errlen);
	if (sock == -ENOENT) {
		/* SIGQUIT with no handler would end the JVM */
		if (!(j.sigcgt & (1ULL << (SIGQUIT - 1)))) {
			snprintf(err, errlen, "cannot attach to JVM %d: it does not handle SIGQUIT (started "
				 "with -Xrs, or still starting)", (int)pid);
			sock = -EPERM;
		} else {
			sock = start_listener(&j, err, errlen);
		}
	}
	if (sock < 0) {
		vt_tfs_close(&j.fs);
		return sock;
	}
	fd = vt_tfs_connect(sock);
	close(sock);
	if (fd < 0) {
		snprintf(err, errlen, "cannot attach to JVM %d: cannot connect to its socket /%s: %s",
			 (int)pid, j.sock, strerror(-fd));
		vt_tfs_close(&j.fs);
		return fd;
	}
	r = load(&j, fd, path, options, err, errlen);
	close(fd);
	vt_tfs_close(&j.fs);
	return r;
}
