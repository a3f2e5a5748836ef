/*
 * session_all.c: `record --all` (session_all.h).
 *
 * The files: every executable file some process maps now, the known
 * runtimes' programs on PATH with the libraries they map or dlopen (so a
 * Ruby or a JVM started later is followed), and the libvmtrace installed
 * beside vmtrace. Those holding probes of a known runtime each get an
 * adapter in its --all mode. A file is named once by its inode: two paths
 * to one file would count each event twice.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session/session_all.h"
#include "session/target.h"

#define ALL_SLICE_MS 100

struct path_set {
	char **v;
	dev_t *dev;
	ino_t *ino;
	size_t n, cap;
};

/* Add path unless its file is there already; 0 or -ENOMEM. */
static int add_path(struct path_set *ps, const char *path)
{
	char real[PATH_MAX];
	struct stat sb;

	if (stat(path, &sb) || !S_ISREG(sb.st_mode))
		return 0;
	if (realpath(path, real))
		path = real; /* bin/../lib/x as lib/x */
	for (size_t i = 0; i < ps->n; i++)
		if (ps->dev[i] == sb.st_dev && ps->ino[i] == sb.st_ino)
			return 0;
	if (ps->n == ps->cap) {
		size_t ncap = ps->cap ? 2 * ps->cap : 64;
		char **v = realloc(ps->v, ncap * sizeof(*v));
		dev_t *d = v ? realloc(ps->dev, ncap * sizeof(*d)) : NULL;
		ino_t *in = d ? realloc(ps->ino, ncap * sizeof(*in)) : NULL;

		if (v)
			ps->v = v;
		if (d)
			ps->dev = d;
		if (!in)
			return -ENOMEM;
		ps->ino = in;
		ps->cap = ncap;
	}
	ps->v[ps->n] = strdup(path);
	if (!ps->v[ps->n])
		return -ENOMEM;
	ps->dev[ps->n] = sb.st_dev;
	ps->ino[ps->n++] = sb.st_ino;
	return 0;
}

/* Whether one of the first n files is rt's: its runtime is said already. */
static bool runtime_before(const struct vt_session_all *s, size_t n, const struct vt_runtime *rt)
{
	for (size_t j = 0; j < n; j++)
		if (s->v[j].rt == rt)
			return true;
	return false;
}

static void free_paths(struct path_set *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		free(ps->v[i]);
	free(ps->v);
	free(ps->dev);
	free(ps->ino);
}

/* The executable files process pid maps. */
static int add_mapped(struct path_set *ps, const char *pid)
{
	char path[300], *line = NULL;
	size_t cap = 0;
	int err = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return 0; /* gone, or a kernel thread's */
	while (!err && getline(&line, &cap, f) > 0) {
		char perms[8], *file = strchr(line, '/');

		if (!file || sscanf(line, "%*s %7s", perms) != 1 || perms[2] != 'x')
			continue;
		file[strcspn(file, "\n")] = '\0';
		if (!strstr(file, " (deleted)"))
			err = add_path(ps, file);
	}
	free(line);
	fclose(f);
	return err;
}

/* Every file of the probe list (a program and its libraries). */
static int add_probe_files(struct path_set *ps, const struct vt_usdt_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		int err = add_path(ps, l->v[i].path);

		if (err)
			return err;
	}
	return 0;
}

/* The libraries with a runtime's probes that program exe dlopens (the
 * java launcher's libjvm.so), which no loader list names. */
static int add_dlopened(struct path_set *ps, const char *exe)
{
	char lib[PATH_MAX];
	int err = 0;

	for (size_t i = 0; !err && vt_runtime_at(i); i++) {
		const struct vt_runtime *rt = vt_runtime_at(i);

		if (rt->dlopened && !rt->dlopened(exe, lib, sizeof(lib)))
			err = add_path(ps, lib);
	}
	return err;
}

static int find_files(struct path_set *ps)
{
	char self[PATH_MAX], lib[PATH_MAX + 32];
	struct dirent *de;
	ssize_t len;
	int err = 0;
	DIR *d = opendir("/proc");

	if (!d)
		return -errno;
	while (!err && (de = readdir(d)))
		if (de->d_name[0] >= '1' && de->d_name[0] <= '9')
			err = add_mapped(ps, de->d_name);
	closedir(d);
	/* the files of the programs whose runtime a later process may run */
	for (size_t r = 0; !err && vt_runtime_at(r); r++) {
		const char *const *prog = vt_runtime_at(r)->programs;

		for (size_t i = 0; !err && prog && prog[i]; i++) {
			char *exe = vt_find_program(prog[i]);
			struct vt_usdt_list l = { 0 };

			if (exe && !vt_program_probes(exe, &l))
				err = add_probe_files(ps, &l);
			if (exe && !err)
				err = add_dlopened(ps, exe);
			vt_usdt_list_free(&l);
			free(exe);
		}
	}
	/* the libvmtrace installed beside this vmtrace (bin/../lib) */
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (!err && len > 0) {
		self[len] = '\0';
		snprintf(lib, sizeof(lib), "%s/../lib/libvmtrace.so", dirname(self));
		err = add_path(ps, lib);
	}
	return err;
}

/* The opts one file's adapter opens with: the command line's, whole, for
 * every process mapping the file (--all takes no --live, --stack nor
 * --sample: vt_cli_all_conflict), with no timeline across them. */
static struct vt_opts file_opts(const struct vt_opts *o, const struct vt_usdt_list *l)
{
	struct vt_opts ao = *o;

	ao.pid = -1;
	ao.all = true;
	ao.probes = l;
	ao.cmd = NULL;
	ao.series_ns = 0;
	return ao;
}

static int open_files(struct vt_session_all *s, const struct vt_opts *o,
		      const struct path_set *ps, char *err, size_t errlen)
{
	for (size_t i = 0; i < ps->n; i++) {
		struct vt_usdt_list l = { 0 };
		const struct vt_runtime *rt;
		struct vt_opts ao;
		char why[4096];
		int r;

		/* a provider inside a runtime that --all would make too dear
		 * stays dormant (a JVM's agent: every allocation through JVMTI
		 * costs an event, docs/runtimes.md) */
		const struct vt_inside *in = vt_inside_of(ps->v[i]);

		if (in && in->all_dormant) {
			fprintf(stderr, "vmtrace: --all: %s in %s left dormant (%s)\n", in->what, ps->v[i],
				in->all_dormant);
			continue;
		}
		if (vt_usdt_read_file(ps->v[i], &l) || !(rt = vt_runtime_detect(&l))) {
			vt_usdt_list_free(&l);
			continue;
		}
		if (o->runtime && strcmp(o->runtime, rt->name)) {
			vt_usdt_list_free(&l);
			continue;
		}
		struct vt_all_file *f = &s->v[s->n];
		bool noted = runtime_before(s, s->n, rt);

		f->path = strdup(ps->v[i]);
		f->rt = rt;
		f->probes = l;
		s->n++;
		if (!f->path)
			return -ENOMEM;
		ao = file_opts(o, &f->probes);
		r = rt->open(&ao, &f->state, why, sizeof(why));
		if (r) {
			snprintf(err, errlen, "--all: %s (%s): %s", f->path, rt->name, why);
			return r;
		}
		fprintf(stderr, "vmtrace: --all: %s probes in %s\n", rt->name, f->path);
		if (rt->all_note && !noted)
			fprintf(stderr, "vmtrace: --all: %s: %s\n", rt->name, rt->all_note);
	}
	return 0;
}

int vt_session_all_open(struct vt_session_all *s, const struct vt_opts *o, char *err,
			size_t errlen)
{
	struct path_set ps = { 0 };
	struct stat sb;
	int r;

	memset(s, 0, sizeof(*s));
	if (o->runtime && !vt_runtime_by_name(o->runtime)) {
		snprintf(err, errlen, "--all --runtime %s: unknown runtime", o->runtime);
		return -EINVAL;
	}
	if (stat("/proc/self/ns/pid", &sb) == 0 && sb.st_ino != 0xEFFFFFFCu /* PROC_PID_INIT_INO */) {
		snprintf(err, errlen, "--all: vmtrace runs in a child pid namespace, where the "
			 "kernel's process ids are not its own: run it in the host's");
		return -ENOTSUP;
	}
	r = find_files(&ps);
	if (r) {
		snprintf(err, errlen, "--all: cannot list the processes' files: %s", strerror(-r));
		free_paths(&ps);
		return r;
	}
	s->v = calloc(ps.n ? ps.n : 1, sizeof(*s->v));
	if (!s->v) {
		free_paths(&ps);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = open_files(s, o, &ps, err, errlen);
	free_paths(&ps);
	if (r == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	if (!r && !s->n) {
		char names[128] = "";

		for (size_t i = 0, used = 0; vt_runtime_at(i); i++)
			if (vt_runtime_at(i)->programs && used < sizeof(names))
				used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s",
							 used ? ", " : "", vt_runtime_at(i)->name);
		snprintf(err, errlen, "--all: no process maps vmtrace's provider or a file of a known "
			 "runtime (%s)%s%s", names, o->runtime ? " of --runtime " : "", o->runtime ? o->runtime : "");
		r = -ENOENT;
	}
	if (r)
		return r;
	clock_gettime(CLOCK_MONOTONIC, &s->started);
	clock_gettime(CLOCK_REALTIME, &s->started_wall);
	return 0;
}

enum vt_wait_result vt_session_all_wait(struct vt_session_all *s, long long timeout_ms)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (vt_session_stop_requested())
			return VT_WAIT_SIGNAL;
		for (size_t i = 0; i < s->n; i++) {
			int r = s->v[i].rt->poll ? s->v[i].rt->poll(s->v[i].state,
								  ALL_SLICE_MS / (int)s->n) : 0;

			if (r < 0 && r != -EINTR)
				return VT_WAIT_ERROR;
		}
		if (vt_session_stop_requested())
			return VT_WAIT_SIGNAL;
		if (timeout_ms >= 0 && vt_session_ms_since(&t0) >= timeout_ms)
			return VT_WAIT_TIMEOUT;
	}
}

void vt_session_all_finish(struct vt_session_all *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].rt->finish)
			s->v[i].rt->finish(s->v[i].state, false);
}

/* "a,b": the runtimes of the files, each once. */
static void runtime_names(const struct vt_session_all *s, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < s->n; i++) {
		if (runtime_before(s, i, s->v[i].rt))
			continue;
		int w = snprintf(buf + used, len - used, "%s%s", used ? "," : "", s->v[i].rt->name);
		if (w < 0 || (size_t)w >= len - used)
			return;
		used += (size_t)w;
	}
}

int vt_session_all_collect(struct vt_session_all *s, struct vt_profile *p)
{
	char runtimes[256], probes[1024] = "";
	int err = 0;

	vt_profile_init(p);
	runtime_names(s, runtimes, sizeof(runtimes));
	for (size_t i = 0; !err && i < s->n; i++) {
		struct vt_profile one;

		vt_profile_init(&one);
		err = s->v[i].rt->collect(s->v[i].state, &one);
		if (!err && i == 0) {
			snprintf(probes, sizeof(probes), "%s", one.probes ? one.probes : "");
			p->gc_pauses_limit = one.gc_pauses_limit;
		}
		/* each process's rows say which adapter counted them */
		for (size_t j = 0; !err && j < one.procs.n; j++)
			err = vt_profile_process_runtime(&one, (uint32_t)(j + 1), s->v[i].rt->name);
		if (!err)
			err = vt_profile_merge(p, &one, VT_PROFILE_OWN_PROCS);
		vt_profile_free(&one);
	}
	if (!err)
		err = vt_profile_set_meta(p, runtimes, probes, "--all", 0);
	p->duration_s = vt_session_ms_since(&s->started) / 1000.0;
	p->start_unix_ns = (uint64_t)s->started_wall.tv_sec * 1000000000ull +
			   (uint64_t)s->started_wall.tv_nsec;
	return err;
}

void vt_session_all_close(struct vt_session_all *s)
{
	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i].state)
			s->v[i].rt->close(s->v[i].state);
		vt_usdt_list_free(&s->v[i].probes);
		free(s->v[i].path);
	}
	free(s->v);
	memset(s, 0, sizeof(*s));
}
