/*
 * target_fs.h: files in a traced process's filesystem, reached so that
 * nothing the process's user planted there can redirect vmtrace.
 *
 * vmtrace runs as root, and a target's working directory and root
 * (/proc/PID/cwd, /proc/PID/root) belong to another user, or to a container
 * whose root that user owns. A path there is never given to open(): each is
 * resolved by openat2() from a directory descriptor of the target's cwd or
 * root with RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
 * so a symbolic link at any component fails the call (ELOOP) and ".." never
 * leaves that directory. What vmtrace creates there it creates O_EXCL while
 * acting as the target's user (this thread's fsuid, fsgid and groups, put
 * back after), so it can make nothing the user could not make; it removes
 * only the entry it made (same device and inode, read from the entry
 * itself, not through a link). Sockets are connected through the O_PATH
 * descriptor that was checked (owner, type), never through a path again.
 *
 * Not thread-safe on one vt_tfs; the credential switch is the calling
 * thread's alone (raw syscalls), so other threads keep root's.
 */
#ifndef VMTRACE_TARGET_FS_H
#define VMTRACE_TARGET_FS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define VT_TFS_GROUPS 64

struct vt_tfs {
	pid_t pid;
	uid_t uid;                       /* the target's effective ids, as vmtrace's */
	gid_t gid;                       /* namespace sees them */
	gid_t groups[VT_TFS_GROUPS];
	int ngroups;
	int root;                        /* O_PATH of /proc/PID/root */
	int cwd;                         /* O_PATH of /proc/PID/cwd, -1 if unreadable */
};

/* An entry vmtrace made, to remove later: the directory holding it (a
 * descriptor, not a path) and what it was. */
struct vt_tfs_made {
	int dir;                         /* -1: nothing made */
	char name[NAME_MAX + 1];
	dev_t dev;
	ino_t ino;
};

/* The target's ids (from /proc/PID/status) and descriptors of its root and
 * cwd. 0 or -errno; vt_tfs_close undoes it (and takes a zeroed struct). */
int vt_tfs_open(struct vt_tfs *t, pid_t pid);
void vt_tfs_close(struct vt_tfs *t);

/* A file named by a path a target may have put there (a module from its
 * maps, a path given to `vmtrace list`), opened read-only only if it is a
 * regular file: a link is followed as usual, but a FIFO, device or socket
 * at the end is never opened (no block, no device's side effect). The
 * descriptor, -ENOEXEC for another kind of file, or -errno. */
int vt_open_regular(const char *path);

/* The file behind one mapping of pid ([start, end), its path as
 * /proc/PID/maps gives it, its inode), opened read-only: through
 * /proc/PID/map_files (deleted files, other mount namespaces; needs
 * privilege), else path below the target's root with no link followed.
 * Only a regular file of that inode is returned, so nothing put at the path
 * since it was mapped (a FIFO, a device, another file) is read. The
 * descriptor, -ENOENT, or -errno. As root: reading needs no user's rights. */
int vt_tfs_open_mapped(pid_t pid, unsigned long start, unsigned long end, const char *path,
		       unsigned long inode);

/* A path by which vmtrace, and the kernel when it attaches uprobes for it,
 * reach the file behind one mapping of pid: the path /proc/PID/maps gives
 * when it names that file here (the host, a chroot), else the same path
 * below the target's root (another mount namespace: a container), else the
 * mapping's map_files link (a file deleted or moved since). Only a regular
 * file of the mapping's inode is taken: a path reached through a link the
 * target planted can name no other file. 0 with the path in out, or
 * -ENOENT. */
int vt_tfs_reach_mapped(pid_t pid, unsigned long start, unsigned long end, const char *path,
			unsigned long inode, char *out, size_t len);

/* The path /proc/PID/maps gives for a module that vt_tfs_reach_mapped
 * reached below pid's root ("/proc/PID/root/usr/lib/x.so" -> "/usr/lib/x.so"),
 * else module itself: for finding its mappings in maps. */
const char *vt_tfs_maps_path(pid_t pid, const char *module);

/* "/proc/PID/root" path, the name by which vmtrace and the kernel (attaching
 * uprobes) reach the file fd has open, found at path (absolute) below pid's
 * root: into out when it names that same regular file, by its device and
 * inode, so nothing swapped in at the path since can be named. 0, or
 * -ENOENT. */
int vt_tfs_root_path_of(pid_t pid, int fd, const char *path, char *out, size_t len);

/* Whether pid's root is this process's: then a path of vmtrace's (a
 * provider in its build tree) is one the process can open. */
bool vt_tfs_same_root(pid_t pid);

/* openat2 of path below base (t->root or t->cwd), as the target's user,
 * no symbolic link followed, with flags (O_CLOEXEC added) and mode. The
 * descriptor or -errno (ELOOP: a link on the way). */
int vt_tfs_openat(const struct vt_tfs *t, int base, const char *path, int flags, mode_t mode);

/* Create name (no '/' in it) in the directory dir (below base), O_EXCL,
 * mode, as the target's user; an entry already there fails with -EEXIST.
 * The file opened for writing, its entry in *made. */
int vt_tfs_create(const struct vt_tfs *t, int base, const char *dir, const char *name, mode_t mode,
		  struct vt_tfs_made *made);

/* Remove what vt_tfs_create made, if the entry is still that file; anything
 * else put in its place is left alone. Accepts an empty made (dir -1);
 * leaves it empty. */
void vt_tfs_remove(const struct vt_tfs *t, struct vt_tfs_made *made);

/* A Unix socket at path (below base) owned by owner: its O_PATH
 * descriptor, -ENOENT when nothing is there, -ELOOP for a symbolic link on
 * the way, -ENOTSOCK for another kind of file, -EPERM for a socket of
 * another user. */
int vt_tfs_socket(const struct vt_tfs *t, int base, const char *path, uid_t owner);

/* Connect a stream socket to the socket whose O_PATH descriptor is sock
 * (from vt_tfs_socket). The connected descriptor, non-blocking, or -errno
 * (-EAGAIN: the listener's backlog is full). */
int vt_tfs_connect(int sock);

/* What is at path (below base), for a one-line error: "nothing", "a
 * symbolic link", "a FIFO", "a directory", "a file of uid N", "behind a
 * symbolic link" (a directory on the way is one)... Never follows a link. */
const char *vt_tfs_describe(const struct vt_tfs *t, int base, const char *path, char *buf,
			    size_t len);

#endif
