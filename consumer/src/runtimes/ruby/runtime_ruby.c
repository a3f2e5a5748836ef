/*
 * runtime_ruby.c: the adapter for Ruby's own USDT probes (provider "ruby",
 * in libruby.so or a static ruby binary), with no change to Ruby.
 *
 * Allocations: one uprobe on each of libruby's ten allocation functions
 * (ruby_code.c), per (class, type, innermost Ruby-level method, file:line).
 * Bytes: the 40-byte slot, plus a plain object's ivar buffer.
 *
 * Sites and methods: read from the allocating thread's frames in the same
 * BPF program (runtimes/ruby/ruby_frame.bpf.h, layout from ruby_layout.c): no other
 * probe, no TracePoint. --no-frame-walk, or a Ruby with no known layout,
 * takes them from Ruby's USDT probes instead: object__create and
 * string/array/hash__create announce the site of the next object, and
 * method__entry/method__return keep a per-thread stack in BPF (cmethod__*
 * left out so C methods never replace the Ruby method that called them).
 * Those two fire only while some TracePoint on :call/:return is enabled in
 * the process (Ruby bug #14582): a command vmtrace starts gets one through
 * RUBYOPT (ruby_spawn_env); a process attached by pid has to enable one
 * itself, and when the probes stay silent the allocations are counted with
 * no method and the loss row below says why. --no-methods leaves methods
 * out.
 *
 * GC: the profile's kind 0 is Ruby's mark phase (gc__mark__begin/end) and
 * kind 1 its sweep phase (gc__sweep__begin/end); gc_collections[0] counts
 * mark phases (one per GC cycle), gc_collections[1] sweep steps (lazy
 * sweeping runs several per cycle). Each completed phase is one pause.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "runtimes/adapter.h"
#include "runtimes/proc_table.h"
#include "profile/profile.h"
#include "runtimes/ruby/ruby_code.h"
#include "runtimes/ruby/ruby_ext.h"
#include "runtimes/ruby/ruby_layout.h"
#include "runtimes/ruby/ruby_load.h"
#include "runtimes/ruby/ruby_stacks.h"
#include "runtimes/ruby/ruby_unprobed.h"
#include "runtimes/runtime.h"
#include "runtimes/skeleton.h"
#include "runtimes/ruby/ruby_maps.h"
#include "ruby.skel.h"

#define PROVIDER "ruby"

static const char *const loss_names[] = {
	[VT_RB_L_UNREADABLE] = "unreadable string",
	[VT_RB_L_TRUNCATED] = "name truncated",
	[VT_RB_L_MAP_FULL] = "alloc map full (raise --map-entries)",
	[VT_RB_L_THREADS_FULL] = "thread map full (methods unknown)",
	[VT_RB_L_STACK_DEEP] = "method deeper than the frame ring",
	[VT_RB_L_GC_UNPAIRED] = "gc phase end without begin",
	[VT_RB_L_GC_BUF_FULL] = "gc pause buffer full",
	[VT_RB_L_PENDING_FULL] = "thread map full (allocation site unknown)",
	[VT_RB_L_NAMES_FULL] = "class name map full (class unnamed)",
	[VT_RB_L_FRAME_BAD] = "frame walk failed (allocation site unknown)",
	[VT_RB_L_STACK_CUT] = "stack cut at 127 Ruby frames",
	[VT_RB_L_STACK_BAD] = "stack ended at an unreadable frame",
	[VT_RB_L_STACKS_FULL] = "stack map full (stack lost)",
	[VT_RB_L_FRAMES_FULL] = "frame name map full (frame unnamed)",
	[VT_RB_L_PROC_FULL] = "process table full (objects)",
	[VT_RB_L_PROC_HIGH_PTR] = "class above 2^47 in --all (objects)",
};

struct ruby_state {
	struct vt_adapter a;    /* its pauses: vt_adapter_count_pause */
	struct ruby_bpf *skel;
	bool methods;
	bool walk;                    /* sites from the frame walk, not the site probes */
	bool stacks;                  /* --stack vm: whole Ruby stacks (ruby_stack.bpf.h) */
	char no_walk[160];            /* why not */
	char probes_used[512];
	char tracepoint_rb[PATH_MAX]; /* the file RUBYOPT loads, "" when none */
	char *rubyopt;                /* "RUBYOPT=...", for a spawned command */
	bool all;                     /* record --all: classes carry their process's slot */
	struct vt_proc_table procs;   /* ... and these are the processes */
};

static int on_gc_event(void *ctx, void *data, size_t size)
{
	struct ruby_state *st = ctx;
	const struct vt_rb_gc_event *e = data;
	struct vt_gc_pause g;

	if (size < sizeof(*e))
		return 0;
	g = (struct vt_gc_pause){
		.kind = (int)e->phase,
		.duration_ns = e->duration_ns,
		.at_ns = (int64_t)(e->end_ns - e->duration_ns), /* its start, on the kernel's clock */
		.tid = e->tid,
	};
	vt_adapter_count_pause(&st->a, &g);
	return 0;
}

/* Ruby's value types (ruby_value_type) by number, for objects that have no
 * class (hidden internal objects) or whose class has no name. */
static const char *type_name(uint32_t t)
{
	static const char *const names[] = {
		[0x00] = "none", [0x01] = "Object", [0x02] = "Class", [0x03] = "Module",
		[0x04] = "Float", [0x05] = "String", [0x06] = "Regexp", [0x07] = "Array",
		[0x08] = "Hash", [0x09] = "Struct", [0x0a] = "Bignum", [0x0b] = "File",
		[0x0c] = "Data", [0x0d] = "MatchData", [0x0e] = "Complex", [0x0f] = "Rational",
		[0x14] = "Symbol", [0x1a] = "imemo", [0x1b] = "node", [0x1c] = "iclass",
	};

	return t < sizeof(names) / sizeof(names[0]) && names[t] ? names[t] : "?";
}

struct alloc_rows {
	struct vt_profile *out;
	struct bpf_map *names;
	bool top_level;      /* methods are known: no method is top-level code */
	struct vt_rb_stack_maps stacks; /* --stack vm; stacks NULL otherwise */
	struct vt_proc_table *procs; /* record --all, else NULL */
};

#define TOP_LEVEL "(top level)"

/* One allocation row, when it counted any. */
static int alloc_row(const void *key, const void *val, void *ctx)
{
	const struct vt_rb_alloc_key *k = key;
	const struct vt_rb_alloc_val *sum = val;
	struct alloc_rows *rows = ctx;
	struct vt_rb_class_name cn = { { 0 } };
	char klass[VT_RB_NAME + 32], mklass[VT_RB_NAME], meth[VT_RB_NAME], file[VT_RB_FILE];
	char method[2 * VT_RB_NAME + 2], site[VT_RB_FILE + 16];
	__u64 kv = k->klass, raw = rows->procs ? vt_proc_ptr_of(kv) : kv;
	uint32_t proc = 0;

	if (!sum->count)
		return 0;
	if (rows->procs) {
		int err = vt_proc_table_proc(rows->procs, vt_proc_slot_of(kv), rows->out, &proc);

		if (err)
			return err;
	}
	if (raw && !bpf_map__lookup_elem(rows->names, &kv, sizeof(kv), &cn, sizeof(cn), 0))
		vt_key_string(klass, sizeof(klass), cn.name, sizeof(cn.name));
	else
		klass[0] = '\0';
	/* no class: an internal object Ruby hides from ObjectSpace; a class
	 * without a path: an anonymous one, named as Ruby's inspect does */
	if (!raw)
		snprintf(klass, sizeof(klass), "(hidden %s)", type_name(k->type));
	else if (!klass[0])
		snprintf(klass, sizeof(klass), "#<Class:0x%016llx> (%s)", (unsigned long long)raw, type_name(k->type));
	vt_key_string(mklass, sizeof(mklass), k->mklass, sizeof(k->mklass));
	vt_key_string(meth, sizeof(meth), k->method, sizeof(k->method));
	vt_key_string(file, sizeof(file), k->file, sizeof(k->file));
	if (meth[0] && mklass[0])
		snprintf(method, sizeof(method), "%s#%s", mklass, meth);
	else
		snprintf(method, sizeof(method), "%s",
			 meth[0] || !rows->top_level || k->line == VT_RB_LINE_WALK_FAILED ? meth : TOP_LEVEL);
	if (file[0])
		snprintf(site, sizeof(site), "%s:%u", file, k->line);
	else
		site[0] = '\0';
	uint32_t sid = 0;
	uint64_t missing = 0; /* counted in BPF, as stack map full */

	if (k->stack && rows->stacks.stacks) {
		int err = vt_rb_stack_of(&rows->stacks, k->stack, rows->out, sum->count, &sid, &missing);

		if (err)
			return err;
	}
	return vt_profile_add_alloc_proc(rows->out, proc, klass, method, site, sid, sum->count,
					 sum->bytes, sum->count);
}

static int ruby_collect(void *state, struct vt_profile *out)
{
	struct ruby_state *st = state;
	uint64_t c[VT_RB_COUNTERS] = { 0 };
	int err;

	err = vt_adapter_drain(&st->a);
	if (err)
		return err;
	err = vt_profile_set_meta(out, "ruby", st->probes_used, out->target, st->a.pid);
	if (err)
		return err;
	out->has_allocations = true;
	err = vt_adapter_read_counters(&st->a, st->skel->maps.counters, VT_RB_COUNTERS, c);
	if (err)
		return err;
	struct alloc_rows rows = { out, st->skel->maps.class_names,
				   st->methods && (st->walk || c[VT_RB_C_METHOD_ENTRIES]), { NULL },
				   st->all ? &st->procs : NULL };

	if (st->stacks)
		rows.stacks = (struct vt_rb_stack_maps){ st->skel->maps.rb_stacks,
							 st->skel->maps.rb_frame_names,
							 st->skel->maps.class_names };
	err = vt_adapter_read_hash(&st->a, st->skel->maps.allocs, alloc_row, &rows);
	if (err)
		return err;

	out->gc_collections[VT_RB_GC_MARK] += c[VT_RB_C_GC_MARK];
	out->gc_collections[VT_RB_GC_SWEEP] += c[VT_RB_C_GC_SWEEP];
	err = vt_adapter_pauses_counted(&st->a, st->skel->maps.pause_counts);
	if (!err)
		err = vt_adapter_add_pauses(&st->a, out);
	if (err)
		return err;

	err = vt_adapter_add_losses(out, loss_names, c, VT_RB_L_UNREADABLE, VT_RB_COUNTERS);
	if (err)
		return err;
	/* Ruby >= 2.5 fires method__entry only under a TracePoint(:call) */
	if (st->methods && !st->walk)
		err = vt_profile_add_lost(out, "allocations with method probes silent "
					  "(the target needs a TracePoint on :call, :return: "
					  "start it with vmtrace record -- ruby, or see docs/runtimes.md)",
					  c[VT_RB_C_METHOD_ENTRIES] ? 0 : c[VT_RB_C_ALLOCS]);
	return err;
}

static void ruby_destroy(void *skel)
{
	ruby_bpf__destroy(skel);
}

static void ruby_release(void *state)
{
	struct ruby_state *st = state;

	if (st->tracepoint_rb[0])
		unlink(st->tracepoint_rb); /* Ruby removes it once loaded; not if it never was */
	free(st->rubyopt);
}

/* The object__create probe of the ruby provider (in libruby.so, or ruby
 * itself when linked statically), as the target maps it. */
static const struct vt_usdt_probe *object_create_probe(const struct vt_usdt_list *pl)
{
	for (size_t i = 0; pl && i < pl->n; i++)
		if (pl->v[i].provider && strcmp(pl->v[i].provider, PROVIDER) == 0 &&
		    pl->v[i].name && strcmp(pl->v[i].name, "object__create") == 0)
			return &pl->v[i];
	return NULL;
}

static int ruby_open(const struct vt_opts *opts, void **state, char *errbuf, size_t errlen)
{
	struct ruby_state *st;
	const struct vt_usdt_probe *oc = object_create_probe(opts->probes);
	const char *path = oc ? oc->path : NULL;
	struct vt_rb_alloc_site sites[VT_RB_ALLOC_FUNCS];
	int err;

	*state = NULL;
	if (opts->sample_period) {
		snprintf(errbuf, errlen, "--sample: Ruby's probes carry no sampling weight "
			 "(sampling needs vmtrace's provider)");
		return -ENOTSUP;
	}
	if (!path) {
		snprintf(errbuf, errlen, "pid %d has no ruby:object__create probe (is libruby built "
			 "with --enable-dtrace?)", (int)opts->pid);
		return -ENOENT;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->methods = !opts->no_methods;
	err = vt_adapter_init(&st->a, PROVIDER, PROVIDER ":", opts->pid, sizeof(struct vt_gc_pause),
			      opts->gc_pauses,
			      errbuf, errlen);
	if (err)
		goto fail;

	st->skel = ruby_bpf__open();
	err = vt_skeleton_opened(&st->a, st->skel, ruby_destroy, ruby_release, errbuf, errlen);
	if (err)
		goto fail;
	st->skel->rodata->track_methods = st->methods;
	st->all = opts->all;
	VT_PROCS_AUTOLOAD(st->skel, st->all);
	/* sites from the frame walk where the layout is known: no site probe */
	struct vt_rb_frame_layout layout;
	uint64_t ec_tls = 0;

	if (opts->no_frame_walk)
		snprintf(st->no_walk, sizeof(st->no_walk), "--no-frame-walk");
	else
		st->walk = !vt_rb_frame_layout(path, &layout, &ec_tls, st->no_walk,
					       sizeof(st->no_walk));
	if (opts->stacks & VT_STACK_NATIVE) {
		snprintf(errbuf, errlen, "--stack %s: Ruby's native stacks are not walked "
			 "(--stack vm walks its Ruby frames)",
			 opts->stacks == VT_STACK_BOTH ? "both" : "native");
		err = -ENOTSUP;
		goto fail;
	}
	if (opts->stacks && !st->walk) {
		snprintf(errbuf, errlen, "--stack vm: Ruby's frames cannot be walked here: %s",
			 st->no_walk);
		err = -ENOTSUP;
		goto fail;
	}
	st->stacks = opts->stacks != 0;
	st->skel->rodata->walk_stacks = st->stacks;
	if (st->walk) {
		memcpy((void *)&st->skel->rodata->rb_layout, &layout, sizeof(layout));
		st->skel->rodata->rb_ec_tls_index = ec_tls;
		st->skel->rodata->walk_frames = true;
	}
	vt_adapter_size_map(st->skel->maps.allocs, opts->map_entries, VT_ALLOC_MAP_CEILING);
	err = VT_SKELETON_LOAD(st, errbuf, errlen);
	if (err)
		goto fail;
	err = vt_adapter_buffers(&st->a, sizeof(struct vt_rb_alloc_key), sizeof(struct vt_rb_alloc_val),
				 st->skel->maps.gc_events, on_gc_event, st, errbuf, errlen);
	if (err)
		goto fail;
	size_t used;

	err = vt_rb_find_alloc_sites(path, false, sites, errbuf, errlen);
	if (err)
		goto fail;
	for (size_t f = 0; f < VT_RB_ALLOC_FUNCS; f++) {
		err = vt_adapter_attach_uprobe(&st->a, st->skel->progs.rb_newobj, path, NULL,
					       sites[f].file_offset, sites[f].cookie, 0, errbuf, errlen);
		if (err)
			goto fail;
	}
	if (st->walk)
		used = (size_t)snprintf(st->probes_used, sizeof(st->probes_used),
					"newobj(uprobes),sites(frame walk)%s%s",
					st->methods ? ",methods(frame walk)" : "",
					st->stacks ? ",stacks(frame walk)" : "");
	else
		used = (size_t)snprintf(st->probes_used, sizeof(st->probes_used),
					"newobj(uprobes),sites(probes: %s)", st->no_walk);

	const struct {
		const char *probe;
		struct bpf_program *prog;
		__u64 cookie;
		bool method;         /* left out by --no-methods, and when the walk gives methods */
		bool site;           /* left out when the frame walk gives sites */
	} table[] = {
		{ "object__create", st->skel->progs.rb_object_create, 0, false, true },
		{ "string__create", st->skel->progs.rb_builtin_create, 0, false, true },
		{ "array__create", st->skel->progs.rb_builtin_create, 0, false, true },
		{ "hash__create", st->skel->progs.rb_builtin_create, 0, false, true },
		{ "method__entry", st->skel->progs.rb_method_entry, 0, true, false },
		{ "method__return", st->skel->progs.rb_method_return, 0, true, false },
		{ "gc__mark__begin", st->skel->progs.rb_gc_begin, VT_RB_GC_MARK, false, false },
		{ "gc__mark__end", st->skel->progs.rb_gc_end, VT_RB_GC_MARK, false, false },
		{ "gc__sweep__begin", st->skel->progs.rb_gc_begin, VT_RB_GC_SWEEP, false, false },
		{ "gc__sweep__end", st->skel->progs.rb_gc_end, VT_RB_GC_SWEEP, false, false },
	};

	for (size_t t = 0; t < sizeof(table) / sizeof(table[0]); t++) {
		if ((table[t].method && (!st->methods || st->walk)) || (table[t].site && st->walk))
			continue;
		if (!vt_usdt_has_probe(opts->probes, PROVIDER, path, table[t].probe))
			continue;
		err = vt_adapter_attach(&st->a, table[t].prog, path, table[t].probe, table[t].cookie,
					errbuf, errlen);
		if (err)
			goto fail;
		used += (size_t)snprintf(st->probes_used + used, sizeof(st->probes_used) - used,
					 ",%s", table[t].probe);
		if (used >= sizeof(st->probes_used))
			used = sizeof(st->probes_used) - 1;
	}
	*state = st;
	return 0;

fail:
	vt_skeleton_close(st);
	return err < 0 ? err : -EINVAL;
}

/* Write the file RUBYOPT loads into the spawned ruby: it enables an empty
 * TracePoint on :call/:return, so method__entry/return fire from the first
 * Ruby-level call, puts RUBYOPT back as vmtrace found it (the command's own
 * children neither pay for the TracePoint nor look for the file), and
 * removes itself. */
static int write_tracepoint_rb(FILE *f, const char *old_rubyopt)
{
	fputs("# vmtrace record: Ruby fires method__entry/method__return only while a\n"
	      "# TracePoint on :call/:return is enabled (Ruby bug #14582)\n"
	      "TracePoint.new(:call, :return) {}.enable\n", f);
	if (old_rubyopt) {
		fputs("ENV[\"RUBYOPT\"] = '", f);
		for (const char *c = old_rubyopt; *c; c++) {
			if (*c == '\\' || *c == '\'')
				fputc('\\', f);
			fputc(*c, f);
		}
		fputs("'\n", f);
	} else {
		fputs("ENV.delete(\"RUBYOPT\")\n", f);
	}
	fputs("File.delete(__FILE__) rescue nil\n", f);
	return ferror(f) ? -EIO : 0;
}

static int ruby_spawn_env(void *state, const char **env, const char **note, char *errbuf,
			  size_t errlen)
{
	struct ruby_state *st = state;
	const char *old = getenv("RUBYOPT"), *dir = getenv("TMPDIR");
	FILE *f;
	int fd, err;

	*env = NULL;
	*note = NULL;
	if (!st->methods || st->walk)
		return 0;            /* the frame walk needs no TracePoint */
	/* RUBYOPT splits at white space */
	if (!dir || !*dir || dir[strcspn(dir, " \t\n\v\f\r")])
		dir = "/tmp";
	snprintf(st->tracepoint_rb, sizeof(st->tracepoint_rb), "%s/vmtrace-tracepoint-XXXXXX.rb", dir);
	fd = mkstemps(st->tracepoint_rb, 3);
	if (fd < 0) {
		err = -errno;
		snprintf(errbuf, errlen, "ruby: cannot create the TracePoint file in %s: %s "
			 "(set TMPDIR, or use --no-methods)", dir, strerror(-err));
		st->tracepoint_rb[0] = '\0';
		return err;
	}
	fchmod(fd, 0600);
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
	} else {
		err = write_tracepoint_rb(f, old);
		if (fclose(f) && !err)
			err = -errno;
	}
	if (!err && asprintf(&st->rubyopt, "RUBYOPT=%s%s-r %s", old ? old : "",
			     old && *old ? " " : "", st->tracepoint_rb) < 0) {
		st->rubyopt = NULL;
		err = -ENOMEM;
	}
	if (err) {
		snprintf(errbuf, errlen, "ruby: cannot write %s: %s", st->tracepoint_rb, strerror(-err));
		return err;
	}
	*env = st->rubyopt;
	*note = "enabled a TracePoint in the spawned process so its method probes fire "
		"(--no-methods: class and site only)";
	return 0;
}

static const char *const ruby_programs[] = { "ruby", "/usr/bin/ruby", NULL };

static int ruby_list_line(char *line, size_t len)
{
	snprintf(line, len, "Ruby's own probes, a trap per object (with vmtrace's extension loaded, "
		 "ruby -rvmtrace, it counts inside Ruby)");
	return 1;
}

const struct vt_runtime vt_runtime_ruby = {
	.name = "ruby",
	.provider = PROVIDER,
	.open = ruby_open,
	.collect = ruby_collect,
	.close = vt_skeleton_close,
	.poll = vt_skeleton_poll,
	.spawn_env = ruby_spawn_env,
	.unprobed = vt_ruby_unprobed,
	.load_provider = vt_ruby_load_provider,
	.own_probes = "Ruby's own probes",
	.inside = &vt_ruby_inside,
	.stacks = true,
	.programs = ruby_programs,
	.list_line = ruby_list_line,
	.follow_env = vt_ruby_follow_env,
	.follow_keeps = vt_ruby_follow_keeps,
	.dlopened = vt_ruby_ext_dlopened, /* a Ruby gets the extension (provider/ruby) */
};
