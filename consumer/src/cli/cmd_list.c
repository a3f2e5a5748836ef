/*
 * cmd_list.c: `vmtrace list`, the USDT probes of a running process (every
 * ELF module it maps) or of one ELF file, as a table or as JSON.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <elf.h>

#include "runtimes/runtime.h"
#include "cli/commands.h"
#include "report/report_fmt.h"
#include "process/target_fs.h"
#include "report/report_table.h"
#include "cli/report_out.h"
#include "process/usdt_notes.h"

enum list_format { LIST_TEXT, LIST_JSON };

static void list_usage(FILE *out)
{
	fprintf(out,
		"Usage: vmtrace list -p PID [--format text|json]\n"
		"       vmtrace list PATH [--format text|json]\n"
		"\n"
		"List the USDT probes of a running process (every ELF module it maps)\n"
		"or of an ELF file: provider, probe, site address, semaphore (0 = none),\n"
		"argument specs (SIZE@LOCATION, negative size = signed) and module.\n"
		"\n"
		"  -p, --pid PID        the process to inspect\n"
		"  -f, --format FORMAT  text (default) or json\n"
		"      --no-pager       on a terminal, no pager for a list past the screen\n"
		"                       (a list on a terminal fits its width: ARGS left out,\n"
		"                       module paths shortened)\n"
		"  -h, --help           this help\n"
		"\n"
		"Examples:\n"
		"  vmtrace list -p $(pgrep demovm)\n"
		"  vmtrace list build/lib/libvmtrace.so\n"
		"  vmtrace list /usr/bin/python3.11 --format json | jq '.probes[].name'\n");
}

static int probe_cmp(const void *a, const void *b)
{
	const struct vt_usdt_probe *x = a, *y = b;
	int c;

	if ((c = strcmp(x->path, y->path)) || (c = strcmp(x->provider, y->provider)) ||
	    (c = strcmp(x->name, y->name)))
		return c;
	return x->pc < y->pc ? -1 : x->pc > y->pc;
}

/* Same module, provider and name: sites of one probe. */
static int probe_cmp_name(const struct vt_usdt_probe *x, const struct vt_usdt_probe *y)
{
	return strcmp(x->path, y->path) || strcmp(x->provider, y->provider) || strcmp(x->name, y->name);
}

static size_t count_modules(const struct vt_usdt_list *l)
{
	size_t n = 0;
	for (size_t i = 0; i < l->n; i++)
		if (i == 0 || strcmp(l->v[i].path, l->v[i - 1].path))
			n++;
	return n;
}

static size_t count_probes(const struct vt_usdt_list *l)
{
	size_t n = 0;
	for (size_t i = 0; i < l->n; i++)
		if (i == 0 || probe_cmp_name(&l->v[i], &l->v[i - 1]))
			n++;
	return n;
}

/* Which of a process's paths `record` takes: the adapter of its probes,
 * or the provider inside its runtime that counts there (runtime.h). */
static void print_path(FILE *out, const struct vt_usdt_list *l)
{
	const struct vt_runtime *rt = vt_runtime_detect(l);
	char line[PATH_MAX + 256];

	for (size_t i = 0; rt && i < l->n; i++) {
		const struct vt_inside *in = vt_inside_of(l->v[i].path);

		if (strcmp(l->v[i].provider, "vmtrace") == 0 && in && in->list_line) {
			fputs("record takes: ", out);
			fprintf(out, in->list_line, l->v[i].path);
			fputc('\n', out);
			return;
		}
	}
	if (rt && rt->list_line && rt->list_line(line, sizeof(line)))
		fprintf(out, "record takes: %s\n", line);
	else if (rt)
		fprintf(out, "record takes: the %s probes\n", rt->name);
}

/* The probes as a table: on a terminal fitted to it (ARGS goes first,
 * then the module's path is shortened, keeping its file name). Note
 * strings come from arbitrary files: their control bytes are escaped. */
static int print_text(FILE *out, const struct vt_usdt_list *l, size_t width)
{
	struct vt_table t;
	size_t mods = count_modules(l), probes = count_probes(l);
	int err;

	vt_table_init(&t, 6, "llLLll");
	t.drop = "----d-";
	vt_cell(&t, "PROVIDER"), vt_cell(&t, "PROBE"), vt_cell(&t, "ADDRESS");
	vt_cell(&t, "SEMAPHORE"), vt_cell(&t, "ARGS"), vt_cell(&t, "MODULE");
	for (size_t i = 0; i < l->n; i++) {
		const struct vt_usdt_probe *p = &l->v[i];

		vt_cell_name(&t, p->provider, "-"), vt_cell_name(&t, p->name, "-");
		vt_cell(&t, "0x%" PRIx64, p->pc);
		if (p->semaphore)
			vt_cell(&t, "0x%" PRIx64, p->semaphore);
		else
			vt_cell(&t, "-");
		vt_cell_name(&t, p->args, "-"), vt_cell_name(&t, p->path, "-");
	}
	err = vt_table_done(out, &t, "", width);
	if (err)
		return err;
	print_path(out, l);
	fprintf(out, "%zu probe%s at %zu site%s in %zu module%s\n", probes, probes == 1 ? "" : "s",
		l->n, l->n == 1 ? "" : "s", mods, mods == 1 ? "" : "s");
	return 0;
}

static void print_json(FILE *out, const struct vt_usdt_list *l, long pid, const char *path)
{
	fputs("{", out);
	if (path) {
		fputs("\"path\": ", out);
		vt_json_string(out, path);
	} else {
		fprintf(out, "\"pid\": %ld", pid);
	}
	fputs(", \"probes\": [", out);
	for (size_t i = 0; i < l->n; i++) {
		const struct vt_usdt_probe *p = &l->v[i];
		fputs(i ? ",\n  {" : "\n  {", out);
		fputs("\"provider\": ", out);
		vt_json_string(out, p->provider);
		fputs(", \"name\": ", out);
		vt_json_string(out, p->name);
		fprintf(out, ", \"address\": %" PRIu64 ", \"semaphore\": %" PRIu64
			", \"nargs\": %d, \"args\": ", p->pc, p->semaphore, p->nargs);
		vt_json_string(out, p->args);
		fputs(", \"module\": ", out);
		vt_json_string(out, p->path);
		fputc('}', out);
	}
	fputs(l->n ? "\n]}\n" : "]}\n", out);
}

/* Why a file gave -ENOEXEC, from its first bytes. */
static const char *not_elf_reason(const char *path)
{
	unsigned char id[EI_NIDENT];
	int fd = vt_open_regular(path);
	ssize_t n = 0;

	if (fd == -ENOEXEC)
		return "not a regular file";
	if (fd >= 0) {
		n = read(fd, id, sizeof(id));
		close(fd);
	}
	if (n < SELFMAG || memcmp(id, ELFMAG, SELFMAG) != 0)
		return "not an ELF file";
	if (n < EI_NIDENT || id[EI_CLASS] != ELFCLASS64 || id[EI_DATA] != ELFDATA2LSB)
		return "not a 64-bit little-endian ELF file";
	return "malformed ELF file";
}

int vt_cmd_list(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "no-pager", no_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	bool no_pager = false;
	enum list_format format = LIST_TEXT;
	const char *path = NULL;
	long pid = -1;
	int c, err;

	optind = 0; /* glibc: start over, argv[0] is the subcommand */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+p:f:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': {
			char *end;
			errno = 0;
			pid = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || pid <= 0 || pid > INT32_MAX) {
				fprintf(stderr, "vmtrace: invalid pid '%s'\n", optarg);
				return 2;
			}
			break;
		}
		case 'f':
			if (!strcmp(optarg, "text")) {
				format = LIST_TEXT;
			} else if (!strcmp(optarg, "json")) {
				format = LIST_JSON;
			} else {
				fprintf(stderr, "vmtrace: unknown format '%s' (text or json)\n", optarg);
				return 2;
			}
			break;
		case 'h':
			list_usage(stdout);
			return 0;
		case 'P':
			no_pager = true;
			break;
		default:
			if (optopt && strchr("pf", optopt))
				fprintf(stderr, "vmtrace: list: option -%c needs an argument\n", optopt);
			else
				fprintf(stderr, "vmtrace: list: unknown option '%s'\n", argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc)
		path = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "vmtrace: list: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if ((pid > 0) == (path != NULL)) {
		fprintf(stderr, "vmtrace: list: give either -p PID or a PATH (see vmtrace list --help)\n");
		return 2;
	}

	struct vt_usdt_list probes = { 0 };
	if (path) {
		err = vt_usdt_read_file(path, &probes);
		if (err == -ENOEXEC)
			fprintf(stderr, "vmtrace: %s: %s\n", not_elf_reason(path), path);
		else if (err)
			fprintf(stderr, "vmtrace: cannot read %s: %s\n", path, strerror(-err));
		else if (probes.n == 0)
			fprintf(stderr, "vmtrace: no USDT probes in %s\n", path);
	} else {
		err = vt_usdt_read_pid((pid_t)pid, &probes);
		if (err == -ESRCH)
			fprintf(stderr, "vmtrace: no such process: %ld\n", pid);
		else if (err)
			fprintf(stderr, "vmtrace: cannot read the modules of process %ld: %s\n", pid,
				strerror(-err));
		else if (probes.n == 0)
			fprintf(stderr, "vmtrace: no USDT probes in process %ld (in any module it maps)\n", pid);
	}
	if (err || probes.n == 0) {
		vt_usdt_list_free(&probes);
		return 1;
	}

	qsort(probes.v, probes.n, sizeof(probes.v[0]), probe_cmp);
	if (format == LIST_JSON) {
		print_json(stdout, &probes, pid, path);
	} else {
		struct vt_cli_args a = { 0 };
		struct vt_report_out out;

		vt_report_out_open(&out, stdout, &a, no_pager);
		err = print_text(out.file, &probes, a.report.width);
		if (vt_report_out_close(&out) && !err)
			err = -EIO;
	}
	vt_usdt_list_free(&probes);
	if (err || fflush(stdout) != 0) {
		fprintf(stderr, "vmtrace: cannot write the list: %s\n", strerror(err ? -err : errno));
		return 1;
	}
	return 0;
}
