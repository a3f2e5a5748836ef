/*
 * cmd_record.c: `vmtrace record`, trace a process until -d, Ctrl-C/SIGTERM
 * or its exit, then write the record file and print the report.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/report_out.h"
#include "export/continuous.h"
#include "profile/profile.h"
#include "report/report_registry.h"
#include "session/session.h"
#include "session/session_all.h"
#include "session/session_group.h"
#include "process/cgroup.h"
#include "process/proc_tree.h"

#define DEFAULT_RECORD "vmtrace.data"

static const char usage_line[] =
	"Usage: vmtrace record -p PID[,PID...] [-d SECONDS] [-o FILE] [--force] [options]\n"
	"       vmtrace record [-d SECONDS] [-o FILE] [--force] [options] -- CMD [ARGS...]\n"
	"       vmtrace record --cgroup PATH [-d SECONDS] [-o FILE] [--force] [options]\n"
	"       vmtrace record --all [-d SECONDS] [-o FILE] [--force] [options]\n"
	"       vmtrace record -p PID --every 10s [--out-dir DIR] [--push URL] [options]\n";

static const char help_text[] =
	"\n"
	"Trace a running process (-p) or a command vmtrace starts (probes live before its\n"
	"first instruction) through its USDT probes: vmtrace's provider, or a known\n"
	"runtime's own probes. Stops after -d SECONDS, at Ctrl-C or SIGTERM, or when the\n"
	"target exits; then writes the record and prints the report.\n"
	"\n"
	"  -p, --pid PID[,PID...] trace this process, or several at once (rows by pid,\n"
	"                         comm; each its own runtime)\n"
	"      --cgroup PATH      trace every process in this cgroup (/a/b, as /proc/PID/cgroup\n"
	"                         says, or a directory under /sys/fs/cgroup) that has probes\n"
	"                         of a known runtime\n"
	"      --children         with -p: also the processes below PID, those running\n"
	"                         and those it forks while recording, rows by pid\n"
	"      --all              trace every process that maps vmtrace's provider,\n"
	"                         libruby, CPython, HotSpot's libjvm or PHP, now or\n"
	"                         later (started, exec'd, forked), rows by pid\n"
	"                         (docs/runtimes.md)\n"
	"  -d, --duration SECS    stop after SECS seconds (fractions allowed)\n"
	"  -o, --output FILE      the record file (default " DEFAULT_RECORD ")\n"
	"      --force            overwrite FILE if it exists\n"
	"      --format F         report format: text (default), json, csv, folded, pprof,\n"
	"                         perfetto, flamegraph (one interactive HTML file),\n"
	"                         timeline, prometheus\n"
	"      --by G             class,method (default), class, method, site, stack;\n"
	"                         each may follow cgroup, and pid, (pid,class,method;\n"
	"                         cgroup,class: the cgroup path and its container id)\n"
	"      --sort S           count (default) or bytes\n"
	"      --top N            show the first N rows of each section (0: all;\n"
	"                         default 20 on a terminal, all into a pipe or file)\n"
	"      --report-file FILE write the report to FILE (-: stdout); without it the\n"
	"                         report goes to stdout, or to stderr beside a command\n"
	"                         vmtrace starts, whose stdout stays its own\n"
	"      --no-pager         on a terminal, no pager for a report past the screen\n"
	"      --sample BYTES     sample allocations, one per BYTES on average (K, M, G\n"
	"                         suffixes, at most 1024G); counts and bytes become\n"
	"                         estimates. 0: exact. Default with --every: 512K\n"
	"                         where a provider inside the runtime samples\n"
	"      --map-entries N    keys each counting map holds at most (default: 262144\n"
	"                         allocation sites, 16384 of the rest); a ceiling:\n"
	"                         maps cost what they hold\n"
	"      --live             the live heap: what is still allocated at the end, by\n"
	"                         class, method and site (leaks), the peak, temporaries\n"
	"                         and ages (docs/live.md)\n"
	"      --live-max N       objects tracked at once (default 1048576); more are\n"
	"                         counted in Lost\n"
	"      --temp SECS        freed within SECS of its allocation is temporary\n"
	"                         (default 0.01)\n"
	"      --timeline-step T  the timeline's step (report --format timeline): what\n"
	"                         each T allocated and freed, per class (default 1s,\n"
	"                         at least 0.2s)\n"
	"      --gc-pauses N      GC pauses listed at most, the longest (default 4096);\n"
	"                         the GC summary counts every pause whatever N is\n"
	"      --runtime NAME     use this runtime's probes instead of detecting them\n"
	"      --no-methods       runtimes with method probes: class and site only (cheaper)\n"
	"      --no-frame-walk    Ruby: sites and methods from Ruby's USDT probes, not\n"
	"                         its frames (a site trap per object, a TracePoint)\n"
	"      --stack MODE       count allocations per call stack: vm (the host's VM\n"
	"                         frames, or stock Ruby's and CPython 3.11's;\n"
	"                         docs/stacks.md), native, both,\n"
	"                         none (default)\n"
	"      --events LIST      trace only these, comma-separated: alloc, free, gc,\n"
	"                         cache, signal (default: all; alloc alone is cheapest)\n"
	"      --every T          continuous profiling: one profile per interval T (10s,\n"
	"                         1.5s, 2m), each exactly what happened in it; needs\n"
	"                         --out-dir or --push; the stdout report is left out\n"
	"      --out-dir DIR      write each interval there as vmtrace-PID-N.EXT in\n"
	"                         --format (default pprof with --every)\n"
	"      --push URL         send each interval as pprof to a Pyroscope-compatible\n"
	"                         server (URL/ingest), retried, from a bounded queue\n"
	"      --push-name NAME   the application name pushed (default vmtrace)\n"
	"      --push-queue N     intervals waiting to be sent at most (default 16)\n"
	"      --push-tries N     sends of one interval at most (default 4)\n"
	"  -v, --verbose          libbpf's log on stderr\n"
	"  -h, --help             this text\n"
	"\n"
	"Examples:\n"
	"  vmtrace record -p 4242 -d 10                 # ten seconds of pid 4242\n"
	"  vmtrace record -o run.data -- ./demovm --ops 100000\n"
	"  vmtrace record -p 4242 --sample 512K --format json > allocs.json\n"
	"  vmtrace record -p 4242 --events alloc        # allocations only\n"
	"  vmtrace record -p 4242,4243 -d 10            # two processes, rows by pid\n"
	"  vmtrace record --all -d 30                   # every process, also those started later\n"
	"  vmtrace record --stack vm -o run.data -- ./demovm; vmtrace report --format flamegraph run.data > alloc.html\n";

static const enum vt_opt record_opts[] = {
	VT_OPT_PID, VT_OPT_DURATION, VT_OPT_OUTPUT, VT_OPT_FORCE, VT_OPT_FORMAT, VT_OPT_BY,
	VT_OPT_SORT, VT_OPT_TOP, VT_OPT_SAMPLE, VT_OPT_MAP_ENTRIES, VT_OPT_GC_PAUSES, VT_OPT_RUNTIME,
	VT_OPT_NO_METHODS, VT_OPT_NO_FRAME_WALK, VT_OPT_STACK, VT_OPT_EVENTS, VT_OPT_EVERY,
	VT_OPT_OUT_DIR, VT_OPT_PUSH, VT_OPT_PUSH_NAME, VT_OPT_PUSH_QUEUE, VT_OPT_PUSH_TRIES,
	VT_OPT_LIVE, VT_OPT_LIVE_MAX, VT_OPT_TEMP, VT_OPT_TIMELINE_STEP, VT_OPT_CGROUP, VT_OPT_ALL,
	VT_OPT_CHILDREN, VT_OPT_REPORT_FILE, VT_OPT_NO_PAGER, VT_OPT_VERBOSE, VT_OPT_HELP, 0,
};

static const struct vt_cli_cmd record_cmd = {
	"record", usage_line, help_text, record_opts,
	true, /* stop at the command's name: its own options are its own */
};

struct record_write {
	const struct vt_profile *p;
	const struct vt_cli_args *a;
	int r;
};

static void *write_record(void *arg)
{
	struct record_write *w = arg;

	w->r = vt_profile_write(w->p, w->a->output, w->a->force);
	return NULL;
}

/* Where the report goes: --report-file, else beside a command vmtrace
 * started on stderr (its stdout is the command's own), else stdout. NULL
 * after saying why. */
static FILE *report_dest(const struct vt_cli_args *a, bool spawned)
{
	FILE *f;

	if (!a->report_file)
		return spawned ? stderr : stdout;
	if (!strcmp(a->report_file, "-"))
		return stdout;
	f = fopen(a->report_file, "we");
	if (!f)
		fprintf(stderr, "vmtrace: --report-file %s: %s\n", a->report_file, strerror(errno));
	return f;
}

/* The record file and the report of p: 0, or 1 after saying why not.
 * Both only read p, so a record going to a regular file (not the terminal
 * or a pipe the report may share) is written on a second thread while the
 * report prints: the command waits for the slower of the two, not both. */
static int write_and_print(struct vt_profile *p, struct vt_cli_args *a, bool spawned)
{
	struct record_write w = { p, a, 0 };
	struct vt_report_out out;
	pthread_t writer;
	FILE *dest = report_dest(a, spawned);
	bool beside = vt_profile_output_is_file(a->output) &&
		      pthread_create(&writer, NULL, write_record, &w) == 0;
	int r = -EBADF, status = 0;

	if (!beside)
		write_record(&w);
	if (dest) {
		vt_report_out_open(&out, dest, a, a->no_pager);
		r = vt_report_print(out.file, p, &a->report);
		if (vt_report_out_close(&out) && !r)
			r = -EIO;
		if (dest != stdout && dest != stderr && fclose(dest) && !r)
			r = -errno;
		if (!r && dest != stdout && dest != stderr)
			fprintf(stderr, "vmtrace: report written to %s\n", a->report_file);
	}
	if (beside)
		pthread_join(writer, NULL);
	if (w.r == -EEXIST) {
		fprintf(stderr, "vmtrace: %s exists (use --force to overwrite it)\n", a->output);
		status = 1;
	} else if (w.r) {
		fprintf(stderr, "vmtrace: cannot write %s: %s\n", a->output, strerror(-w.r));
		status = 1;
	}
	if (r) {
		if (dest) /* no dest: report_dest said why */
			fprintf(stderr, "vmtrace: cannot print the report: %s\n", strerror(-r));
		status = 1;
	}
	return status;
}

/* No event of any kind arrived: a recording that attached and got nothing
 * says so, rather than print a report of zeros as if the program did none. */
static bool received_nothing(const struct vt_profile *p)
{
	uint64_t collections = 0;

	for (int k = 0; k < VT_GC_KINDS; k++)
		collections += p->gc_collections[k];
	return !p->allocs.n && !p->frees.n && !collections && !p->signals.n && !p->calls.n &&
	       !p->method_cache_resets.n && !p->constant_cache_resets.n && !p->global_serial_incs.n &&
	       !p->events.n && !p->live.n;
}

/* One line for a recording that received nothing. A command whose runtime
 * was to load vmtrace's provider and sent nothing, not even the last round
 * every loaded provider sends at exit, never loaded it: it ran untraced. */
static void say_received_nothing(const struct vt_session *s)
{
	char dir[PATH_MAX];
	const char *module = s->target.spawned ? vt_session_provider_module(s, dir, sizeof(dir)) : NULL;

	if (module)
		fprintf(stderr, "vmtrace: pid %d never loaded %s from %s (not in its root, or built "
			"for another version of its runtime): it ran untraced, nothing was counted\n",
			(int)s->target.pid, module, dir);
	else
		fprintf(stderr, "vmtrace: pid %d: attached, but none of its %s probes fired while "
			"recording: nothing was received\n", (int)s->target.pid, s->rt->name);
}

/* A process recorded alone that has others below it (a prefork server's
 * workers): how many, and how to take them too. */
static void say_children(pid_t pid)
{
	pid_t *kids;
	size_t n, named = 0, used = 0;
	char list[128] = "";

	if (vt_proc_descendants(&pid, 1, &kids, &n))
		return;
	for (; named < n && used + 16 < sizeof(list); named++)
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%d", named ? ", " : "",
					 (int)kids[named]);
	if (n)
		fprintf(stderr, "vmtrace: pid %d has %zu process%s below it (%s%s), not recorded: "
			"-p %d --children records them too, rows by pid\n", (int)pid, n, n == 1 ? "" : "es",
			list, named < n ? ", ..." : "", (int)pid);
	free(kids);
}

/* -p PID,PID...: a session per process, one record of them all. */
static int record_many(struct vt_cli_args *a)
{
	struct vt_session_group g;
	struct vt_profile p;
	char err[4608];
	int r, status;

	const pid_t *pids = a->pids;
	size_t npids = a->npids;
	pid_t *in_cgroup = NULL;

	if (a->cgroup) {
		r = vt_cgroup_procs(a->cgroup, &in_cgroup, &npids);
		if (r || !npids) {
			fprintf(stderr, "vmtrace: --cgroup %s: %s\n", a->cgroup,
				r ? strerror(-r) : "no processes in it");
			free(in_cgroup);
			return 1;
		}
		pids = in_cgroup;
	}
	if (a->children)
		r = vt_session_group_open_tree(&g, &a->session, pids, npids, err, sizeof(err));
	else
		r = vt_session_group_open(&g, &a->session, pids, npids, a->cgroup != NULL, err,
					  sizeof(err));
	free(in_cgroup);
	if (r) {
		fprintf(stderr, "vmtrace: %s\n", err);
		vt_session_group_close(&g);
		return 1;
	}
	fprintf(stderr, "vmtrace: recording %zu process%s (%s)%s\n", g.n, g.n == 1 ? "" : "es",
		a->session.sample_period ? "sampled" : "exact",
		a->duration > 0 ? "" : "; Ctrl-C to stop");
	for (size_t i = 0; i < g.n; i++) {
		fprintf(stderr, "vmtrace: pid %d (%s): %s probes\n", (int)g.v[i].target.pid, g.comm[i],
			g.v[i].rt->name);
	}
	enum vt_wait_result how = vt_session_group_wait(&g, a->duration > 0 ?
							(long long)(a->duration * 1000) : -1);

	if (how == VT_WAIT_EXITED)
		fprintf(stderr, "vmtrace: every process exited; reporting what was recorded\n");
	else if (how == VT_WAIT_ERROR)
		fprintf(stderr, "vmtrace: lost contact with the BPF programs; reporting what was recorded\n");
	vt_session_group_finish(&g);
	r = vt_session_group_collect(&g, &p);
	if (r) {
		fprintf(stderr, "vmtrace: cannot read the counters: %s\n", strerror(-r));
		vt_session_group_close(&g);
		vt_profile_free(&p);
		return 1;
	}
	status = write_and_print(&p, a, false);
	vt_profile_free(&p);
	vt_session_group_close(&g);
	return status;
}

/* --all: every process of the files of a known runtime. */
static int record_all(struct vt_cli_args *a)
{
	struct vt_session_all s;
	struct vt_profile p;
	char err[4608];
	int r, status;

	r = vt_session_all_open(&s, &a->session, err, sizeof(err));
	if (r) {
		fprintf(stderr, "vmtrace: %s\n", err);
		vt_session_all_close(&s);
		return 1;
	}
	fprintf(stderr, "vmtrace: recording every process of %zu file%s (exact)%s\n", s.n,
		s.n == 1 ? "" : "s", a->duration > 0 ? "" : "; Ctrl-C to stop");
	if (vt_session_all_wait(&s, a->duration > 0 ? (long long)(a->duration * 1000) : -1) ==
	    VT_WAIT_ERROR)
		fprintf(stderr, "vmtrace: lost contact with the BPF programs; reporting what was recorded\n");
	vt_session_all_finish(&s);
	r = vt_session_all_collect(&s, &p);
	if (r) {
		fprintf(stderr, "vmtrace: cannot read the counters: %s\n", strerror(-r));
		vt_profile_free(&p);
		vt_session_all_close(&s);
		return 1;
	}
	status = write_and_print(&p, a, false);
	vt_profile_free(&p);
	vt_session_all_close(&s);
	return status;
}

/* dir and the folders above it that are missing, as mkdir -p: 0, or -1
 * with errno. */
static int make_dirs(const char *dir)
{
	char path[PATH_MAX];
	size_t len = strlen(dir);

	if (len >= sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(path, dir, len + 1);
	for (char *p = path + 1; ; p++) {
		if (*p == '/' || !*p) {
			char c = *p;

			*p = '\0';
			if (mkdir(path, 0777) && errno != EEXIST)
				return -1;
			*p = c;
			if (!c)
				return 0;
		}
	}
}

int vt_cmd_record(int argc, char **argv)
{
	struct vt_cli_args a = {
		.report = { .format = VT_FORMAT_TEXT, .by = VT_BY_CLASS_METHOD, .sort = VT_SORT_COUNT, .top = 0 },
		.output = DEFAULT_RECORD,
		.push_name = "vmtrace", .push_queue = 16, .push_tries = 4,
	};
	struct vt_every_opts every = { 0 };
	struct vt_push_opts push = { .backoff_ms = 200, .timeout_ms = 5000 };
	struct vt_session s;
	struct vt_profile p;
	char err[4608];
	int operands, r, status = 0, cmd_status = 0;

	r = vt_cli_parse(&record_cmd, argc, argv, &a, &operands);
	if (r != VT_CLI_RUN)
		return r;
	if (operands < argc)
		a.session.cmd = argv + operands;
	if (a.all && vt_cli_all_conflict(&a))
		return vt_usage_error("record", "%s", vt_cli_all_conflict(&a));
	if (a.have_pid && a.session.cmd)
		return vt_usage_error("record", "-p and a command exclude each other (got command '%s')",
				      a.session.cmd[0]);
	if (!a.have_pid && !a.session.cmd && !a.cgroup && !a.all)
		return vt_usage_error("record", "nothing to trace: give -p PID, --all or -- CMD");
	a.session.verbose = vt_verbose();
	/* the record's timeline (report --format timeline); --every's intervals have none */
	if (a.every > 0 && a.session.series_ns)
		return vt_usage_error("record", "--timeline-step: --every's intervals have no timeline");
	if (!a.every && !a.session.series_ns)
		a.session.series_ns = 1000000000ull; /* a second */
	push.url = a.push_url;
	push.name = a.push_name;
	push.queue_max = (size_t)a.push_queue;
	push.tries = (unsigned)a.push_tries;
	if (a.every == 0 && (a.out_dir || a.push_url))
		return vt_usage_error("record", "--out-dir and --push go with --every");
	if (a.every > 0 && !a.out_dir && !a.push_url)
		return vt_usage_error("record", "--every needs --out-dir DIR or --push URL");
	if (a.push_url && vt_push_check(&push, err, sizeof(err)))
		return vt_usage_error("record", "%s", err);
	if (a.out_dir && (make_dirs(a.out_dir) || access(a.out_dir, W_OK | X_OK))) {
		fprintf(stderr, "vmtrace: --out-dir %s: %s\n", a.out_dir, strerror(errno));
		return 1;
	}
	a.session.always_on = a.every > 0;
	every.every_s = a.every;
	every.out_dir = a.out_dir;
	every.ropts = a.report;
	if (!a.have_format)
		every.ropts.format = VT_FORMAT_PPROF;
	every.duration_s = a.duration;
	every.push = a.push_url ? &push : NULL;

	if (a.every > 0 && a.report_file)
		return vt_usage_error("record", "--report-file: --every writes intervals, not a report");
	/* refuse before tracing anything, not after the run */
	if (a.report_file && strcmp(a.report_file, "-")) {
		int fd = open(a.report_file, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);

		if (fd < 0) {
			fprintf(stderr, "vmtrace: --report-file %s: %s\n", a.report_file, strerror(errno));
			return 1;
		}
		close(fd);
	}
	r = vt_profile_check_output(a.output, a.force);
	if (r == -EEXIST) {
		fprintf(stderr, "vmtrace: %s exists (use --force to overwrite it)\n", a.output);
		return 1;
	}
	if (r) {
		fprintf(stderr, "vmtrace: cannot write %s: %s\n", a.output, strerror(-r));
		return 1;
	}

	vt_session_catch_signals();
	if (a.cgroup && (a.have_pid || a.session.cmd))
		return vt_usage_error("record", "--cgroup PATH names the processes: not with -p or a command");
	if (a.all)
		return record_all(&a);
	if (a.npids > 1 || a.cgroup || a.children || (a.have_pid && a.report.per)) {
		if (a.every > 0)
			return vt_usage_error("record", "--every takes one process (-p PID)");
		if (a.session.live)
			return vt_usage_error("record", "--live takes one process (-p PID)");
		return record_many(&a);
	}
	r = vt_session_open(&s, &a.session, err, sizeof(err));
	if (r) {
		fprintf(stderr, "vmtrace: %s\n", err);
		vt_session_close(&s);
		return 1;
	}
	fprintf(stderr, "vmtrace: recording pid %d (%s probes: %s)%s\n", (int)s.target.pid,
		s.rt->name, s.sample_period ? "sampled" : "exact",
		a.duration > 0 ? "" : "; Ctrl-C to stop");
	if (s.spawn_note && !strcmp(s.rt->name, "vmtrace"))
		fprintf(stderr, "vmtrace: %s\n", s.spawn_note); /* not "vmtrace: vmtrace:" */
	else if (s.spawn_note)
		fprintf(stderr, "vmtrace: %s: %s\n", s.rt->name, s.spawn_note);
	if (s.followed_from)
		fprintf(stderr, "vmtrace: followed `%s` to pid %d: %s\n", s.followed_from,
			(int)s.target.pid, s.cmdline ? s.cmdline : "?");

	if (every.every_s > 0) {
		/* continuous: the intervals are the output; the record holds the whole run */
		status = vt_record_every(&s, &every, &p);
		r = vt_profile_write(&p, a.output, a.force);
		if (r) {
			fprintf(stderr, "vmtrace: cannot write %s: %s\n", a.output, strerror(-r));
			status = 1;
		}
		vt_profile_free(&p);
		vt_session_close(&s);
		return status;
	}
	enum vt_wait_result how = vt_session_wait(&s, a.duration > 0 ? (long long)(a.duration * 1000) : -1);

	switch (how) {
	case VT_WAIT_EXITED:
		if (s.target.spawned && WIFSIGNALED(s.target.exit_status))
			fprintf(stderr, "vmtrace: pid %d was killed by SIG%s; reporting what was recorded\n",
				(int)s.target.pid, sigabbrev_np(WTERMSIG(s.target.exit_status)) ?: "?");
		else
			fprintf(stderr, "vmtrace: pid %d exited; reporting what was recorded\n",
				(int)s.target.pid);
		/* a command that ended by itself: its status is ours, as with
		 * perf (a shell's 128+N for a signal) */
		if (s.target.spawned && WIFEXITED(s.target.exit_status))
			cmd_status = WEXITSTATUS(s.target.exit_status);
		else if (s.target.spawned && WIFSIGNALED(s.target.exit_status))
			cmd_status = 128 + WTERMSIG(s.target.exit_status);
		break;
	case VT_WAIT_ERROR:
		fprintf(stderr, "vmtrace: lost contact with the BPF programs; reporting what was recorded\n");
		break;
	default:
		break;
	}

	vt_session_finish(&s, how == VT_WAIT_EXITED);
	r = vt_session_collect(&s, &p);
	if (r) {
		fprintf(stderr, "vmtrace: cannot read the counters: %s\n", strerror(-r));
		vt_session_close(&s);
		vt_profile_free(&p);
		return 1;
	}
	if (received_nothing(&p))
		say_received_nothing(&s);
	if (!s.target.spawned)
		say_children(s.target.pid);
	status = write_and_print(&p, &a, s.target.spawned);
	/* the process ends here and its memory with it: freeing the profile
	 * block by block (a million blocks with rdoc's stacks) cost 10-16 ms;
	 * a leak checker still gets it freed */
#if defined(__SANITIZE_ADDRESS__)
	vt_profile_free(&p);
#endif
	/* Detach last: the kernel waits for a grace period per uprobe it
	 * removes (about a second for all of them), and the report need not
	 * wait for that. */
	vt_session_close(&s);
	return status ? status : cmd_status;
}
