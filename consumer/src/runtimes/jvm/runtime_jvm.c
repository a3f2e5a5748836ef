/*
 * runtime_jvm.c: the adapter for HotSpot's own USDT probes (provider
 * "hotspot", in libjvm.so), with no change to the JVM.
 *
 * What HotSpot fires, and when (OpenJDK 17; 21 and 25 alike):
 *  - gc__begin(full) / gc__end: always. The profile's kind 0 ("minor") is a
 *    collection that is not full, kind 1 ("major") a full one.
 *  - object__alloc(tid, name, name_len, size): only with
 *    -XX:+DTraceAllocProbes, which sends every allocation through a call
 *    into the VM. The name is the class's internal name, not
 *    NUL-terminated; the report shows it as Java writes it (jvm_names.c).
 *  - method__entry / method__return(tid, class, class_len, method,
 *    method_len, sig, sig_len): only with -XX:+DTraceMethodProbes.
 *    Counted per (class, method) as calls.
 * There are no semaphores: a flag that is off leaves the probe silent, so
 * `open` checks the flags first and names the missing one.
 *
 * Why the sizes do not come from object__alloc's size argument. The note
 * says `-4@%ebx`, and the site does compute ebx = size * 8 from the third
 * argument of SharedRuntime::dtrace_object_alloc_base(Thread *, oopDesc *,
 * int size). But in JDK 17 the interpreter's fast path for `new`, C1's
 * allocation stubs and C2's macro expansion call that function (or
 * dtrace_object_alloc(oopDesc *, int)) with the object only, so `size` is
 * whatever the caller left in the register: 0 for most interpreted
 * allocations, stale values in compiled code. Only allocations on the slow
 * path (a TLAB refill, a large array) carry the true size. bpftrace and
 * libbpf decode the argument alike and both see that garbage. So a uprobe
 * on the entry of dtrace_object_alloc_base reads the object (its second
 * argument) and computes its size the way HotSpot does, from the class's
 * layout helper (and an array's length), and hands it to object__alloc,
 * which fires next on the same thread. JDK 18 and later pass the size
 * down to the probe (SharedRuntime::dtrace_object_alloc(JavaThread *,
 * oopDesc *, size_t), seen in libjvm.so), so there the argument is taken as
 * it is; elsewhere, when libjvm.so lacks the symbols this needs, the
 * probe's argument is used and counted as a loss.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "runtimes/adapter.h"
#include "process/elf_code.h"
#include "runtimes/jvm/jvm_names.h"
#include "runtimes/jvm/jvm_flags.h"
#include "runtimes/jvm/jvm_agent.h"
#include "runtimes/proc_table.h"
#include "profile/profile.h"
#include "runtimes/runtime.h"
#include "runtimes/skeleton.h"
#include "runtimes/jvm/jvm_maps.h"
#include "jvm.skel.h"

#define PROVIDER "hotspot"

/* libjvm.so's symbols that the size uprobe needs (mangled, in .symtab) */
#define SYM_NARROW_KLASS "_ZN23CompressedKlassPointers13_narrow_klassE"
#define SYM_COMPRESSED "UseCompressedClassPointers"
/* HotSpot 17's object layout on x86-64: the class word follows the 8-byte
 * mark word; Klass::_layout_helper follows the C++ vtable pointer. */
#define KLASS_OFFSET 8
#define LAYOUT_HELPER_OFFSET 8

static const char *const loss_names[] = {
	[VT_HS_L_SIZE_FROM_ARG] = "size from object__alloc's argument (may be wrong)",
	[VT_HS_L_UNREADABLE] = "unreadable string",
	[VT_HS_L_TRUNCATED] = "name truncated",
	[VT_HS_L_MAP_FULL] = "alloc map full (raise --map-entries)",
	[VT_HS_L_METHOD_MAP_FULL] = "method map full (raise --map-entries)",
	[VT_HS_L_GC_UNPAIRED] = "gc__end without gc__begin",
	[VT_HS_L_GC_BUF_FULL] = "gc pause buffer full",
	[VT_HS_L_TOO_DEEP] = "allocation below a Java frame no longer kept (no method)",
	[VT_HS_L_STACK_MAP_FULL] = "thread stack map full (no method)",
	[VT_HS_L_SIZE_UNREADABLE] = "object size unreadable (counted with 0 bytes)",
	[VT_HS_L_NO_RETURN] = "Java frames left without method__return (allocations may name a callee)",
	[VT_HS_L_NAMES_FULL] = "names map full (rows named ?; raise --map-entries)",
	[VT_HS_L_PROC_FULL] = "process table full (events)",
	[VT_HS_L_PROC_HIGH_PTR] = "pointer above 2^47 in --all (events)",
};

struct jvm_state {
	struct vt_adapter a;    /* its pauses: vt_adapter_count_pause */
	struct jvm_bpf *skel;
	char probes_used[256];
	char *tool_options;     /* "JAVA_TOOL_OPTIONS=..." for a spawned java, or NULL */
	bool all;               /* record --all: keys' addresses carry their process's slot */
	struct vt_proc_table procs; /* ... and these are the processes */
};

static int on_gc_event(void *ctx, void *data, size_t size)
{
	struct jvm_state *st = ctx;
	const struct vt_hs_gc_event *e = data;
	struct vt_gc_pause g;

	if (size < sizeof(*e))
		return 0;
	g = (struct vt_gc_pause){ .kind = e->full ? 1 : 0, .duration_ns = e->duration_ns };
	vt_adapter_count_pause(&st->a, &g);
	return 0;
}

/* What alloc_row and method_row need beside the row: the names map, the
 * allocations whose class name was never read (a loss), and under
 * record --all the processes. */
struct alloc_rows {
	struct vt_profile *out;
	int names_fd;
	uint64_t unnamed;
	struct vt_proc_table *procs; /* record --all, else NULL */
};

/* The name behind addr in the names map (jvm.bpf.c), a class's in
 * Java's form, or false when none was kept. */
static bool row_name(const struct alloc_rows *r, uint64_t addr, bool is_class, char *dst,
		     size_t dlen)
{
	struct vt_hs_name n;
	char internal[VT_HS_CLASS];

	if (!addr || bpf_map_lookup_elem(r->names_fd, &addr, &n))
		return false;
	if (!is_class) {
		vt_key_string(dst, dlen, n.s, sizeof(n.s));
		return true;
	}
	vt_key_string(internal, sizeof(internal), n.s, sizeof(n.s));
	vt_java_class_name(internal, dst, dlen);
	return true;
}

static int alloc_row(const void *key, const void *val, void *ctx)
{
	const struct vt_hs_alloc_key *k = key;
	const struct vt_hs_alloc_val *sum = val;
	struct alloc_rows *r = ctx;
	char klass[VT_HS_CLASS + 64], site[VT_HS_CLASS + 64], meth[VT_HS_CLASS + 64];
	char where[sizeof(site) + sizeof(meth) + 1] = "";
	uint32_t proc = 0;

	if (!sum->count)
		return 0;
	if (r->procs) {
		int err = vt_proc_table_proc(r->procs, vt_proc_slot_of(k->klass), r->out, &proc);

		if (err)
			return err;
	}
	if (!row_name(r, k->klass, true, klass, sizeof(klass))) {
		snprintf(klass, sizeof(klass), "?");
		r->unnamed += sum->count;
	}
	if (row_name(r, k->site_method, false, meth, sizeof(meth)) &&
	    row_name(r, k->site_class, true, site, sizeof(site)))
		snprintf(where, sizeof(where), "%s.%s", site, meth);
	return vt_profile_add_alloc_proc(r->out, proc, klass, where, "", 0, sum->count, sum->bytes,
					 sum->count);
}

static int method_row(const void *key, const void *val, void *ctx)
{
	const struct vt_hs_method_key *k = key;
	const struct vt_hs_method_val *sum = val;
	struct alloc_rows *r = ctx;
	char klass[VT_HS_CLASS + 64], meth[VT_HS_CLASS];
	char name[sizeof(klass) + sizeof(meth) + 1];

	if (!sum->calls)
		return 0;
	if (!row_name(r, k->klass, true, klass, sizeof(klass)))
		snprintf(klass, sizeof(klass), "?");
	if (!row_name(r, k->method, false, meth, sizeof(meth)))
		snprintf(meth, sizeof(meth), "?");
	snprintf(name, sizeof(name), "%s.%s", klass, meth);
	return vt_profile_add_call(r->out, name, "", sum->calls);
}

static int jvm_collect(void *state, struct vt_profile *out)
{
	struct jvm_state *st = state;
	uint64_t c[VT_HS_COUNTERS] = { 0 };
	struct alloc_rows rows = { .out = out, .names_fd = bpf_map__fd(st->skel->maps.names),
				   .procs = st->all ? &st->procs : NULL };
	int err;

	err = vt_adapter_drain(&st->a);
	if (!err)
		err = vt_profile_set_meta(out, "hotspot", st->probes_used, out->target, st->a.pid);
	if (!err)
		err = vt_adapter_read_hash(&st->a, st->skel->maps.allocs, alloc_row, &rows);
	if (!err)
		err = vt_adapter_read_hash(&st->a, st->skel->maps.methods, method_row, &rows);
	if (!err)
		err = vt_adapter_read_counters(&st->a, st->skel->maps.counters, VT_HS_COUNTERS, c);
	if (err)
		return err;
	c[VT_HS_L_UNREADABLE] += rows.unnamed;
	out->has_allocations = true;
	out->gc_collections[0] += c[VT_HS_C_GC_PARTIAL];
	out->gc_collections[1] += c[VT_HS_C_GC_FULL];
	err = vt_adapter_pauses_counted(&st->a, st->skel->maps.pause_counts);
	if (!err)
		err = vt_adapter_add_pauses(&st->a, out);
	if (err)
		return err;
	return vt_adapter_add_losses(out, loss_names, c, VT_HS_L_SIZE_FROM_ARG, VT_HS_COUNTERS);
}

static void jvm_destroy(void *skel)
{
	jvm_bpf__destroy(skel);
}

static void jvm_release(void *state)
{
	struct jvm_state *st = state;

	free(st->tool_options);
}

/* Where dtrace_object_alloc_base itself finds the class name for its
 * probe: in its first bytes, `mov off8(%rax),%r13` (the Klass's _name),
 * `movzwl off8(%r13),%ecx` (the Symbol's length) and `lea off8(%r13),%rdx`
 * (its bytes), as GCC builds Debian's JDK 17. Found, the uprobe does the
 * whole allocation in one trap; any other build leaves name_offset 0 and
 * object__alloc names the class. */
static void find_name_layout(const char *path, uint64_t fn_vaddr, struct vt_hs_layout *l)
{
	static const uint8_t klass_name[] = { 0x4c, 0x8b, 0x68 }, sym_len[] = { 0x41, 0x0f, 0xb7, 0x4d },
			     sym_body[] = { 0x49, 0x8d, 0x55 };
	uint8_t code[160];
	uint64_t off;
	int name = -1, len = -1, body = -1;

	if (vt_elf_code_at(path, fn_vaddr, code, sizeof(code), &off))
		return;
	for (size_t i = 0; i + 5 <= sizeof(code); i++) {
		if (name < 0 && !memcmp(code + i, klass_name, 3))
			name = code[i + 3];
		else if (name >= 0 && len < 0 && !memcmp(code + i, sym_len, 4))
			len = code[i + 4];
		else if (len >= 0 && body < 0 && !memcmp(code + i, sym_body, 3))
			body = code[i + 3];
	}
	if (name > 0 && len >= 0 && body > 0) {
		l->name_offset = (uint32_t)name;
		l->symbol_length_offset = (uint32_t)len;
		l->symbol_body_offset = (uint32_t)body;
	}
}

/* The size uprobe's place and the object layout, in the skeleton's rodata;
 * false (sizes from the probe's argument) when libjvm.so lacks a symbol. */
static bool set_layout(struct jvm_bpf *skel, const char *path, uint64_t *func_off)
{
	struct vt_hs_layout l = { .klass_offset = KLASS_OFFSET,
				  .layout_helper_offset = LAYOUT_HELPER_OFFSET };
	uint64_t fn, nk, comp, off;

	if (vt_elf_symbol(path, SYM_ALLOC_BASE, &fn, func_off) ||
	    vt_elf_symbol(path, SYM_NARROW_KLASS, &nk, &off) ||
	    vt_elf_symbol(path, SYM_COMPRESSED, &comp, &off))
		return false;
	l.func_vaddr = fn;
	l.narrow_klass_vaddr = nk;
	l.compressed_vaddr = comp;
	find_name_layout(path, fn, &l);
	memcpy((void *)&skel->rodata->layout, &l, sizeof(l));
	return true;
}

static void note_probe(struct jvm_state *st, const char *what)
{
	size_t used = strlen(st->probes_used);

	snprintf(st->probes_used + used, sizeof(st->probes_used) - used, "%s%s", used ? "," : "", what);
}

static int jvm_open(const struct vt_opts *opts, void **state, char *errbuf, size_t errlen)
{
	struct jvm_state *st;
	/* libjvm.so, as the target maps it (or will) */
	const char *path = vt_usdt_probe_path(opts->probes, PROVIDER, "gc__begin");
	struct jvm_flags flags;
	uint64_t func_off = 0;
	bool sizes, whole;
	int err;

	*state = NULL;
	if (opts->sample_period) {
		snprintf(errbuf, errlen, "--sample: HotSpot's probes carry no sampling weight "
			 "(sampling needs vmtrace's provider)");
		return -ENOTSUP;
	}
	if (!path) {
		snprintf(errbuf, errlen, "pid %d has no hotspot:gc__begin probe (is it a HotSpot JVM?)",
			 (int)opts->pid);
		return -ENOENT;
	}
	if (opts->all) {
		/* each JVM's own flags decide whether its probes fire */
		flags = (struct jvm_flags){ true, true };
	} else if (opts->cmd) {
		flags = vt_jvm_command_flags(opts->cmd);
	} else {
		err = vt_jvm_process_flags(opts->pid, path, &flags, errbuf, errlen);
		if (err)
			return err;
	}
	/* A running JVM cannot switch the flag on (it is not manageable). */
	if (!flags.alloc && !opts->cmd) {
		snprintf(errbuf, errlen, "pid %d: HotSpot's allocation probes are off: restart java "
			 "with -XX:+DTraceAllocProbes (a running JVM cannot turn them on)%s",
			 (int)opts->pid,
			 opts->no_methods || flags.methods ? "" : " and -XX:+DTraceMethodProbes for methods");
		return -ENOENT;
	}

	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	/* A command about to start: the JVM's own JAVA_TOOL_OPTIONS turns them on. */
	if (!flags.alloc) {
		const char *old = getenv("JAVA_TOOL_OPTIONS");

		if (asprintf(&st->tool_options, "JAVA_TOOL_OPTIONS=%s%s-XX:+DTraceAllocProbes",
			     old ? old : "", old && *old ? " " : "") < 0) {
			st->tool_options = NULL;
			free(st);
			return -ENOMEM;
		}
	}
	err = vt_adapter_init(&st->a, PROVIDER, PROVIDER ":", opts->pid, sizeof(struct vt_gc_pause),
			      opts->gc_pauses, errbuf, errlen);
	if (err)
		goto fail;
	st->skel = jvm_bpf__open();
	err = vt_skeleton_opened(&st->a, st->skel, jvm_destroy, jvm_release, errbuf, errlen);
	if (err)
		goto fail;
	sizes = set_layout(st->skel, path, &func_off);
	if (!sizes) {
		uint64_t fn, off;

		st->skel->rodata->size_arg_right = !vt_elf_symbol(path, SYM_ALLOC_SIZED, &fn, &off);
	}
	vt_adapter_size_map(st->skel->maps.allocs, opts->map_entries, VT_ALLOC_MAP_CEILING);
	vt_adapter_size_map(st->skel->maps.methods, opts->map_entries, VT_COUNT_MAP_DEFAULT);
	vt_adapter_size_map(st->skel->maps.names, opts->map_entries, VT_COUNT_MAP_DEFAULT);
	st->all = opts->all;
	VT_PROCS_AUTOLOAD(st->skel, st->all);
	err = VT_SKELETON_LOAD(st, errbuf, errlen);
	if (err)
		goto fail;
	/* the alloc key is the larger one (jvm_maps.h) */
	err = vt_adapter_buffers(&st->a, sizeof(struct vt_hs_alloc_key),
				 sizeof(struct vt_hs_method_val) > sizeof(struct vt_hs_alloc_val)
					 ? sizeof(struct vt_hs_method_val)
					 : sizeof(struct vt_hs_alloc_val), st->skel->maps.gc_events, on_gc_event,
				 st, errbuf, errlen);
	if (err)
		goto fail;

	/* one trap per allocation where the name's place is known, else two */
	whole = sizes && st->skel->rodata->layout.name_offset;
	if (sizes) {
		err = vt_adapter_attach_uprobe(&st->a, whole ? st->skel->progs.hs_alloc_whole
							     : st->skel->progs.hs_alloc_base,
					       path, NULL, func_off, 0, 0, errbuf, errlen);
		if (err)
			goto fail;
		if (whole)
			note_probe(st, "uprobe:dtrace_object_alloc_base");
	}
	const struct {
		const char *probe;
		struct bpf_program *prog;
		bool on;
	} table[] = {
		{ "object__alloc", st->skel->progs.hs_object_alloc, !whole },
		{ "method__entry", st->skel->progs.hs_method_entry, flags.methods && !opts->no_methods },
		{ "method__return", st->skel->progs.hs_method_return, flags.methods && !opts->no_methods },
		{ "gc__begin", st->skel->progs.hs_gc_begin, true },
		{ "gc__end", st->skel->progs.hs_gc_end, true },
	};

	for (size_t t = 0; t < sizeof(table) / sizeof(table[0]); t++) {
		if (!table[t].on || !vt_usdt_has_probe(opts->probes, PROVIDER, path, table[t].probe))
			continue;
		err = vt_adapter_attach(&st->a, table[t].prog, path, table[t].probe, 0, errbuf, errlen);
		if (err)
			goto fail;
		note_probe(st, table[t].probe);
	}
	if (!flags.methods && !opts->no_methods)
		note_probe(st, "method__entry(off: -XX:+DTraceMethodProbes)");
	*state = st;
	return 0;

fail:
	vt_skeleton_close(st);
	return err < 0 ? err : -EINVAL;
}

static int jvm_spawn_env(void *state, const char **env, const char **note, char *errbuf, size_t errlen)
{
	struct jvm_state *st = state;

	(void)errbuf;
	(void)errlen;
	*env = st->tool_options;
	*note = st->tool_options ? "added -XX:+DTraceAllocProbes to JAVA_TOOL_OPTIONS in the spawned "
				   "java so its allocation probes fire"
				 : NULL;
	return 0;
}

/* The java launcher (and every tool in a JDK's bin/) dlopens
 * ../lib/server/libjvm.so beside it. */
/* A JDK launcher vmtrace follows: vmtrace's agent among its arguments (in
 * its root), unless HotSpot's own probes were asked for. */
static void jvm_at_exec(pid_t pid, const char *exe, const struct vt_exec_opts *o,
			struct vt_usdt_list *probes)
{
	char agent[PATH_MAX];

	if ((!o->asked || strcmp(o->asked, "vmtrace") == 0) && vt_usdt_probe_path(probes, PROVIDER, "gc__begin") &&
	    !vt_usdt_probe_path(probes, "vmtrace", "alloc__batch") && !vt_jvm_agent_find(agent, sizeof(agent)))
		vt_jvm_agent_at_exec(pid, exe, agent, o->no_methods, o->sample_period, probes);
}

static int jvm_dlopened(const char *exe, char *path, size_t len)
{
	char real[PATH_MAX], lib[PATH_MAX + 32];
	struct stat sb;

	if (!realpath(exe, real))
		return -ENOENT;
	snprintf(lib, sizeof(lib), "%s/../lib/server/libjvm.so", dirname(real));
	if (stat(lib, &sb) || !S_ISREG(sb.st_mode) || !realpath(lib, real) || strlen(real) >= len)
		return -ENOENT;
	memcpy(path, real, strlen(real) + 1);
	return 0;
}

static const char *const jvm_programs[] = { "java", "/usr/bin/java", NULL };

/* The runtime is named by its probes' provider: --runtime hotspot. */
const struct vt_runtime vt_runtime_jvm = {
	.name = "hotspot",
	.provider = PROVIDER,
	.open = jvm_open,
	.collect = jvm_collect,
	.close = vt_skeleton_close,
	.poll = vt_skeleton_poll,
	.spawn_env = jvm_spawn_env,
	.dlopened = jvm_dlopened,
	.at_exec = jvm_at_exec,
	.load_provider = vt_jvm_load_provider,
	.own_probes = "HotSpot's probes",
	.inside = &vt_jvm_inside,
	.programs = jvm_programs,
	.list_line = vt_jvm_list_line,
	.all_note = "a JVM started without -XX:+DTraceAllocProbes fires no allocation probe, "
		    "and without -XX:+DTraceMethodProbes no method probe (vmtrace cannot set flags "
		    "in processes it did not start): such a JVM gives its collections only",
};
