/*
 * ruby_load.c: vmtrace's Ruby extension loaded into a running Ruby
 * (ruby_load.h).
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "process/elf_code.h"
#include "process/proc_info.h"
#include "process/target_fs.h"
#include "process/usdt_notes.h"
#include "runtimes/provider_load.h"
#include "runtimes/ruby/ruby_load.h"
#include "runtimes/ruby/ruby_ext.h"

#define LOAD_MS 2000 /* from the queue to the extension loaded (0-3 ms when the runtime runs) */
#define REQUEUE_MS 100 /* a Ruby still booting runs the job too soon: queued again this often */

static const char *const provider_module[] = { "vmtrace_ext", NULL };

static const char *const ruby_modules[] = { "libruby", "ruby", NULL };

/* Ruby's postponed jobs (3.1: from a Ruby thread only, run in that thread;
 * 3.3 and later: from any thread), running Ruby's own loader of
 * extensions, dln_load(path): dlopen, then Init_vmtrace_ext, which sets up
 * all the extension needs. A job runs in Ruby's trap context, where a
 * require may take no lock (ThreadError), and every file a require reads
 * would wait for the lock again in a busy Ruby: the loader reads none. A
 * LoadError it raises ends in the job's runner, not in the program. */
static const struct vt_runtime_queue ruby_queue = {
	.modules = ruby_modules,
	.thread_check = "ruby_native_thread_p",
	.queue = "rb_postponed_job_register_one",
	.run = "dln_load",
	.flags_first = true,
	.queued = 1,
	.queued_already = 2, /* 3.1: the job waits still */
};

/* The directory, as pid names it, of an extension it can load: vmtrace's
 * gem installed in its root, else, in this root, the one built here for
 * the libruby it maps. */
static int ext_dir(pid_t pid, char *dir, size_t len, char *err, size_t errlen)
{
	static const char *const libruby[] = { "libruby-", NULL };
	char ext[PATH_MAX + 64], lib[PATH_MAX];
	int fd, n;

	if (!vt_ruby_ext_in_root(pid, ext, sizeof(ext), &fd)) {
		close(fd);
		snprintf(dir, len, "%s", vt_tfs_maps_path(pid, ext));
		dirname(dir);
		return 0;
	}
	if (vt_tfs_same_root(pid) && !vt_proc_module_named(pid, libruby, lib, sizeof(lib)) &&
	    !vt_ruby_ext_find(ext, sizeof(ext))) {
		unsigned major, minor, built = 0;
		uint64_t addr, off;

		n = snprintf(dir, len, "%s", ext);
		if (sscanf(strrchr(lib, '/') + 1, "libruby-%u.%u", &major, &minor) == 2 &&
		    !vt_elf_symbol(ext, "vmtrace_ruby_built_for", &addr, &off) &&
		    !vt_elf_code_at(ext, addr, (uint8_t *)&built, sizeof(built), &off) &&
		    built == major * 100 + minor && n > 0 && (size_t)n < len) {
			dirname(dir);
			return 0;
		}
	}
	snprintf(err, errlen, "no vmtrace gem in the root of Ruby %d, and no extension built here for its "
		 "Ruby (gem install vmtrace in its image)", (int)pid);
	return -ENOENT;
}

int vt_ruby_load_provider(pid_t pid, const struct vt_usdt_list *probes, bool asked, char *note,
			  size_t len)
{
	char dir[PATH_MAX], ext[PATH_MAX + 32];
	uint64_t addr;
	long stop_us, waited_ms;
	int r;

	(void)probes; /* found by its symbols, loaded whether asked or not */
	(void)asked;
	if (vt_proc_symbol_in(pid, ruby_modules, ruby_queue.queue, &addr))
		return 0; /* no Ruby */
	if ((r = ext_dir(pid, dir, sizeof(dir), note, len)))
		return r;
	snprintf(ext, sizeof(ext), "%s/" VT_RUBY_EXT_FILE, dir);
	if ((r = vt_provider_queue(pid, &ruby_queue, ext, &stop_us, note, len)))
		return r;
	/* the extension's initialization returns at once in a Ruby whose boot
	 * runs Ruby code before its core is whole (provider/ruby/src/ext.c):
	 * the job is queued again until it took */
	for (int waited = 0;; waited += REQUEUE_MS) {
		long requeue_us;

		r = vt_provider_wait_ready(pid, provider_module, REQUEUE_MS, &waited_ms);
		if (!r) {
			waited_ms += waited;
			break;
		}
		if (r != -ETIME || waited + REQUEUE_MS >= LOAD_MS ||
		    vt_provider_queue(pid, &ruby_queue, ext, &requeue_us, note, len)) {
			snprintf(note, len, "Ruby %d took the job but has not loaded %s within %d ms (its threads run "
				 "no Ruby code, or the load failed; RUBYOPT=-rvmtrace at its start loads it)", (int)pid,
				 ext, LOAD_MS);
			return r ? r : -ETIME;
		}
		stop_us += requeue_us;
	}
	snprintf(note, len, "vmtrace's Ruby extension loaded into pid %d (%s; one thread stopped %.1f ms, "
		 "loaded %ld ms later)", (int)pid, dir, stop_us / 1000.0, waited_ms);
	return 1;
}
