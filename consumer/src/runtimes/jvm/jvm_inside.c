/*
 * jvm_inside.c: vmtrace's JVM agent as the session and the vmtrace adapter
 * use it (runtime.h, struct vt_inside): given to a JVM vmtrace starts
 * (-agentpath, or JAVA_TOOL_OPTIONS), loaded into a running one through
 * its attach mechanism.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "runtimes/jvm/jvm_agent.h"

/* the agent's arguments, or failing that JAVA_TOOL_OPTIONS, for a command
 * vmtrace starts */
static int jvm_load_env(const struct vt_inside_spawn *s, char *buf, size_t len, const char **env,
			const char **note, char *err, size_t errlen)
{
	static const char no_methods[] = "VMTRACE_JVM_NO_METHODS=1"; /* classes alone: no frame read */
	size_t n = 0, used;
	bool arg = true;
	/* a JDK launcher takes -agentpath among its arguments; another
	 * program that starts a JVM gets it in JAVA_TOOL_OPTIONS, which the
	 * JVM announces on stderr */
	int r = vt_jvm_agent_argument(s->path, s->launcher, s->no_methods ? "no-methods" : "", buf, len);

	if (r == -ENOENT) {
		arg = false;
		r = vt_jvm_agent_tool_options(s->path, buf, len);
		if (!r && s->no_methods)
			env[n++] = no_methods;
	}
	if (r) {
		snprintf(err, errlen, "cannot load vmtrace's JVM agent from %s into the command: %s; "
			 "--runtime hotspot traces it through HotSpot's own probes", s->path, strerror(-r));
		return r;
	}
	env[n++] = buf;
	used = strlen(buf) + 1;
	snprintf(buf + used, len > used ? len - used : 0, "loading vmtrace's JVM agent (-agentpath %s): %s",
		 arg ? "after the command's name" : "in JAVA_TOOL_OPTIONS",
		 s->sample_period ? "allocations sampled by JVMTI inside the JVM"
				  : "every allocation counted inside the JVM");
	*note = used < len ? buf + used : NULL;
	return 0;
}

/* a java vmtrace starts: HotSpot's probes show the JVM it will be */
static bool jvm_spawn_takes(const char *exe, const struct vt_usdt_list *probes)
{
	(void)exe;
	return vt_usdt_has_provider(probes, "hotspot");
}

const struct vt_inside vt_jvm_inside = {
	.what = "vmtrace's JVM agent",
	.source = "provider/jvm",
	.is = vt_jvm_agent_is,
	.find = vt_jvm_agent_find,
	.spawn_takes = jvm_spawn_takes,
	.load_env = jvm_load_env,
	.live_refused = "--live: vmtrace's JVM agent sees allocations, not frees (JVMTI tells no "
			"object's end); the allocations are there without --live",
	.no_methods_symbol = "vmtrace_jvm_no_methods", /* provider/jvm/src/agent.c */
	/* a running JVM's threads would be exact only from their next
	 * allocation buffer */
	.attach_period = VT_JVM_AGENT_ATTACH_PERIOD,
	.sample_at_exec = true,
	.always_on_samples = true,
	/* every allocation through JVMTI costs an event (docs/runtimes.md) */
	.all_dormant = "record -p PID samples a JVM that holds it",
	.list_line = "vmtrace's JVM agent, loaded (%s): sampled at 512K by pid unless --sample says otherwise",
};

/* A running JVM with HotSpot's probes takes the agent through its attach
 * mechanism; when it will not, HotSpot's probes trace it, unless --runtime
 * vmtrace asked for the agent. */
int vt_jvm_load_provider(pid_t pid, const struct vt_usdt_list *probes, bool asked, char *note, size_t len)
{
	char agent[PATH_MAX];
	int r;

	if (!jvm_spawn_takes(NULL, probes))
		return 0;
	if (vt_jvm_agent_find(agent, sizeof(agent))) {
		snprintf(note, len, "vmtrace's JVM agent is not built or installed here (provider/jvm)");
		return asked ? -ENOENT : 0; /* HotSpot's own probes, said nothing of */
	}
	r = vt_jvm_agent_load(pid, agent, note, len);
	if (r)
		return r;
	snprintf(note, len, "vmtrace's JVM agent loaded into pid %d (%s)", (int)pid, agent);
	return 1;
}

/* list's line for a JVM traced through HotSpot's probes */
int vt_jvm_list_line(char *line, size_t len)
{
	char agent[PATH_MAX];

	if (vt_jvm_agent_find(agent, sizeof(agent)))
		return 0;
	snprintf(line, len, "vmtrace's JVM agent, loaded through the attach mechanism (%s), sampled at "
		 "512K; --runtime hotspot: HotSpot's probes", agent);
	return 1;
}
