/*
 * main.c: the vmtrace command: global options, then one subcommand.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"

#ifndef VMTRACE_VERSION
#define VMTRACE_VERSION "0.1.0"
#endif

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} subcommands[] = {
	{ "diff", vt_cmd_diff, "what changed between two record files, growth first" },
	{ "list", vt_cmd_list, "the USDT probes of a process or a binary" },
	{ "record", vt_cmd_record, "trace a process, write a record file, print the report" },
	{ "report", vt_cmd_report, "print the report of a record file" },
	{ "serve", vt_cmd_serve, "serve a process's counters at /metrics for Prometheus" },
	{ "top", vt_cmd_top, "a live view of a process, refreshed every interval" },
};

static void usage(FILE *out)
{
	fputs("Usage: vmtrace [-v] COMMAND [ARGS...]\n"
	      "       vmtrace help [COMMAND] | --help | --version\n"
	      "\n"
	      "vmtrace traces language runtimes through their USDT probes with eBPF: which\n"
	      "classes each method allocates, method and constant cache resets, GC pauses,\n"
	      "signals. It attaches to a running process without restarting it.\n"
	      "\n"
	      "Commands:\n", out);
	for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
		fprintf(out, "  %-8s %s\n", subcommands[i].name, subcommands[i].summary);
	fputs("\n"
	      "Options:\n"
	      "  -v, --verbose  libbpf's log on stderr\n"
	      "  -h, --help     this text (vmtrace help COMMAND, or COMMAND --help: that\n"
	      "                 command's)\n"
	      "  -V, --version  the version\n"
	      "\n"
	      "Examples:\n"
	      "  vmtrace list -p 4242\n"
	      "  vmtrace record -p 4242 -d 10\n"
	      "  vmtrace record -- ./demovm --ops 100000\n"
	      "  vmtrace report --format json\n"
	      "  vmtrace top -p 4242 -i 2\n"
	      "  vmtrace serve -p 4242 --listen 127.0.0.1:9464\n", out);
}

/* argv[0] a command: run it with the rest. */
static int run(int argc, char **argv)
{
	for (size_t c = 0; c < sizeof(subcommands) / sizeof(subcommands[0]); c++)
		if (!strcmp(argv[0], subcommands[c].name))
			return subcommands[c].run(argc, argv);
	fprintf(stderr, "vmtrace: unknown command '%s' (see vmtrace --help)\n", argv[0]);
	return 2;
}

/* `help [COMMAND]`: this text, or COMMAND --help. */
static int help(int argc, char **argv)
{
	char help_opt[] = "--help";
	char *args[] = { argc > 1 ? argv[1] : NULL, help_opt, NULL };

	if (argc == 1) {
		usage(stdout);
		return 0;
	}
	if (argc > 2) {
		fprintf(stderr, "vmtrace: help takes one COMMAND, got '%s' and '%s'\n", argv[1], argv[2]);
		return 2;
	}
	return run(2, args);
}

int main(int argc, char **argv)
{
	int i = 1;

	vt_set_verbose(false);
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			vt_set_verbose(true);
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "-V") || !strcmp(argv[i], "--version")) {
			printf("vmtrace %s\n", VMTRACE_VERSION);
			return 0;
		} else {
			fprintf(stderr, "vmtrace: unknown option '%s' (see vmtrace --help)\n", argv[i]);
			return 2;
		}
	}
	if (i == argc) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[i], "help"))
		return help(argc - i, argv + i);
	return run(argc - i, argv + i);
}
