/*
 * jvm_flags.c: whether a JVM's DTrace probes are on (jvm_flags.h), from a
 * command line about to start or from a running JVM's memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/target_fs.h"
#include "process/usdt_notes.h"
#include "runtimes/jvm/jvm_flags.h"

/* One -XX option, applied to the flags in the order the JVM reads them. */
static void apply_option(const char *opt, struct jvm_flags *f)
{
	bool on;

	if (strncmp(opt, "-XX:", 4) || (opt[4] != '+' && opt[4] != '-'))
		return;
	on = opt[4] == '+';
	opt += 5;
	if (!strcmp(opt, "DTraceAllocProbes"))
		f->alloc = on;
	else if (!strcmp(opt, "DTraceMethodProbes"))
		f->methods = on;
	else if (!strcmp(opt, "ExtendedDTraceProbes"))
		f->alloc = f->methods = on; /* sets all three (monitors too) */
}

/* The white-space separated options in an environment variable. */
static void apply_env_options(const char *name, struct jvm_flags *f)
{
	const char *v = getenv(name);
	char opt[128];

	while (v && *v) {
		size_t n;

		v += strspn(v, " \t\n");
		n = strcspn(v, " \t\n");
		if (n && n < sizeof(opt)) {
			memcpy(opt, v, n);
			opt[n] = '\0';
			apply_option(opt, f);
		}
		v += n;
	}
}

/* The launcher's options that take the next argument as their value. */
static bool takes_value(const char *a)
{
	static const char *const with_value[] = { "-cp", "-classpath", "--class-path", "-p",
		"--module-path", "--upgrade-module-path", "--add-modules", "--limit-modules", NULL };

	for (size_t i = 0; with_value[i]; i++)
		if (!strcmp(a, with_value[i]))
			return true;
	return false;
}

/* A command about to start: the flags as the JVM will see them, from
 * JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS, the launcher's options (up to the
 * main class, -jar or -m) and _JAVA_OPTIONS, later ones winning. */
struct jvm_flags vt_jvm_command_flags(char *const *argv)
{
	struct jvm_flags f = { false, false };

	apply_env_options("JAVA_TOOL_OPTIONS", &f);
	apply_env_options("JDK_JAVA_OPTIONS", &f);
	for (size_t i = 1; argv[i] && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-jar") || !strcmp(argv[i], "-m") || !strcmp(argv[i], "--module"))
			break;
		apply_option(argv[i], &f);
		if (takes_value(argv[i]) && argv[i + 1])
			i++;
	}
	apply_env_options("_JAVA_OPTIONS", &f);
	return f;
}

/* Where the running process mapped the link-time address vaddr of the
 * module at path, which file_offset places in the file: 0 and *bias (add it
 * to a link-time address), or -errno. */
static int load_bias(pid_t pid, const char *path, uint64_t vaddr, uint64_t file_offset,
		     uint64_t *bias)
{
	char maps[64], *line = NULL;
	size_t cap = 0;
	int err = -ENOENT;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	f = fopen(maps, "re");
	if (!f)
		return -errno;
	while (err && getline(&line, &cap, f) > 0) {
		unsigned long start, end, off;
		int pathpos = 0;

		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &start, &end, &off, &pathpos) < 3 ||
		    !pathpos)
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (strcmp(line + pathpos, vt_tfs_maps_path(pid, path)) || file_offset < off ||
		    file_offset >= off + (end - start))
			continue;
		*bias = start + (file_offset - off) - vaddr;
		err = 0;
	}
	free(line);
	fclose(f);
	return err;
}

/* A running JVM: the flags read from its memory. */
int vt_jvm_process_flags(pid_t pid, const char *path, struct jvm_flags *out, char *errbuf,
			 size_t errlen)
{
	uint64_t fn_vaddr, fn_off, alloc_vaddr, meth_vaddr, off, bias = 0;
	char mem[64];
	unsigned char b;
	int err, fd;

	/* a function of the file's (JDK 17's, or 18 and later's) places it in memory */
	if ((vt_elf_symbol(path, SYM_ALLOC_BASE, &fn_vaddr, &fn_off) &&
	     vt_elf_symbol(path, SYM_ALLOC_SIZED, &fn_vaddr, &fn_off)) ||
	    vt_elf_symbol(path, "DTraceAllocProbes", &alloc_vaddr, &off) ||
	    vt_elf_symbol(path, "DTraceMethodProbes", &meth_vaddr, &off)) {
		/* a stripped libjvm.so: cannot tell, so trust the user */
		*out = (struct jvm_flags){ true, true };
		return 0;
	}
	err = load_bias(pid, path, fn_vaddr, fn_off, &bias);
	if (err) {
		snprintf(errbuf, errlen, "pid %d: cannot find %s in its mappings: %s", (int)pid, path,
			 strerror(-err));
		return err;
	}
	snprintf(mem, sizeof(mem), "/proc/%d/mem", (int)pid);
	fd = open(mem, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || pread(fd, &b, 1, (off_t)(bias + alloc_vaddr)) != 1) {
		err = -errno;
		snprintf(errbuf, errlen, "pid %d: cannot read its JVM flags: %s", (int)pid, strerror(-err));
		if (fd >= 0)
			close(fd);
		return err;
	}
	out->alloc = b != 0;
	out->methods = pread(fd, &b, 1, (off_t)(bias + meth_vaddr)) == 1 && b != 0;
	close(fd);
	return 0;
}
