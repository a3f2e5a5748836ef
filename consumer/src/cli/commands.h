/*
 * commands.h: the entry point of each vmtrace subcommand, called by main.c
 * with argv[0] set to the subcommand's name. Each returns the process exit
 * status: 0 success, 1 runtime error, 2 usage error. Each subcommand
 * declares its entry here.
 */
#ifndef VMTRACE_COMMANDS_H
#define VMTRACE_COMMANDS_H

/* vmtrace report [FILE] [--format F] [--by G] [--sort S] [--top N] */
int vt_cmd_report(int argc, char **argv);

/* vmtrace diff BASE NEW [--format text|json|csv|folded] [--sort S] [--top N] */
int vt_cmd_diff(int argc, char **argv);

/* vmtrace list -p PID | PATH [--format text|json] */
int vt_cmd_list(int argc, char **argv);

/* vmtrace record -p PID | -- CMD [ARGS...] [-d SECONDS] [-o FILE] [--force] ... */
int vt_cmd_record(int argc, char **argv);

/* vmtrace serve -p PID | -- CMD [--listen ADDR:PORT] [--top N] [-d SECONDS] ... */
int vt_cmd_serve(int argc, char **argv);

/* vmtrace top -p PID [-i SECONDS] [-n COUNT] [--top N] */
int vt_cmd_top(int argc, char **argv);

#endif /* VMTRACE_COMMANDS_H */
