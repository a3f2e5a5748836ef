/*
 * target_fs against what a target's user can plant: this process is the
 * target, its working directory a fresh temporary one. A link, a FIFO or a
 * directory where a file is to be made, a link on the way, an entry swapped
 * after it was made, a FIFO put where a mapped file was, a link to a socket:
 * each is refused or left alone, and nothing behind a link is touched.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "process/target_fs.h"

static char dir[64];       /* the target's cwd */
static char outside[64];   /* a directory no path below cwd may reach */
static struct vt_tfs t;

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/vt-tfs-XXXXXX");
	snprintf(outside, sizeof(outside), "/tmp/vt-tfs-out-XXXXXX");
	if (!mkdtemp(dir) || !mkdtemp(outside) || chdir(dir))
		return -1;
	return vt_tfs_open(&t, getpid());
}

static int teardown(void **state)
{
	char cmd[200];

	(void)state;
	vt_tfs_close(&t);
	if (chdir("/"))
		return -1;
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s", dir, outside);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int entries(const char *path)
{
	char cmd[200];

	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A %s)\"", path);
	return system(cmd) == 0 ? 0 : 1;
}

static void test_ids(void **state)
{
	(void)state;
	assert_int_equal(t.uid, geteuid());
	assert_int_equal(t.gid, getegid());
	assert_true(t.root >= 0 && t.cwd >= 0);
}

/* O_EXCL: a link (to a file outside), a FIFO or a directory at the name
 * is never opened; the file behind the link keeps its content. */
static void test_create_refuses_planted(void **state)
{
	char victim[128];
	struct vt_tfs_made made;
	struct stat st;

	(void)state;
	snprintf(victim, sizeof(victim), "%s/victim", outside);
	write_file(victim, "victim\n");
	assert_int_equal(symlink(victim, "link"), 0);
	assert_int_equal(mkfifo("fifo", 0600), 0);
	assert_int_equal(mkdir("dir", 0700), 0);
	assert_int_equal(vt_tfs_create(&t, t.cwd, ".", "link", 0600, &made), -EEXIST);
	assert_int_equal(vt_tfs_create(&t, t.cwd, ".", "fifo", 0600, &made), -EEXIST);
	assert_int_equal(vt_tfs_create(&t, t.cwd, ".", "dir", 0600, &made), -EEXIST);
	assert_int_equal(made.dir, -1);
	assert_int_equal(stat(victim, &st), 0);
	assert_int_equal(st.st_size, 7);
	vt_tfs_remove(&t, &made); /* nothing made: nothing removed */
	assert_int_equal(lstat("link", &st), 0);
}

/* A link as a directory on the way, absolute or relative, or ".." out of
 * the base: ELOOP or kept inside; nothing appears outside. */
static void test_no_link_on_the_way(void **state)
{
	struct vt_tfs_made made;
	int fd;

	(void)state;
	assert_int_equal(symlink(outside, "away"), 0);
	assert_int_equal(symlink("../", "up"), 0);
	assert_int_equal(vt_tfs_create(&t, t.cwd, "away", "made", 0600, &made), -ELOOP);
	assert_int_equal(vt_tfs_create(&t, t.cwd, "up", "made", 0600, &made), -ELOOP);
	assert_int_equal(vt_tfs_openat(&t, t.cwd, "away/victim", O_RDONLY, 0), -ELOOP);
	/* ".." at the base stays at the base (RESOLVE_IN_ROOT) */
	fd = vt_tfs_create(&t, t.cwd, "../..", "made", 0600, &made);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(access("made", F_OK), 0);
	vt_tfs_remove(&t, &made);
	assert_int_equal(access("made", F_OK), -1);
	assert_int_equal(entries(outside), 0);
}

/* What was made is removed; what was put in its place is not. */
static void test_remove_only_what_was_made(void **state)
{
	struct vt_tfs_made made;
	struct stat st;
	int fd;

	(void)state;
	fd = vt_tfs_create(&t, t.cwd, ".", "trigger", 0600, &made);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(stat("trigger", &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	/* swapped for another file of the same name */
	assert_int_equal(rename("trigger", "trigger.old"), 0);
	write_file("trigger", "someone else's\n");
	vt_tfs_remove(&t, &made);
	assert_int_equal(stat("trigger", &st), 0);
	assert_int_equal(st.st_size, 15);
	/* swapped for a link to the made file itself: the link stays */
	unlink("trigger");
	fd = vt_tfs_create(&t, t.cwd, ".", "trigger2", 0600, &made);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(rename("trigger2", "moved"), 0);
	assert_int_equal(symlink("moved", "trigger2"), 0);
	vt_tfs_remove(&t, &made);
	assert_int_equal(lstat("trigger2", &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(access("moved", F_OK), 0);
}

/* A file made in a subdirectory, with its mode; a name with a '/' in it
 * is refused, and what was made is removed. */
static void test_create_in_subdirectory(void **state)
{
	struct vt_tfs_made f, bad;
	struct stat st;
	int fd;

	(void)state;
	assert_int_equal(mkdir("tmp", 0777), 0);
	fd = vt_tfs_create(&t, t.cwd, "tmp", "agent.so", 0500, &f);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
	assert_int_equal(lstat("tmp/agent.so", &st), 0);
	assert_int_equal(st.st_mode & 07777, 0500);
	assert_int_equal(st.st_uid, geteuid());
	assert_int_equal(vt_tfs_create(&t, t.cwd, "tmp", "../escape", 0500, &bad), -EINVAL);
	assert_int_equal(bad.dir, -1);
	assert_int_equal(access("escape", F_OK), -1);
	vt_tfs_remove(&t, &f);
	assert_int_equal(lstat("tmp/agent.so", &st), -1);
	assert_int_equal(rmdir("tmp"), 0);
}

/* A socket of this user is connected through the checked descriptor; a
 * link to it, a file, a FIFO: refused, and the socket gets no connection. */
static void test_socket(void **state)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int l, sock, c, accepted;

	(void)state;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s/real.sock", outside);
	l = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 4), 0);
	assert_int_equal(symlink(a.sun_path, "java.sock"), 0);
	assert_int_equal(vt_tfs_socket(&t, t.cwd, "java.sock", geteuid()), -ELOOP);
	write_file("file.sock", "no socket\n");
	assert_int_equal(vt_tfs_socket(&t, t.cwd, "file.sock", geteuid()), -ENOTSOCK);
	assert_int_equal(vt_tfs_socket(&t, t.cwd, "none.sock", geteuid()), -ENOENT);
	accepted = accept(l, NULL, NULL);
	assert_int_equal(accepted, -1);
	/* the same socket, reached with no link: owner checked, then connected */
	sock = vt_tfs_openat(&t, t.root, a.sun_path + 1, O_PATH, 0);
	assert_true(sock >= 0);
	close(sock);
	assert_int_equal(vt_tfs_socket(&t, t.root, a.sun_path + 1, geteuid() + 1), -EPERM);
	sock = vt_tfs_socket(&t, t.root, a.sun_path + 1, geteuid());
	assert_true(sock >= 0);
	c = vt_tfs_connect(sock);
	assert_true(c >= 0);
	accepted = accept(l, NULL, NULL);
	assert_true(accepted >= 0);
	close(accepted);
	close(c);
	close(sock);
	close(l);
}

/* A mapped file replaced at its path by a FIFO: never opened (no block),
 * and never read in the mapped file's place; the original's inode only. */
static void test_open_mapped(void **state)
{
	char path[128], buf[16];
	struct stat st;
	void *m;
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/mapped", dir);
	write_file(path, "mapped bytes\n");
	assert_int_equal(stat(path, &st), 0);
	fd = open(path, O_RDONLY);
	m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	assert_true(m != MAP_FAILED);
	unsigned long start = (unsigned long)m, end = start + 4096;

	fd = vt_tfs_open_mapped(getpid(), start, end, path, st.st_ino);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(rename("mapped", "mapped.old"), 0);
	assert_int_equal(mkfifo("mapped", 0600), 0);
	fd = vt_tfs_open_mapped(getpid(), start, end, path, st.st_ino);
	/* map_files (with privilege) reaches the mapped file itself */
	if (fd >= 0) {
		assert_int_equal(read(fd, buf, 6), 6);
		assert_memory_equal(buf, "mapped", 6);
		close(fd);
	} else {
		assert_int_equal(fd, -ENOENT);
	}
	unlink("mapped");
	assert_int_equal(symlink("mapped.old", "mapped"), 0);
	fd = vt_tfs_open_mapped(getpid(), start, end, path, st.st_ino);
	assert_true(fd >= 0 || fd == -ENOENT);
	if (fd >= 0)
		close(fd);
	munmap(m, 4096);
}

/* As root, against a target of another user: what is made is that user's
 * from the start, and where that user may not write, vmtrace makes
 * nothing either; this thread is root again after. */
static void test_acts_as_user(void **state)
{
	struct vt_tfs other;
	struct vt_tfs_made made;
	struct stat st;
	int pipefd[2], fd;
	pid_t child;
	char c;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(chown(dir, 65534, 65534), 0);
	assert_int_equal(mkdir("rootonly", 0755), 0);
	assert_int_equal(pipe(pipefd), 0);
	child = fork();
	if (child == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(1);
		close(pipefd[1]);
		if (read(pipefd[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(pipefd[0]);
	/* its ids are nobody's once /proc says so */
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(vt_tfs_open(&other, child), 0);
		if (other.uid == 65534)
			break;
		vt_tfs_close(&other);
		usleep(1000);
	}
	assert_int_equal(other.uid, 65534);
	fd = vt_tfs_create(&other, other.cwd, ".", "made", 0600, &made);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_uid, 65534);
	assert_int_equal(st.st_gid, 65534);
	close(fd);
	vt_tfs_remove(&other, &made);
	assert_int_equal(access("made", F_OK), -1);
	assert_int_equal(vt_tfs_create(&other, other.cwd, "rootonly", "made", 0600, &made), -EACCES);
	/* root's own rights are back on this thread */
	fd = open("rootonly/mine", O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	vt_tfs_close(&other);
	close(pipefd[1]);
	waitpid(child, NULL, 0);
}

/* The path the probes of a mapped file take: maps' own here; after the
 * file is moved, its map_files link (with privilege), never the new file
 * put at its old path; a container's path maps back to maps' form. */
static void test_reach_mapped(void **state)
{
	char path[128], reach[256], want[128];
	struct stat st;
	void *m;
	int fd, err;

	(void)state;
	snprintf(path, sizeof(path), "%s/lib.so", dir);
	write_file(path, "library bytes\n");
	assert_int_equal(stat(path, &st), 0);
	fd = open(path, O_RDONLY);
	m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	assert_true(m != MAP_FAILED);
	unsigned long start = (unsigned long)m, end = start + 4096;

	assert_int_equal(vt_tfs_reach_mapped(getpid(), start, end, path, st.st_ino, reach, sizeof(reach)), 0);
	assert_string_equal(reach, path);
	assert_int_equal(rename("lib.so", "lib.so.old"), 0);
	write_file(path, "another file\n");
	err = vt_tfs_reach_mapped(getpid(), start, end, path, st.st_ino, reach, sizeof(reach));
	if (!err) {
		snprintf(want, sizeof(want), "/proc/%d/map_files/%lx-%lx", (int)getpid(), start, end);
		assert_string_equal(reach, want);
	} else {
		assert_int_equal(err, -ENOENT);
	}
	munmap(m, 4096);
	snprintf(want, sizeof(want), "/proc/%d/root/usr/lib/x.so", 4242);
	assert_string_equal(vt_tfs_maps_path(4242, want), "/usr/lib/x.so");
	assert_string_equal(vt_tfs_maps_path(4243, want), want);
	assert_string_equal(vt_tfs_maps_path(4242, "/usr/lib/x.so"), "/usr/lib/x.so");
}

static void test_describe(void **state)
{
	char buf[96];

	(void)state;
	assert_int_equal(symlink("/etc/passwd", "l"), 0);
	assert_int_equal(mkfifo("p", 0600), 0);
	assert_int_equal(mkdir("d", 0700), 0);
	assert_int_equal(symlink("/etc", "ld"), 0);
	assert_string_equal(vt_tfs_describe(&t, t.cwd, "l", buf, sizeof(buf)), "a symbolic link");
	assert_string_equal(vt_tfs_describe(&t, t.cwd, "p", buf, sizeof(buf)), "a FIFO");
	assert_string_equal(vt_tfs_describe(&t, t.cwd, "d", buf, sizeof(buf)), "a directory");
	assert_string_equal(vt_tfs_describe(&t, t.cwd, "none", buf, sizeof(buf)), "nothing");
	assert_string_equal(vt_tfs_describe(&t, t.cwd, "ld/passwd", buf, sizeof(buf)),
			    "behind a symbolic link");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ids, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create_refuses_planted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_link_on_the_way, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove_only_what_was_made, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create_in_subdirectory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_socket, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_mapped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_acts_as_user, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reach_mapped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_describe, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
