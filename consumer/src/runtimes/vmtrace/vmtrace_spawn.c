/*
 * vmtrace_spawn.c: the vmtrace adapter and the provider inside a runtime
 * (runtime.h, struct vt_inside): what it refuses, what a running one is
 * told, and what a command vmtrace starts is given to load it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "runtimes/runtime.h"
#include "runtimes/vmtrace/sampling.h"
#include "runtimes/vmtrace/vmtrace_state.h"

/* The provider inside a runtime among the probes (runtime.h): what it
 * cannot count refused, a running one told what to count, what a command
 * vmtrace starts will be told kept. 0 or a negative errno. */
int vt_vmtrace_take_inside(struct vmtrace_state *st, const struct vt_opts *opts, char *errbuf,
			   size_t errlen)
{
	const char *path;
	int err;

	st->inside = vt_inside_among(opts->probes, &path);
	if (!st->inside)
		return 0;
	snprintf(st->inside_path, sizeof(st->inside_path), "%s", path);
	if (opts->spawned && opts->cmd && opts->cmd[0])
		snprintf(st->launcher, sizeof(st->launcher), "%s", opts->cmd[0]);
	st->inside_spawn = (struct vt_inside_spawn){ st->inside_path, st->launcher, opts->no_methods,
						     opts->sample_period };
	if (st->inside->live_refused && opts->live) {
		snprintf(errbuf, errlen, "%s", st->inside->live_refused);
		return -ENOTSUP;
	}
	/* classes alone: the provider reads no frame (its costliest part) */
	if (st->inside->no_methods_symbol && !opts->spawned &&
	    (err = vt_provider_write_u64(opts->pid, opts->probes, st->inside->no_methods_symbol,
					 opts->no_methods ? 1 : 0))) {
		snprintf(errbuf, errlen, "cannot tell %s in pid %d what to count: %s", st->inside->what,
			 (int)opts->pid, strerror(-err));
		return err;
	}
	return 0;
}

/* The sampling period for a command vmtrace starts, which libvmtrace reads
 * from its environment as it loads (and removes). snprintf's result. */
int vt_vmtrace_period_env(char *buf, size_t len, uint64_t period)
{
	return snprintf(buf, len, "VMTRACE_SAMPLE_PERIOD=%" PRIu64, period);
}

/* A command that loads a provider inside its runtime which holds it until
 * the probes are attached (a Ruby, a CPython) starts at once, before its
 * probes load, its sampling period given beside. Not with --live, whose
 * settings open() makes for the command's environment. */
int vt_vmtrace_spawn_early(const struct vt_opts *opts, char *buf, size_t len, const char **env,
			   const char **note, char *errbuf, size_t errlen)
{
	const char *path;
	const struct vt_inside *in = vt_inside_among(opts->probes, &path);
	struct vt_inside_spawn sp = { path, opts->cmd ? opts->cmd[0] : "", opts->no_methods,
				      opts->sample_period };
	size_t n = 0, used;
	int err;

	if (!opts->spawned || opts->live || opts->all || !in || !in->holds)
		return 0;
	err = in->load_env(&sp, buf, len, env, note, errbuf, errlen);
	if (err)
		return err;
	/* the period's entry after the last of theirs in buf */
	for (used = 0; env[n]; n++)
		if (env[n] >= buf && env[n] < buf + len && (size_t)(env[n] - buf) + strlen(env[n]) + 1 > used)
			used = (size_t)(env[n] - buf) + strlen(env[n]) + 1;
	if (opts->sample_period) {
		int w = vt_vmtrace_period_env(buf + used, len - used, opts->sample_period);

		if (w < 0 || (size_t)w >= len - used) {
			snprintf(errbuf, errlen, "the command's environment for vmtrace is too long");
			return -E2BIG;
		}
		env[n] = buf + used;
	}
	return 1;
}

int vt_vmtrace_spawn_env(void *state, const char **env, const char **note, char *errbuf, size_t errlen)
{
	struct vmtrace_state *st = state;
	size_t n = 0;

	if (st->period_env[0])
		env[n++] = st->period_env;
	if (st->live_env[0])
		env[n++] = st->live_env;
	*note = NULL;
	if (st->inside)
		return st->inside->load_env(&st->inside_spawn, st->load_env, sizeof(st->load_env), env + n,
					    note, errbuf, errlen);
	return 0;
}
