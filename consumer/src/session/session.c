/*
 * session.c: one tracing run (session.h).
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtimes/uprobe_multi.h"
#include "session/follow.h"
#include "session/session.h"

/* "libc (37), rtld (10)": the providers in the list, with probe counts. */
static void describe_providers(const struct vt_usdt_list *l, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < l->n; i++) {
		size_t count = 0;
		bool earlier = false;

		for (size_t j = 0; j < i && !earlier; j++)
			earlier = strcmp(l->v[j].provider, l->v[i].provider) == 0;
		if (earlier)
			continue;
		for (size_t j = i; j < l->n; j++)
			count += strcmp(l->v[j].provider, l->v[i].provider) == 0;
		int n = snprintf(buf + used, len - used, "%s%s (%zu)", used ? ", " : "",
				 l->v[i].provider, count);
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
}

static void runtime_names(char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; vt_runtime_at(i); i++) {
		int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", vt_runtime_at(i)->name);
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
}

/* the module of l's first probe of provider, or NULL */
static const char *provider_path(const struct vt_usdt_list *l, const char *provider)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].provider && strcmp(l->v[i].provider, provider) == 0)
			return l->v[i].path;
	return NULL;
}

static char *join_argv(char **argv)
{
	size_t len = 1;
	char *s;

	for (char **a = argv; *a; a++)
		len += strlen(*a) + 1;
	s = calloc(1, len);
	if (!s)
		return NULL;
	for (char **a = argv; *a; a++) {
		if (a != argv)
			strcat(s, " ");
		strcat(s, *a);
	}
	return s;
}

static const char *target_label(const struct vt_session *s, char *buf, size_t len)
{
	if (s->target.spawned && s->target.interp)
		snprintf(buf, len, "%s (a script run by %s)", s->target.exe, s->target.interp);
	else if (s->target.spawned)
		snprintf(buf, len, "%s", s->target.exe);
	else
		snprintf(buf, len, "pid %d", (int)s->target.pid);
	return buf;
}

/* The probes of the libraries a runtime's program will dlopen (runtime.h). */
static int add_dlopened_probes(const char *exe, struct vt_usdt_list *probes, char *err,
			       size_t errlen)
{
	char path[PATH_MAX];

	for (size_t i = 0; vt_runtime_at(i); i++) {
		const struct vt_runtime *rt = vt_runtime_at(i);
		int r;

		if (!rt->dlopened || rt->dlopened(exe, path, sizeof(path)))
			continue;
		r = vt_usdt_read_file(path, probes);
		if (r) {
			snprintf(err, errlen, "cannot read the probes of %s: %s", path, strerror(-r));
			return r;
		}
	}
	return 0;
}

/* The runtime of s->probes: --runtime's, or the one detected. 0, or
 * -EINVAL (an unknown --runtime) or -ENOENT with the reason in err. */
static int pick_runtime(struct vt_session *s, const struct vt_opts *o, const char *what,
			char *err, size_t errlen)
{
	char names[256], exe[64];
	/* the program, for a runtime known by what it exports (claim) */
	const char *program = s->target.spawned ? (s->target.interp ? s->target.interp : s->target.exe) : exe;

	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)s->target.pid);
	vt_runtime_claim(program, &s->probes);
	if (o->runtime) {
		s->rt = vt_runtime_by_name(o->runtime);
		if (!s->rt) {
			runtime_names(names, sizeof(names));
			snprintf(err, errlen, "unknown runtime '%s' (known: %s)", o->runtime, names);
			return -EINVAL;
		}
		if (!vt_usdt_has_provider(&s->probes, s->rt->provider)) {
			snprintf(err, errlen, "%s has no %s probes (provider %s)", what, s->rt->name,
				 s->rt->provider);
			return -ENOENT;
		}
		return 0;
	}
	s->rt = vt_runtime_detect(&s->probes);
	if (!s->rt) {
		char providers[1024];

		runtime_names(names, sizeof(names));
		describe_providers(&s->probes, providers, sizeof(providers));
		if (!s->target.spawned && vt_runtime_unprobed(s->target.pid, err, errlen))
			; /* a runtime of ours without its probes: how to trace it */
		else if (providers[0])
			snprintf(err, errlen,
				 "%s has no vmtrace probes nor those of a known runtime (%s); "
				 "its USDT providers: %s", what, names, providers);
		else
			snprintf(err, errlen, "%s has no vmtrace probes (no USDT probes at all)", what);
		return -ENOENT;
	}
	return 0;
}

/* A command about to start whose runtime takes vmtrace's provider at its
 * start (a Python imports its extension, a java gets its agent): that
 * provider's probes, from its file here (runtime.h, vt_inside). Not built
 * or installed here: the runtime's own probes, unless --runtime vmtrace
 * asked for it. 0, or a negative errno with the reason in err. (A
 * followed exec gets it from its runtime's at_exec.) */
static int use_inside(struct vt_session *s, const struct vt_opts *o, const char *exe, char *err,
		      size_t errlen)
{
	char path[PATH_MAX];
	int r;

	if (o->runtime && strcmp(o->runtime, "vmtrace") != 0)
		return 0;
	for (size_t i = 0; vt_runtime_at(i); i++) {
		const struct vt_inside *in = vt_runtime_at(i)->inside;

		if (!in || !in->spawn_takes || !in->spawn_takes(exe, &s->probes))
			continue;
		if (in->find(path, sizeof(path))) {
			if (!o->runtime)
				return 0;
			snprintf(err, errlen, "--runtime vmtrace: %s is not built or installed here (%s)",
				 in->what, in->source);
			return -ENOENT;
		}
		r = vt_usdt_read_file(path, &s->probes);
		if (r)
			snprintf(err, errlen, "cannot read the probes of %s: %s", path, strerror(-r));
		return r;
	}
	return 0;
}

struct follow_ctx {
	struct vt_session *s;
	const struct vt_opts *o;
};

/* follow.h: take the process at its exec of exe when exe (with the
 * libraries it will load) has probes of the runtime asked for, or of one
 * vmtrace knows. */
static bool take_program(pid_t pid, const char *exe, void *ctx)
{
	struct follow_ctx *f = ctx;
	char err[512];

	vt_usdt_list_free(&f->s->probes);
	if (vt_program_probes(exe, &f->s->probes) ||
	    add_dlopened_probes(exe, &f->s->probes, err, sizeof(err)))
		return false;
	/* a runtime known by its exports; a provider given at the exec (a
	 * JDK launcher's agent, PHP's extension, a CPython's package) */
	vt_runtime_claim(exe, &f->s->probes);
	vt_runtime_at_exec(pid, exe, &(struct vt_exec_opts){ f->o->runtime, f->o->no_methods, f->o->sample_period },
			   &f->s->probes);
	if (pick_runtime(f->s, f->o, exe, err, sizeof(err)))
		return false;
	vt_runtime_give_back_env(pid, f->s->rt->name, &f->s->probes);
	return true;
}

/* A running process whose runtime has a provider to live inside it, not
 * loaded yet (a Ruby, a CPython, a JVM): loaded now, its probes read
 * again. When it cannot be, the runtime's own probes trace it, and the
 * note says why, unless --runtime vmtrace asked for the provider. */
static int load_provider(struct vt_session *s, const struct vt_opts *o, char *err, size_t errlen)
{
	int r = vt_runtime_load_provider(s->target.pid, &s->probes, o->runtime != NULL, s->load_note,
					 sizeof(s->load_note), &s->load_by);

	if (r == 0)
		return 0;
	if (r < 0) {
		if (o->runtime) {
			snprintf(err, errlen, "--runtime vmtrace: %s", s->load_note);
			return r;
		}
		return 0; /* the note stays: said with the runtime's own probes' recording */
	}
	vt_usdt_list_free(&s->probes);
	r = vt_target_probes(&s->target, &s->probes, err, errlen);
	if (!r && !vt_usdt_has_provider(&s->probes, "vmtrace")) {
		snprintf(err, errlen, "pid %d: %s, but its probes are not there", (int)s->target.pid,
			 s->load_note);
		return -ENOENT;
	}
	return r;
}

int vt_session_open(struct vt_session *s, const struct vt_opts *o, char *err, size_t errlen)
{
	char what[4200];
	bool followed = false;
	int r;

	memset(s, 0, sizeof(*s)); /* the target's descriptors: vt_target_spawn or _open_pid */
	if (o->cmd)
		r = vt_target_spawn(&s->target, o->cmd, err, errlen);
	else
		r = vt_target_open_pid(&s->target, o->pid, err, errlen);
	if (r)
		return r;

	r = vt_target_probes(&s->target, &s->probes, err, errlen);
	if (r && !s->target.spawned)
		return r;
	if (!r && s->target.spawned)
		r = add_dlopened_probes(s->target.interp ? s->target.interp : s->target.exe,
					&s->probes, err, errlen);
	/* a command it starts whose runtime takes vmtrace's provider at its
	 * start (a Python, a java), unless another runtime's path is asked for */
	if (!r && s->target.spawned && !vt_usdt_has_provider(&s->probes, "vmtrace"))
		r = use_inside(s, o, s->target.interp ? s->target.interp : s->target.exe, err, errlen);
	/* a running Ruby, CPython or JVM: vmtrace's provider loaded into it */
	if (!s->target.spawned && (!o->runtime || strcmp(o->runtime, "vmtrace") == 0) &&
	    !vt_usdt_has_provider(&s->probes, "vmtrace"))
		r = load_provider(s, o, err, errlen);
	target_label(s, what, sizeof(what));
	if (!r)
		r = pick_runtime(s, o, what, err, errlen);
	if (r == -ENOENT && s->load_note[0] && !vt_usdt_has_provider(&s->probes, "vmtrace"))
		snprintf(err + strlen(err), errlen - strlen(err), "; and vmtrace's provider: %s", s->load_note);
	if (r == -ENOENT || (r && r != -EINVAL && s->target.spawned)) {
		/* a command that is no runtime itself (a shim, a wrapper, env,
		 * make): the runtime is a program it runs (follow.h) */
		struct follow_ctx fc = { s, o };
		const char *env[5];

		if (!s->target.spawned)
			return r;
		if (o->live) {
			snprintf(err, errlen, "%s is no runtime itself; --live needs the runtime's own "
				 "command, not one that starts it", what);
			return -ENOTSUP;
		}
		vt_runtime_follow_env(o->runtime, env, 4);
		r = vt_follow(&s->target, env, take_program, &fc, err, errlen);
		if (r)
			return r;
		followed = true;
		/* a period reaches only a provider given at the exec that takes
		 * it (a JVM agent's sample=N) */
		const struct vt_inside *given = vt_inside_of(provider_path(&s->probes, "vmtrace"));

		if (o->sample_period && !(given && given->sample_at_exec)) {
			snprintf(err, errlen, "%s is no runtime itself; --sample needs the runtime's own "
				 "command, not one that starts it (a JVM excepted)", what);
			return -ENOTSUP;
		}
	} else if (r) {
		return r;
	}

	if (o->stacks && !s->rt->stacks) {
		snprintf(err, errlen, "--stack: %s's stacks are not walked yet; stacks come from hosts "
			 "that embed libvmtrace, from Ruby and from CPython 3.11", s->rt->name);
		return -ENOTSUP;
	}

	if (o->live && strcmp(s->rt->name, "vmtrace") != 0) {
		snprintf(err, errlen, "--live: the %s runtime's probes carry no object addresses",
			 s->rt->name);
		return -ENOTSUP;
	}

	/* unless --sample says otherwise, a running process whose provider
	 * inside says so is sampled (a JVM's threads would be exact only from
	 * their next allocation buffer), and so is a process left traced whose
	 * provider samples inside it */
	s->sample_period = o->sample_period;
	if (!o->sample_set) {
		const struct vt_inside *in = vt_inside_of(provider_path(&s->probes, "vmtrace"));

		if (!s->target.spawned && in && in->attach_period)
			s->sample_period = in->attach_period;
		else if (o->always_on && !o->live && in && in->always_on_samples)
			s->sample_period = VT_ALWAYS_ON_PERIOD;
	}

	/* the command line's options, whole, for this target */
	struct vt_opts ao = *o;

	ao.pid = s->target.pid;
	ao.probes = &s->probes;
	ao.spawned = s->target.spawned;
	ao.sample_period = s->sample_period;
	/* a command its runtime holds at the module that counts starts now:
	 * it boots while the probes load */
	bool held = false;

	if (s->target.spawned && !followed && s->rt->spawn_early) {
		/* in the spawn pipe once vt_target_release_held returns */
		char early_env[8192];
		const char *early[VT_SPAWN_ENV_MAX + 1] = { NULL };

		r = s->rt->spawn_early(&ao, early_env, sizeof(early_env), early, &s->spawn_note, err, errlen);
		if (r < 0)
			return r;
		if (r == 1) {
			r = vt_target_release_held(&s->target, early, err, errlen);
			if (r)
				return r;
			held = true;
		}
	}
	r = s->rt->open(&ao, &s->state, err, errlen);
	if (r && s->load_note[0] && s->load_by && strcmp(s->rt->name, "vmtrace") != 0) {
		char own[512];

		snprintf(own, sizeof(own), "%s", err);
		snprintf(err, errlen, "%s; and through %s: %s", s->load_note, s->load_by->own_probes, own);
	}
	if (r)
		return r;
	/* time zero of the timeline: the probes are live and a spawned target
	 * not yet released (or held before it counts), so nothing it does
	 * comes before it */
	clock_gettime(CLOCK_MONOTONIC, &s->started);
	clock_gettime(CLOCK_REALTIME, &s->started_wall);

	if (held) {
		vt_target_unhold(&s->target);
		s->cmdline = join_argv(o->cmd);
		return 0;
	}

	if (followed) {
		/* the process taken, stopped at its exec: its command line */
		s->cmdline = vt_target_cmdline(s->target.pid);
		s->followed_from = join_argv(o->cmd);
		vt_follow_release(&s->target);
		return 0;
	}

	const char *env[VT_SPAWN_ENV_MAX + 1] = { NULL }; /* NULL-terminated for vt_target_release */

	if (s->target.spawned && s->rt->spawn_env) {
		r = s->rt->spawn_env(s->state, env, &s->spawn_note, err, errlen);
		if (r)
			return r;
	}
	/* a runtime traced by its own probes could count inside itself */
	if (!s->target.spawned && s->rt->inside && s->rt->inside->hint) {
		char path[PATH_MAX];

		if (!s->rt->inside->find(path, sizeof(path)))
			s->spawn_note = s->rt->inside->hint;
	}
	/* what loading the provider did: done, or why the runtime's own
	 * probes trace it instead */
	if (s->load_note[0] && strcmp(s->rt->name, "vmtrace") == 0)
		s->spawn_note = s->load_note;
	else if (s->load_note[0]) {
		snprintf(s->note_buf, sizeof(s->note_buf), "not loaded into it: %s; traced through %s instead",
			 s->load_note, s->load_by && s->load_by->own_probes ? s->load_by->own_probes
									  : "its own probes");
		s->spawn_note = s->note_buf;
	}
	r = vt_target_release(&s->target, env, err, errlen);
	if (r)
		return r;
	s->cmdline = o->cmd ? join_argv(o->cmd) : vt_target_cmdline(s->target.pid);
	return 0;
}

void vt_session_close(struct vt_session *s)
{
	/* a target that is gone needs no wait for its probes to go */
	vt_uprobe_links_close_behind(s->target.exited);
	if (s->rt && s->state)
		s->rt->close(s->state);
	vt_uprobe_links_close_behind(false);
	s->state = NULL;
	s->spawn_note = NULL;
	vt_target_close(&s->target);
	vt_usdt_list_free(&s->probes);
	free(s->cmdline);
	s->cmdline = NULL;
	free(s->followed_from);
	s->followed_from = NULL;
}

const char *vt_session_provider_module(const struct vt_session *s, char *dir, size_t len)
{
	const struct vt_usdt_list *l = &s->probes;

	for (size_t i = 0; i < l->n; i++) {
		const struct vt_inside *in = vt_inside_of(l->v[i].path);
		const char *what = in ? in->what : NULL;

		if (what) {
			snprintf(dir, len, "%s", l->v[i].path);
			dirname(dir);
			return what;
		}
	}
	return NULL;
}
