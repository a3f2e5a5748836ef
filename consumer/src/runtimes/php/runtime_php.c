/*
 * runtime_php.c: the adapter for PHP 8.2's own USDT probes (provider
 * "php", in the php binary: Debian's php8.2-cli), with no change to PHP,
 * and for a PHP built without them (Debian's php8.4-cli), known by what its
 * binary exports (php_layout.h: its version's layout, vt_php_claim).
 *
 * What PHP gives, and when:
 *  - function__entry / function__return(func, file, line, class, scope):
 *    around every user function, but only in a PHP started with
 *    USE_ZEND_DTRACE=1 (it then runs every call through dtrace_execute_ex).
 *    `record --` sets it in the spawned command; a process attached by pid
 *    is checked for it in its environment, and without it the probes line
 *    says so (objects are still counted).
 *  - no allocation probe: objects are counted by uprobes on the engine's
 *    constructors (php.bpf.c), exactly, whatever the environment.
 *  - a PHP without probes: the function an object is made in is read from
 *    the executor's current frame (executor_globals), so a process
 *    attached by pid has it too; calls come from vmtrace's PHP extension
 *    (provider/php), which fires the same function probes through the
 *    observer API, when the process loaded it.
 *  - compile__file, request, error, exception probes: not used (the report
 *    has no rows for them).
 *  - no GC probe.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "runtimes/adapter.h"
#include "runtimes/proc_table.h"
#include "profile/profile.h"
#include "runtimes/runtime.h"
#include "runtimes/skeleton.h"
#include "runtimes/php/php_ext.h"
#include "runtimes/php/php_layout.h"
#include "runtimes/php/php_maps.h"
#include "php.skel.h"

#define PROVIDER "php"
#define DTRACE_ENV "USE_ZEND_DTRACE=1"

static const char *const loss_names[] = {
	[VT_PHP_L_UNREADABLE] = "unreadable string",
	[VT_PHP_L_TRUNCATED] = "name truncated",
	[VT_PHP_L_CALL_MAP_FULL] = "call map full (raise --map-entries)",
	[VT_PHP_L_OBJ_MAP_FULL] = "object map full (raise --map-entries)",
	[VT_PHP_L_STACK_MAP_FULL] = "thread stack map full (no function)",
	[VT_PHP_L_TOO_DEEP] = "object below more than 64 PHP frames (no function)",
	[VT_PHP_L_PROC_FULL] = "process table full (objects)",
	[VT_PHP_L_EG_DEEP] = "object below more internal frames than vmtrace passes (no function)",
};

struct php_state {
	struct vt_adapter a;
	struct php_bpf *skel;
	char probes_used[256];
	bool set_env;            /* a spawned php: USE_ZEND_DTRACE=1 to be set */
	bool ext_arg;            /* a spawned php without probes: vmtrace's extension to be loaded */
	bool all;                /* record --all: objects' keys carry their process's slot */
	struct vt_proc_table procs; /* ... and these are the processes */
};

/* "Class::func", or "func" for a plain function. */
static void php_name(char *dst, size_t len, const char *klass, const char *func)
{
	snprintf(dst, len, "%s%s%s", klass, klass[0] ? "::" : "", func);
}

static int call_row(const void *key, const void *val, void *ctx)
{
	const struct vt_php_call_key *k = key;
	const struct vt_php_call_val *v = val;
	char klass[VT_PHP_NAME], func[VT_PHP_NAME], file[VT_PHP_FILE];
	char name[2 * VT_PHP_NAME + 2];

	if (!v->calls)
		return 0;
	vt_key_string(klass, sizeof(klass), k->klass, sizeof(k->klass));
	vt_key_string(func, sizeof(func), k->func, sizeof(k->func));
	vt_key_string(file, sizeof(file), k->file, sizeof(k->file));
	php_name(name, sizeof(name), klass, func);
	return vt_profile_add_call(ctx, name, file, v->calls);
}

/* What object_row needs beside the row. */
struct object_rows {
	struct vt_profile *out;
	struct vt_proc_table *procs; /* record --all, else NULL */
};

static int object_row(const void *key, const void *val, void *ctx)
{
	const struct vt_php_obj_key *k = key;
	const struct vt_php_obj_val *v = val;
	struct object_rows *r = ctx;
	char klass[VT_PHP_NAME], sclass[VT_PHP_NAME], sfunc[VT_PHP_NAME];
	char where[2 * VT_PHP_NAME + 2] = "";
	uint32_t slot, proc = 0;

	if (!v->count)
		return 0;
	if (r->procs) {
		int err;

		memcpy(&slot, k->klass + VT_PHP_PROC_AT, sizeof(slot));
		err = vt_proc_table_proc(r->procs, slot, r->out, &proc);
		if (err)
			return err;
	}
	vt_key_string(klass, sizeof(klass), k->klass, r->procs ? VT_PHP_PROC_AT : sizeof(k->klass));
	vt_key_string(sclass, sizeof(sclass), k->site_class, sizeof(k->site_class));
	vt_key_string(sfunc, sizeof(sfunc), k->site_func, sizeof(k->site_func));
	if (sfunc[0])
		php_name(where, sizeof(where), sclass, sfunc);
	return vt_profile_add_alloc_proc(r->out, proc, klass, where, "", 0, v->count, v->bytes,
					 v->count);
}

static int php_collect(void *state, struct vt_profile *out)
{
	struct php_state *st = state;
	uint64_t c[VT_PHP_COUNTERS] = { 0 };
	struct object_rows rows = { out, st->all ? &st->procs : NULL };
	int err;

	err = vt_profile_set_meta(out, "php", st->probes_used, out->target, st->a.pid);
	if (!err)
		err = vt_adapter_read_hash(&st->a, st->skel->maps.calls, call_row, out);
	if (!err)
		err = vt_adapter_read_hash(&st->a, st->skel->maps.objects, object_row, &rows);
	if (!err)
		err = vt_adapter_read_counters(&st->a, st->skel->maps.counters, VT_PHP_COUNTERS, c);
	if (err)
		return err;
	out->has_allocations = true;
	return vt_adapter_add_losses(out, loss_names, c, VT_PHP_L_UNREADABLE, VT_PHP_COUNTERS);
}

static void php_destroy(void *skel)
{
	php_bpf__destroy(skel);
}

/* Did the running process start with USE_ZEND_DTRACE=1? */
static bool started_with_dtrace(pid_t pid)
{
	char path[64], buf[65536];
	ssize_t n;
	bool found = false;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	for (ssize_t i = 0; n > 0 && i < n && !found; i += (ssize_t)strlen(buf + i) + 1) {
		buf[n] = '\0';
		found = strcmp(buf + i, DTRACE_ENV) == 0;
	}
	return found;
}

static void note_probe(struct php_state *st, const char *what)
{
	size_t used = strlen(st->probes_used);

	snprintf(st->probes_used + used, sizeof(st->probes_used) - used, "%s%s", used ? "," : "", what);
}

static int php_open(const struct vt_opts *opts, void **state, char *errbuf, size_t errlen)
{
	struct php_state *st;
	const char *path = vt_usdt_probe_path(opts->probes, PROVIDER, "function__entry");
	/* a PHP without probes of its own (Debian's 8.4): the binary vt_php_claim named */
	const char *bare = vt_usdt_probe_path(opts->probes, PROVIDER, VT_PHP_EXPORTS_PROBE);
	struct vt_php_layout layout;
	char ext[128];
	bool calls;
	int err;

	*state = NULL;
	if (opts->sample_period) {
		snprintf(errbuf, errlen, "--sample: PHP's objects carry no sampling weight "
			 "(sampling needs vmtrace's provider)");
		return -ENOTSUP;
	}
	if (!path && !bare) {
		snprintf(errbuf, errlen, "pid %d has no php:function__entry probe (is it PHP built "
			 "with DTrace probes, such as Debian's php8.2?)", (int)opts->pid);
		return -ENOENT;
	}
	if ((err = vt_php_layout_of(bare ? bare : path, &layout, errbuf, errlen)))
		return err;
	/* a PHP with no probes of its own: frames from the executor's
	 * globals, calls from vmtrace's extension if it loaded it */
	layout.eg_frames = bare != NULL;
	if (bare && opts->all) {
		snprintf(errbuf, errlen, "record --all: a PHP without its own probes is traced by pid or "
			 "started by vmtrace");
		return -ENOTSUP;
	}
	/* a php vmtrace starts: the extension installed for it, loaded by an
	 * argument (spawn_env) */
	if (bare && !path && opts->spawned && opts->cmd && !opts->no_methods &&
	    !vt_php_ext_in_root(opts->pid, layout.api, ext, sizeof(ext)))
		path = ext;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->set_env = opts->cmd && !getenv("USE_ZEND_DTRACE") && !layout.eg_frames;
	st->ext_arg = path == ext;
	/* record --all: each php's own environment decides whether they fire;
	 * the extension's fire whenever traced */
	calls = path && (bare || opts->cmd || opts->all || started_with_dtrace(opts->pid));
	err = vt_adapter_init(&st->a, PROVIDER, PROVIDER ":", opts->pid, 0, 0, errbuf, errlen);
	if (err)
		goto fail;
	st->skel = php_bpf__open();
	err = vt_skeleton_opened(&st->a, st->skel, php_destroy, NULL, errbuf, errlen);
	if (err)
		goto fail;
	vt_adapter_size_map(st->skel->maps.calls, opts->map_entries, VT_COUNT_MAP_DEFAULT);
	vt_adapter_size_map(st->skel->maps.objects, opts->map_entries, VT_ALLOC_MAP_CEILING);
	st->all = opts->all;
	memcpy((void *)&st->skel->rodata->layout, &layout, sizeof(layout));
	VT_PROCS_AUTOLOAD(st->skel, st->all);
	err = VT_SKELETON_LOAD(st, errbuf, errlen);
	if (err)
		goto fail;
	err = vt_adapter_buffers(&st->a, sizeof(struct vt_php_call_key),
				 sizeof(struct vt_php_obj_val), NULL, NULL, NULL, errbuf, errlen);
	if (err)
		goto fail;
	err = vt_adapter_attach_uprobe(&st->a, st->skel->progs.php_objects_new, bare ? bare : path,
				       "zend_objects_new", 0, 0, 0, errbuf, errlen);
	if (!err)
		err = vt_adapter_attach_uprobe(&st->a, st->skel->progs.php_object_std_init, bare ? bare : path,
					       "zend_object_std_init", 0, 0, 0, errbuf, errlen);
	if (err)
		goto fail;
	note_probe(st, "zend_objects_new,zend_object_std_init");
	if (layout.eg_frames)
		note_probe(st, "executor_globals");
	if (!path && !opts->no_methods) {
		note_probe(st, "function__entry(none: a PHP built without DTrace; load vmtrace's PHP "
			   "extension for calls)");
	} else if (calls && !opts->no_methods) {
		err = vt_adapter_attach(&st->a, st->skel->progs.php_function_entry, path,
					"function__entry", 0, errbuf, errlen);
		if (!err)
			err = vt_adapter_attach(&st->a, st->skel->progs.php_function_return, path,
						"function__return", 0, errbuf, errlen);
		if (err)
			goto fail;
		note_probe(st, "function__entry,function__return");
	} else if (!opts->no_methods) {
		note_probe(st, "function__entry(off: start php with USE_ZEND_DTRACE=1)");
	}
	*state = st;
	return 0;

fail:
	vt_skeleton_close(st);
	return err < 0 ? err : -EINVAL;
}

static int php_spawn_env(void *state, const char **env, const char **note, char *errbuf,
			 size_t errlen)
{
	struct php_state *st = state;

	(void)errbuf;
	(void)errlen;
	*env = NULL;
	*note = NULL;
	if (st->set_env) {
		*env = DTRACE_ENV;
		*note = "set USE_ZEND_DTRACE=1 in the spawned php so its function probes fire";
	} else if (st->ext_arg) {
		*env = VT_SPAWN_ARG VT_PHP_EXT_ARG;
		*note = "loading vmtrace's PHP extension (" VT_PHP_EXT_ARG " after the command's name) for "
			"its function probes";
	}
	return 0;
}

static const char *const php_programs[] = { "php", "/usr/bin/php", NULL };

/* A php a followed command runs fires its function probes. */
static size_t php_follow_env(const char *asked, const char **env, size_t max)
{
	(void)asked;
	if (getenv("USE_ZEND_DTRACE") || max < 1)
		return 0;
	env[0] = "USE_ZEND_DTRACE=1";
	return 1;
}

static bool php_follow_keeps(pid_t pid, const char *name, const char *chosen, struct vt_usdt_list *probes)
{
	(void)pid;
	(void)name;
	(void)probes;
	return strcmp(chosen, "php") == 0;
}

const struct vt_runtime vt_runtime_php = {
	.name = "php",
	.provider = PROVIDER,
	.open = php_open,
	.collect = php_collect,
	.close = vt_skeleton_close,
	.poll = vt_skeleton_poll,
	.spawn_env = php_spawn_env,
	.claim = vt_php_claim,
	.at_exec = vt_php_at_exec,
	.programs = php_programs,
	.follow_env = php_follow_env,
	.follow_keeps = php_follow_keeps,
	.all_note = "a php started without USE_ZEND_DTRACE=1 fires no function probes (vmtrace "
		    "cannot set it in processes it did not start): its objects are counted per "
		    "class only, with no function and no calls",
};
