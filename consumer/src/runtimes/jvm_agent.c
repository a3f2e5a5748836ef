/*
 * jvm_agent.c: finding and loading vmtrace's JVMTI agent (jvm_agent.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtimes/jvm_agent.h"
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
	return vt_provider_is(path, VT_JVM_AGENT_FILE);
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
