/*
 * runtime.c: the table of runtime adapters (runtime.h).
 *
 * Order matters: vt_runtime_detect takes the first adapter whose provider
 * has probes in the process, and vmtrace's own provider comes first (a Ruby
 * that embeds libvmtrace is traced through vmtrace's richer probes).
 *
 * Adding a runtime: write runtime_NAME.c defining
 * `const struct vt_runtime vt_runtime_NAME`, and add it to the table below.
 * consumer/CMakeLists.txt defines VT_HAVE_RUNTIME_NAME for every
 * src/runtimes/NAME/runtime_NAME.c present, so an adapter joins the table as soon as its
 * file exists.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "process/exec_env.h"
#include "runtimes/runtime.h"

extern const struct vt_runtime vt_runtime_vmtrace;
#ifdef VT_HAVE_RUNTIME_RUBY
extern const struct vt_runtime vt_runtime_ruby;
#endif
#ifdef VT_HAVE_RUNTIME_PYTHON
extern const struct vt_runtime vt_runtime_python;
#endif
#ifdef VT_HAVE_RUNTIME_JVM
extern const struct vt_runtime vt_runtime_jvm;
#endif
#ifdef VT_HAVE_RUNTIME_PHP
extern const struct vt_runtime vt_runtime_php;
#endif

static const struct vt_runtime *const runtimes[] = {
	&vt_runtime_vmtrace,
#ifdef VT_HAVE_RUNTIME_RUBY
	&vt_runtime_ruby,      /* libruby's own probes (runtime_ruby.c) */
#endif
#ifdef VT_HAVE_RUNTIME_PYTHON
	&vt_runtime_python,    /* CPython's own probes (runtime_python.c) */
#endif
#ifdef VT_HAVE_RUNTIME_JVM
	&vt_runtime_jvm,   /* HotSpot's own probes in libjvm.so (jvm/runtime_jvm.c) */
#endif
#ifdef VT_HAVE_RUNTIME_PHP
	&vt_runtime_php,       /* PHP's own probes in the php binary (runtime_php.c) */
#endif
	/* next runtime here */
};

#define NRUNTIMES (sizeof(runtimes) / sizeof(runtimes[0]))

const struct vt_runtime *vt_runtime_detect(const struct vt_usdt_list *probes)
{
	if (!probes)
		return NULL;
	for (size_t r = 0; r < NRUNTIMES; r++)
		for (size_t i = 0; i < probes->n; i++)
			if (probes->v[i].provider &&
			    strcmp(probes->v[i].provider, runtimes[r]->provider) == 0)
				return runtimes[r];
	return NULL;
}

const struct vt_runtime *vt_runtime_by_name(const char *name)
{
	if (!name)
		return NULL;
	for (size_t r = 0; r < NRUNTIMES; r++)
		if (strcmp(runtimes[r]->name, name) == 0)
			return runtimes[r];
	return NULL;
}

int vt_runtime_unprobed(pid_t pid, char *why, size_t len)
{
	for (size_t r = 0; r < NRUNTIMES; r++)
		if (runtimes[r]->unprobed && runtimes[r]->unprobed(pid, why, len))
			return 1;
	return 0;
}

int vt_runtime_claim(const char *exe, struct vt_usdt_list *probes)
{
	for (size_t r = 0; r < NRUNTIMES; r++)
		if (runtimes[r]->claim && runtimes[r]->claim(exe, probes))
			return 1;
	return 0;
}

void vt_runtime_at_exec(pid_t pid, const char *exe, const struct vt_exec_opts *o,
			struct vt_usdt_list *probes)
{
	for (size_t r = 0; r < NRUNTIMES; r++)
		if (runtimes[r]->at_exec)
			runtimes[r]->at_exec(pid, exe, o, probes);
}

int vt_runtime_load_provider(pid_t pid, const struct vt_usdt_list *probes, bool asked, char *note,
			     size_t len, const struct vt_runtime **which)
{
	for (size_t r = 0; r < NRUNTIMES; r++) {
		int got = runtimes[r]->load_provider
				  ? runtimes[r]->load_provider(pid, probes, asked, note, len)
				  : 0;

		if (got) {
			*which = runtimes[r];
			return got;
		}
	}
	return 0;
}

const struct vt_inside *vt_inside_of(const char *path)
{
	for (size_t r = 0; path && r < NRUNTIMES; r++)
		if (runtimes[r]->inside && runtimes[r]->inside->is(path))
			return runtimes[r]->inside;
	return NULL;
}

const struct vt_inside *vt_inside_among(const struct vt_usdt_list *l, const char **path)
{
	for (size_t i = 0; l && i < l->n; i++) {
		const struct vt_inside *in;

		if (strcmp(l->v[i].provider, "vmtrace") == 0 && (in = vt_inside_of(l->v[i].path))) {
			*path = l->v[i].path;
			return in;
		}
	}
	*path = "";
	return NULL;
}

/* vt_runtime_follow_env's entries, and whose they are, until given back */
#define FOLLOW_MAX 8
static const char *follow_given[FOLLOW_MAX];
static const struct vt_runtime *follow_owner[FOLLOW_MAX];
static size_t follow_n;

void vt_runtime_follow_env(const char *asked, const char **env, size_t max)
{
	size_t n = 0;

	for (size_t r = 0; r < NRUNTIMES && n < max && n < FOLLOW_MAX; r++) {
		size_t room = (max < FOLLOW_MAX ? max : FOLLOW_MAX) - n;
		size_t got = runtimes[r]->follow_env ? runtimes[r]->follow_env(asked, env + n, room) : 0;

		for (size_t i = 0; i < got; i++)
			follow_owner[n + i] = runtimes[r];
		n += got;
	}
	for (size_t i = 0; i < n; i++)
		follow_given[i] = env[i];
	follow_n = n;
	env[n] = NULL;
}

void vt_runtime_give_back_env(pid_t pid, const char *chosen, struct vt_usdt_list *probes)
{
	for (size_t i = 0; i < follow_n; i++) {
		const char *eq = strchr(follow_given[i], '=');
		char name[64];

		if (!eq || (size_t)(eq - follow_given[i]) >= sizeof(name))
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(eq - follow_given[i]), follow_given[i]);
		if (!follow_owner[i]->follow_keeps || !follow_owner[i]->follow_keeps(pid, name, chosen, probes))
			vt_exec_env_put(pid, name, getenv(name));
	}
}

size_t vt_runtime_count(void)
{
	return NRUNTIMES;
}

const struct vt_runtime *vt_runtime_at(size_t i)
{
	return i < NRUNTIMES ? runtimes[i] : NULL;
}
