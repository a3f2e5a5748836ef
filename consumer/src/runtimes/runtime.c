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
 * src/runtime_NAME.c present, so an adapter joins the table as soon as its
 * file exists.
 */
#include <string.h>

#include "runtimes/runtime.h"

extern const struct vt_runtime vt_runtime_vmtrace;
#ifdef VT_HAVE_RUNTIME_RUBY
extern const struct vt_runtime vt_runtime_ruby;
#endif
#ifdef VT_HAVE_RUNTIME_PYTHON
extern const struct vt_runtime vt_runtime_python;
#endif
#ifdef VT_HAVE_RUNTIME_HOTSPOT
extern const struct vt_runtime vt_runtime_hotspot;
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
#ifdef VT_HAVE_RUNTIME_HOTSPOT
	&vt_runtime_hotspot,   /* HotSpot's own probes in libjvm.so (runtime_hotspot.c) */
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

int vt_runtime_load_provider(pid_t pid, char *note, size_t len)
{
	for (size_t r = 0; r < NRUNTIMES; r++) {
		int got = runtimes[r]->load_provider ? runtimes[r]->load_provider(pid, note, len) : 0;

		if (got)
			return got;
	}
	return 0;
}

size_t vt_runtime_count(void)
{
	return NRUNTIMES;
}

const struct vt_runtime *vt_runtime_at(size_t i)
{
	return i < NRUNTIMES ? runtimes[i] : NULL;
}
