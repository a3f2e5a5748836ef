/*
 * target_fs.c: files in a traced process's filesystem (target_fs.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "process/target_fs.h"

#define RESOLVE_TARGET (RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

/* This thread's file-system credentials while it acts as the target's user. */
struct creds {
	bool switched;
	int ngroups;
	gid_t groups[256];
};

/* glibc's setgroups changes every thread; the raw call changes this one,
 * as setfsuid/setfsgid do. Each is checked, and undone when the next fails. */
static int become(const struct vt_tfs *t, struct creds *c)
{
	c->switched = false;
	if (geteuid() == t->uid && getegid() == t->gid)
		return 0; /* vmtrace is the target's user already */
	c->ngroups = (int)syscall(SYS_getgroups, 256, c->groups);
	if (c->ngroups < 0)
		return -errno;
	if (syscall(SYS_setgroups, (size_t)t->ngroups, t->groups))
		return -errno;
	syscall(SYS_setfsgid, t->gid);
	if ((gid_t)syscall(SYS_setfsgid, -1) != t->gid) {
		syscall(SYS_setgroups, (size_t)c->ngroups, c->groups);
		return -EPERM;
	}
	syscall(SYS_setfsuid, t->uid);
	if ((uid_t)syscall(SYS_setfsuid, -1) != t->uid) {
		syscall(SYS_setfsgid, getegid());
		syscall(SYS_setgroups, (size_t)c->ngroups, c->groups);
		return -EPERM;
	}
	c->switched = true;
	return 0;
}

static void restore(const struct creds *c)
{
	int saved = errno;

	if (c->switched) {
		syscall(SYS_setfsuid, geteuid()); /* first: it gives back the file capabilities */
		syscall(SYS_setfsgid, getegid());
		syscall(SYS_setgroups, (size_t)c->ngroups, c->groups);
	}
	errno = saved;
}

static int openat2_target(int base, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (unsigned long long)(flags | O_CLOEXEC),
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_TARGET,
	};
	long fd;

	do
		fd = syscall(SYS_openat2, base, path, &how, sizeof(how));
	while (fd < 0 && errno == EAGAIN);
	return fd < 0 ? -errno : (int)fd;
}

/* The effective id of a "Uid:" or "Gid:" line (real, effective, saved, fs). */
static unsigned long second_field(const char *s)
{
	char *end;

	strtoul(s, &end, 10);
	return strtoul(end, NULL, 10);
}

static int read_ids(struct vt_tfs *t)
{
	char path[64], line[1024];
	FILE *f;
	int seen = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)t->pid);
	if (!(f = fopen(path, "re")))
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "Uid:", 4) == 0) {
			t->uid = (uid_t)second_field(line + 4);
			seen |= 1;
		} else if (strncmp(line, "Gid:", 4) == 0) {
			t->gid = (gid_t)second_field(line + 4);
			seen |= 2;
		} else if (strncmp(line, "Groups:", 7) == 0) {
			char *at = line + 7, *end;

			for (;;) {
				unsigned long g = strtoul(at, &end, 10);

				if (end == at || t->ngroups == VT_TFS_GROUPS)
					break;
				t->groups[t->ngroups++] = (gid_t)g;
				at = end;
			}
		}
	}
	fclose(f);
	return seen == 3 ? 0 : -EIO;
}

int vt_tfs_open(struct vt_tfs *t, pid_t pid)
{
	char path[64];
	int err;

	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->root = t->cwd = -1;
	if ((err = read_ids(t)))
		return err;
	/* the kernel's own links, opened as root: nothing of the target's is followed */
	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	t->root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (t->root < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	snprintf(path, sizeof(path), "/proc/%d/cwd", (int)pid);
	t->cwd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return 0;
}

void vt_tfs_close(struct vt_tfs *t)
{
	if (t->root >= 0)
		close(t->root);
	if (t->cwd >= 0)
		close(t->cwd);
	t->root = t->cwd = -1;
}

static int regular_of_inode(int fd, unsigned long inode)
{
	struct stat st;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_ino == inode)
		return fd;
	close(fd);
	return -ENOENT;
}

/* A regular file's O_PATH descriptor reopened for reading through this
 * process's own descriptor table: the same inode, however the path changes. */
static int reopen_for_reading(int opath)
{
	char link[40];
	int fd;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", opath);
	fd = open(link, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

int vt_open_regular(const char *path)
{
	struct stat st;
	int opath = open(path, O_PATH | O_CLOEXEC), fd;

	if (opath < 0)
		return -errno;
	if (fstat(opath, &st) || !S_ISREG(st.st_mode)) {
		close(opath);
		return -ENOEXEC;
	}
	fd = reopen_for_reading(opath);
	close(opath);
	return fd;
}

int vt_tfs_open_mapped(pid_t pid, unsigned long start, unsigned long end, const char *path,
		       unsigned long inode)
{
	char link[96];
	int fd, root, err;

	/* O_PATH first: a FIFO or device put there is never opened for reading */
	snprintf(link, sizeof(link), "/proc/%d/map_files/%lx-%lx", (int)pid, start, end);
	fd = regular_of_inode(open(link, O_PATH | O_CLOEXEC), inode);
	if (fd < 0 && path[0] == '/') {
		snprintf(link, sizeof(link), "/proc/%d/root", (int)pid);
		root = open(link, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (root < 0)
			return errno == ENOENT ? -ESRCH : -errno;
		fd = regular_of_inode(openat2_target(root, path, O_PATH, 0), inode);
		close(root);
	}
	if (fd < 0)
		return fd == -ELOOP || fd == -ENOTDIR ? -ENOENT : fd;
	err = reopen_for_reading(fd);
	close(fd);
	return err;
}

static bool is_mapped_file(const char *path, unsigned long inode)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_ino == inode;
}

int vt_tfs_reach_mapped(pid_t pid, unsigned long start, unsigned long end, const char *path,
			unsigned long inode, char *out, size_t len)
{
	int n;

	if (path[0] == '/' && is_mapped_file(path, inode)) {
		n = snprintf(out, len, "%s", path);
		if (n > 0 && (size_t)n < len)
			return 0;
	}
	if (path[0] == '/') {
		n = snprintf(out, len, "/proc/%d/root%s", (int)pid, path);
		if (n > 0 && (size_t)n < len && is_mapped_file(out, inode))
			return 0;
	}
	n = snprintf(out, len, "/proc/%d/map_files/%lx-%lx", (int)pid, start, end);
	if (n > 0 && (size_t)n < len && is_mapped_file(out, inode))
		return 0;
	out[0] = '\0';
	return -ENOENT;
}

const char *vt_tfs_maps_path(pid_t pid, const char *module)
{
	char root[40];
	int n = snprintf(root, sizeof(root), "/proc/%d/root/", (int)pid);

	return n > 0 && !strncmp(module, root, (size_t)n) ? module + n - 1 : module;
}

int vt_tfs_root_path_of(pid_t pid, int fd, const char *path, char *out, size_t len)
{
	struct stat a, b;
	int n = snprintf(out, len, "/proc/%d/root%s", (int)pid, path);

	if (n < 0 || (size_t)n >= len || fstat(fd, &a) || !S_ISREG(a.st_mode) || stat(out, &b) ||
	    a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		return -ENOENT;
	return 0;
}

bool vt_tfs_same_root(pid_t pid)
{
	char root[64];
	struct stat a, b;

	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	return stat(root, &a) == 0 && stat("/", &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int vt_tfs_openat(const struct vt_tfs *t, int base, const char *path, int flags, mode_t mode)
{
	struct creds c;
	int fd, err;

	if (base < 0)
		return -EBADF;
	if ((err = become(t, &c)))
		return err;
	fd = openat2_target(base, path, flags, mode);
	restore(&c);
	return fd;
}

static void made_init(struct vt_tfs_made *made)
{
	memset(made, 0, sizeof(*made));
	made->dir = -1;
}

/* name created O_EXCL in the directory dirfd, as the target's user. */
static int create_in(const struct vt_tfs *t, int dirfd, const char *name, mode_t mode,
		     struct vt_tfs_made *made)
{
	struct stat st;
	int fd, dup_dir;

	made_init(made);
	if (strchr(name, '/') || strlen(name) >= sizeof(made->name))
		return -EINVAL;
	fd = vt_tfs_openat(t, dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) || (dup_dir = fcntl(dirfd, F_DUPFD_CLOEXEC, 0)) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	made->dir = dup_dir;
	snprintf(made->name, sizeof(made->name), "%s", name);
	made->dev = st.st_dev;
	made->ino = st.st_ino;
	return fd;
}

int vt_tfs_create(const struct vt_tfs *t, int base, const char *dir, const char *name, mode_t mode,
		  struct vt_tfs_made *made)
{
	int d = vt_tfs_openat(t, base, dir, O_PATH | O_DIRECTORY, 0), fd;

	made_init(made);
	if (d < 0)
		return d;
	fd = create_in(t, d, name, mode, made);
	close(d);
	return fd;
}

void vt_tfs_remove(const struct vt_tfs *t, struct vt_tfs_made *made)
{
	struct creds c;
	struct stat st;

	if (made->dir < 0)
		return;
	if (!become(t, &c)) {
		if (fstatat(made->dir, made->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    st.st_dev == made->dev && st.st_ino == made->ino && S_ISREG(st.st_mode))
			unlinkat(made->dir, made->name, 0);
		restore(&c);
	}
	close(made->dir);
	made_init(made);
}

int vt_tfs_socket(const struct vt_tfs *t, int base, const char *path, uid_t owner)
{
	struct stat st;
	int fd = vt_tfs_openat(t, base, path, O_PATH, 0);

	if (fd < 0)
		return fd;
	if (fstat(fd, &st)) {
		int err = -errno;

		close(fd);
		return err;
	}
	if (!S_ISSOCK(st.st_mode) || st.st_uid != owner) {
		close(fd);
		return S_ISSOCK(st.st_mode) ? -EPERM : -ENOTSOCK;
	}
	return fd;
}

int vt_tfs_connect(int sock)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;

	/* the checked inode itself, through this process's descriptor table;
	 * non-blocking, so a listener that never accepts cannot hold vmtrace */
	snprintf(a.sun_path, sizeof(a.sun_path), "/proc/self/fd/%d", sock);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

const char *vt_tfs_describe(const struct vt_tfs *t, int base, const char *path, char *buf,
			    size_t len)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
	struct stat st;
	int d;

	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
	d = vt_tfs_openat(t, base, dir, O_PATH | O_DIRECTORY, 0);
	if (d < 0) {
		if (d == -ELOOP)
			snprintf(buf, len, "behind a symbolic link");
		else
			snprintf(buf, len, "in a directory vmtrace cannot open (%s)", strerror(-d));
		return buf;
	}
	if (fstatat(d, name, &st, AT_SYMLINK_NOFOLLOW))
		snprintf(buf, len, errno == ENOENT ? "nothing" : "%s", strerror(errno));
	else if (S_ISLNK(st.st_mode))
		snprintf(buf, len, "a symbolic link");
	else if (S_ISFIFO(st.st_mode))
		snprintf(buf, len, "a FIFO");
	else if (S_ISDIR(st.st_mode))
		snprintf(buf, len, "a directory");
	else if (S_ISSOCK(st.st_mode))
		snprintf(buf, len, "a socket of uid %u", (unsigned)st.st_uid);
	else if (S_ISREG(st.st_mode))
		snprintf(buf, len, "a file of uid %u", (unsigned)st.st_uid);
	else
		snprintf(buf, len, "a device");
	close(d);
	return buf;
}
