/*
 * jvm_agent.c: finding and loading vmtrace's JVMTI agent (jvm_agent.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "process/exec_env.h"
#include "runtimes/jvm/jvm_attach.h"
#include "process/target_fs.h"
#include "runtimes/jvm/jvm_agent.h"
#include "runtimes/provider_find.h"
#include "runtimes/runtime.h"

#ifndef VT_JVM_AGENT_INSTALL_DIR
#define VT_JVM_AGENT_INSTALL_DIR NULL
#endif

int vt_jvm_agent_find(char *path, size_t len)
{
	return vt_provider_find(VT_JVM_AGENT_FILE, "VMTRACE_JVM_AGENT_DIR", "lib/jvm", VT_JVM_AGENT_INSTALL_DIR,
				path, len);
}

bool vt_jvm_agent_is(const char *path)
{
	const char *base = path ? strrchr(path, '/') : NULL;
	size_t n = base ? strlen(++base) : 0;

	/* its own name, or a copy placed in a container's root (agent_place) */
	return vt_provider_is(path, VT_JVM_AGENT_FILE) ||
	       (n > sizeof(VT_JVM_AGENT_PLACED) + 2 &&
		!strncmp(base, VT_JVM_AGENT_PLACED, sizeof(VT_JVM_AGENT_PLACED) - 1) && !strcmp(base + n - 3, ".so"));
}

/* The agent's bytes from src to dst; the agent is vmtrace's own file,
 * bounded all the same. */
static int copy_file(int src, int dst)
{
	char buf[65536];
	struct stat st;
	off_t left;

	if (fstat(src, &st) || !S_ISREG(st.st_mode) || st.st_size > VT_JVM_AGENT_MAX_BYTES)
		return -EFBIG;
	for (left = st.st_size; left > 0;) {
		ssize_t r = read(src, buf, sizeof(buf)), w = 0;

		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		while (w < r) {
			ssize_t k = write(dst, buf + w, (size_t)(r - w));

			if (k <= 0)
				return k < 0 ? -errno : -EIO;
			w += k;
		}
		left -= r;
	}
	return 0;
}

/* A copy of the agent at path in the JVM's own /tmp (its root's: a
 * container's), made new as the JVM's user and writable by no one, so the
 * JVM can open it and its user owns it; the path as the JVM sees it in out,
 * the entry in *made. 0 or -errno with the reason in err. */
static int agent_place(struct vt_tfs *t, pid_t pid, const char *path, char *out, size_t len,
		       struct vt_tfs_made *made, char *err, size_t errlen)
{
	char name[NAME_MAX];
	int src = open(path, O_RDONLY | O_CLOEXEC), dst = -EEXIST, r;

	if (src < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot read vmtrace's JVM agent %s: %s", path, strerror(-r));
		return r;
	}
	/* a name nobody holds yet: an entry already there is never touched */
	for (unsigned i = 0; i < 16 && dst == -EEXIST; i++) {
		snprintf(name, sizeof(name), VT_JVM_AGENT_PLACED "%d-%u.so", (int)pid, i);
		dst = vt_tfs_create(t, t->root, "tmp", name, 0500, made);
	}
	if (dst < 0) {
		close(src);
		snprintf(err, errlen, "cannot place vmtrace's JVM agent in the /tmp of JVM %d (its root is "
			 "not this one's): %s", (int)pid, dst == -ELOOP ? "a symbolic link on the way"
			 : strerror(-dst));
		return dst;
	}
	r = copy_file(src, dst);
	close(src);
	close(dst);
	if (!r && snprintf(out, len, "/tmp/%s", name) >= (int)len)
		r = -ENAMETOOLONG;
	if (r) {
		vt_tfs_remove(t, made);
		snprintf(err, errlen, "cannot place vmtrace's JVM agent in the /tmp of JVM %d: %s", (int)pid,
			 strerror(-r));
	}
	return r;
}

int vt_jvm_agent_load(pid_t pid, const char *path, char *err, size_t errlen)
{
	struct vt_tfs_made made = { .dir = -1 };
	struct vt_tfs t = { .root = -1, .cwd = -1 };
	char inside[PATH_MAX];
	int r;

	if (vt_tfs_same_root(pid))
		return vt_jvm_attach_load(pid, path, NULL, err, errlen);
	if ((r = vt_tfs_open(&t, pid))) {
		vt_tfs_close(&t);
		snprintf(err, errlen, "cannot attach to JVM %d: cannot open its root: %s", (int)pid,
			 strerror(-r));
		return r;
	}
	r = agent_place(&t, pid, path, inside, sizeof(inside), &made, err, errlen);
	/* the agent removes its copy as the JVM ends */
	if (!r && (r = vt_jvm_attach_load(pid, inside, VT_JVM_AGENT_REMOVE, err, errlen)))
		vt_tfs_remove(&t, &made);
	if (made.dir >= 0)
		close(made.dir);
	vt_tfs_close(&t);
	return r;
}

int vt_jvm_agent_at_exec(pid_t pid, const char *exe, const char *path, bool no_methods,
			 uint64_t sample_period, struct vt_usdt_list *probes)
{
	struct vt_tfs_made made = { .dir = -1 };
	struct vt_tfs t = { .root = -1, .cwd = -1 };
	struct vt_usdt_list agent = { 0 };
	char inside[PATH_MAX], reach[PATH_MAX + 64], arg[PATH_MAX + 128];
	char options[96], why[256];
	bool placed = !vt_tfs_same_root(pid);
	size_t n = 0;
	int r;

	/* "remove-at-exit,no-methods,sample=N", as they apply */
	options[0] = '\0';
	if (placed)
		n += (size_t)snprintf(options + n, sizeof(options) - n, "%s", VT_JVM_AGENT_REMOVE);
	if (no_methods)
		n += (size_t)snprintf(options + n, sizeof(options) - n, "%sno-methods", n ? "," : "");
	if (sample_period)
		snprintf(options + n, sizeof(options) - n, "%ssample=%llu", n ? "," : "",
			 (unsigned long long)sample_period);
	snprintf(inside, sizeof(inside), "%s", path);
	snprintf(reach, sizeof(reach), "%s", path);
	/* a JDK launcher's argument, checked before anything is placed */
	if ((r = vt_jvm_agent_argument(path, exe, options, arg, sizeof(arg))))
		return r;
	if (placed) {
		if ((r = vt_tfs_open(&t, pid)) ||
		    (r = agent_place(&t, pid, path, inside, sizeof(inside), &made, why, sizeof(why))))
			goto out;
		snprintf(reach, sizeof(reach), "/proc/%d/root%s", (int)pid, inside);
		r = vt_jvm_agent_argument(inside, exe, options, arg, sizeof(arg));
	}
	if (!r)
		r = vt_usdt_read_file(reach, &agent);
	if (!r && !agent.n)
		r = -ENOENT;
	/* the argument as the launcher's first: -agentpath:... or -J-agentpath:... */
	if (!r)
		r = vt_exec_arg_insert(pid, 1, arg + strlen(VT_SPAWN_ARG));
	if (!r) {
		for (size_t i = 0; i < agent.n && !r; i++)
			r = vt_usdt_list_take(probes, &agent.v[i]);
	}
	if (r)
		vt_tfs_remove(&t, &made);
out:
	vt_usdt_list_free(&agent);
	if (made.dir >= 0)
		close(made.dir);
	vt_tfs_close(&t);
	return r;
}

int vt_jvm_agent_tool_options(const char *path, char *buf, size_t len)
{
	const char *old = getenv("JAVA_TOOL_OPTIONS");
	int n;

	/* the JVM splits the options at white space */
	if (path[strcspn(path, " \t\n\v\f\r")])
		return -EINVAL;
	n = snprintf(buf, len, "JAVA_TOOL_OPTIONS=-agentpath:%s%s%s", path, old && *old ? " " : "",
		     old ? old : "");
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int vt_jvm_agent_argument(const char *path, const char *launcher, const char *options, char *buf,
			  size_t len)
{
	/* the JDK's tools that pass -J options to the JVM they start */
	static const char *const j_tools[] = { "javac", "javadoc", "jar", "jarsigner", "jshell", "jdeps",
					       "jlink", "jmod", "jpackage", "jdeprscan", "jfr", "keytool",
					       "serialver", "jdb" };
	const char *base = strrchr(launcher, '/') ? strrchr(launcher, '/') + 1 : launcher;
	const char *prefix = strcmp(base, "java") == 0 ? "-agentpath:" : NULL;
	int n;

	for (size_t i = 0; !prefix && i < sizeof(j_tools) / sizeof(j_tools[0]); i++)
		if (strcmp(base, j_tools[i]) == 0)
			prefix = "-J-agentpath:";
	if (!prefix)
		return -ENOENT;
	if (strchr(path, '='))
		return -EINVAL; /* the JVM splits the agent's path from its options there */
	n = snprintf(buf, len, VT_SPAWN_ARG "%s%s%s%s", prefix, path, *options ? "=" : "", options);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
