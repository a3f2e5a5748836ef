/*
 * cmd_serve.c: `vmtrace serve`, a process's counters (or with --all every
 * process's) as a Prometheus /metrics endpoint (docs/exports.md).
 *
 * Two threads: the main one owns the session (it drains the GC ring buffer
 * and reads the maps); libmicrohttpd's thread answers requests. A scrape
 * asks the main thread for a fresh exposition and waits for it, so every
 * scrape sees the counters as of that scrape, and the session is only ever
 * touched by the thread that owns it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "export/http_server.h"
#include "report/report_metrics.h"
#include "session/session_watch.h"

#define DEFAULT_LISTEN "127.0.0.1:9464"
#define DEFAULT_TOP 100
#define SLICE_MS 50            /* how soon the main thread sees a scrape */
#define SCRAPE_WAIT_S 5        /* a scrape waits this long for fresh counts at most */
/* Snapshots: while scrapes come (one within KEEP_FRESH_S), the main thread
 * renders the counts every FRESH_MS, and a scrape takes the last snapshot
 * at once; a first scrape, or one after a quiet spell, waits for fresh
 * counts. With nobody scraping, nothing is read at all. */
#define FRESH_MS 1000
#define KEEP_FRESH_S 60

static const char usage_line[] =
	"Usage: vmtrace serve -p PID [--listen ADDR:PORT] [--top N] [-d SECONDS] [options]\n"
	"       vmtrace serve [--listen ADDR:PORT] [options] -- CMD [ARGS...]\n"
	"       vmtrace serve --all [--listen ADDR:PORT] [--top N] [-d SECONDS] [options]\n";

static const char help_text[] =
	"\n"
	"Trace a process and serve its counters at http://ADDR:PORT/metrics for\n"
	"Prometheus (OpenMetrics text when the scraper asks for it, else Prometheus\n"
	"text 0.0.4): allocations and bytes per class and method, GC collections and\n"
	"a pause histogram, cache resets, signals and their latency, and every loss\n"
	"counter as vmtrace_lost_total{reason=...}. While scrapes come, the counters\n"
	"are read every second and a scrape takes the last reading at once. Ends at\n"
	"Ctrl-C or SIGTERM, after -d SECONDS, or when the target exits\n"
	"(after --linger SECONDS more of its final counts).\n"
	"\n"
	"  -p, --pid PID          trace this process\n"
	VT_HELP_CHILDREN
	"      --all              every process record --all follows, now or later:\n"
	"                         allocations labelled by pid, comm, cgroup and\n"
	"                         runtime; GC, cache resets, signals and losses summed\n"
	"                         over the processes (docs/exports.md). Ends at -d or\n"
	"                         Ctrl-C\n"
	"      --listen ADDR:PORT where to listen (default " DEFAULT_LISTEN "; port 0: any free);\n"
	"                         the counters name classes and methods: listen where\n"
	"                         only the scraper reaches. 1024 connections at most,\n"
	"                         256 from one address\n"
	"      --top N            series per keyed family (class and method, cache\n"
	"                         resets, reasons; with --all each process's classes\n"
	"                         and methods, and the processes) at most; later keys\n"
	"                         add up in one \"(other)\" series (default 100)\n"
	"      --sample BYTES     sample allocations, one per BYTES on average (K, M,\n"
	"                         G); counts become estimates. 0: every allocation.\n"
	"                         Default: 512K where a provider inside the runtime\n"
	"                         samples (vmtrace's Ruby and CPython extensions, its\n"
	"                         JVM agent), every allocation elsewhere\n"
	"      --events LIST      serve only these, comma-separated: alloc, free, gc,\n"
	"                         cache, signal (default: all). A runtime that stops\n"
	"                         for its collector thousands of times a second (Ruby's\n"
	"                         lazy sweeping) pays two probe traps each: alloc alone\n"
	"                         is cheapest\n"
	"  -d, --duration SECS    stop after SECS seconds\n"
	"      --linger SECS      after the target exits, serve its final counts this\n"
	"                         long (default 0)\n"
	VT_HELP_WATCH_OPTIONS
	"\n"
	"Examples:\n"
	"  vmtrace serve -p 4242                              # then: curl 127.0.0.1:9464/metrics\n"
	"  vmtrace serve -p 4242 --listen 10.0.0.5:9464 --top 50  # the address Prometheus\n"
	"                                                     # reaches, not every interface\n"
	"  vmtrace serve --all --top 2000                     # every runtime on the host\n";

struct exposition {
	pthread_mutex_t lock;
	pthread_cond_t fresh;      /* a new exposition is ready, or the counts are final */
	unsigned long gen;         /* expositions made so far */
	bool wanted;               /* a scrape waits for one */
	bool final;                /* the target is gone: what is here stays */
	char *text[2];             /* [0] Prometheus 0.0.4, [1] OpenMetrics */
	size_t len[2];
	struct timespec made;      /* when text was rendered (CLOCK_MONOTONIC) */
	struct timespec scraped;   /* the last scrape */
};

static void reply_text(struct vt_http_reply *r, int status, const char *s)
{
	r->status = status;
	r->content_type = "text/plain; charset=utf-8";
	r->body = strdup(s);
	r->len = r->body ? strlen(s) : 0;
}

static void on_scrape(void *ctx, const char *path, const char *accept, struct vt_http_reply *r)
{
	struct exposition *e = ctx;
	bool om = strstr(accept, "application/openmetrics-text") != NULL;
	struct timespec deadline;
	unsigned long want;

	if (!strcmp(path, "/")) {
		reply_text(r, 200, "vmtrace: the metrics are at /metrics\n");
		return;
	}
	if (strcmp(path, "/metrics")) {
		reply_text(r, 404, "not found: the metrics are at /metrics\n");
		return;
	}
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += SCRAPE_WAIT_S;
	pthread_mutex_lock(&e->lock);
	/* the snapshot, when the main thread keeps one fresh (scrapes came) */
	bool fresh = e->text[om] &&
		     (e->final || (vt_session_ms_since(&e->scraped) < KEEP_FRESH_S * 1000LL &&
				   vt_session_ms_since(&e->made) < 2 * FRESH_MS));

	clock_gettime(CLOCK_MONOTONIC, &e->scraped);
	want = e->gen + 1;
	e->wanted = !fresh;
	while (!fresh && e->gen < want && !e->final)
		if (pthread_cond_timedwait(&e->fresh, &e->lock, &deadline) == ETIMEDOUT)
			break;
	if (e->text[om]) {
		r->status = 200;
		r->content_type = vt_metrics_content_type(om);
		r->body = malloc(e->len[om] ? e->len[om] : 1);
		if (r->body)
			memcpy(r->body, e->text[om], e->len[om]);
		r->len = r->body ? e->len[om] : 0;
	} else {
		reply_text(r, 503, "vmtrace: no counts yet\n");
	}
	pthread_mutex_unlock(&e->lock);
}

/* Collects and renders both formats, and wakes the scrapes waiting. */
static int refresh(struct exposition *e, struct vt_watch *w, struct vt_metrics *m, bool final)
{
	struct vt_profile p;
	char *text[2] = { NULL, NULL };
	size_t len[2] = { 0, 0 };
	int err;

	err = vt_watch_collect(w, &p);
	for (int om = 0; !err && om < 2; om++)
		err = vt_metrics_render(m, &p, om, &text[om], &len[om]);
	vt_profile_free(&p);
	pthread_mutex_lock(&e->lock);
	if (!err) {
		for (int om = 0; om < 2; om++) {
			free(e->text[om]);
			e->text[om] = text[om];
			e->len[om] = len[om];
		}
	} else {
		free(text[0]);
		free(text[1]);
	}
	clock_gettime(CLOCK_MONOTONIC, &e->made);
	e->gen++;
	e->wanted = false;
	e->final = final;
	pthread_cond_broadcast(&e->fresh);
	pthread_mutex_unlock(&e->lock);
	return err;
}

/* A scrape waits, or scrapes come and the snapshot is due. */
static bool refresh_due(struct exposition *e)
{
	bool due;

	pthread_mutex_lock(&e->lock);
	due = e->wanted ||
	      (e->text[0] && vt_session_ms_since(&e->scraped) < KEEP_FRESH_S * 1000LL &&
	       vt_session_ms_since(&e->made) >= FRESH_MS);
	pthread_mutex_unlock(&e->lock);
	return due;
}

static void sleep_slice(void)
{
	struct timespec ts = { 0, SLICE_MS * 1000000L };

	nanosleep(&ts, NULL);
}

static const enum vt_opt serve_opts[] = {
	VT_OPT_PID, VT_OPT_CHILDREN, VT_OPT_LISTEN, VT_OPT_TOP, VT_OPT_SAMPLE, VT_OPT_EVENTS, VT_OPT_DURATION,
	VT_OPT_LINGER, VT_OPT_MAP_ENTRIES, VT_OPT_RUNTIME, VT_OPT_NO_METHODS, VT_OPT_NO_FRAME_WALK, VT_OPT_ALL,
	VT_OPT_VERBOSE, VT_OPT_HELP, 0,
};

static const struct vt_cli_cmd serve_cmd = {
	"serve", usage_line, help_text, serve_opts,
	true, /* stop at the command's name: its own options are its own */
};

int vt_cmd_serve(int argc, char **argv)
{
	struct vt_cli_args a = {
		.report = { .top = DEFAULT_TOP },
		.listen = DEFAULT_LISTEN,
	};
	struct exposition e = { .lock = PTHREAD_MUTEX_INITIALIZER, .fresh = PTHREAD_COND_INITIALIZER };
	struct vt_http_server *http = NULL;
	struct vt_metrics *m = NULL;
	struct vt_watch w = { 0 };
	const char *listen;
	double duration, linger;
	bool exited = false;
	char err[4608], *comm;
	int operands, r, status = 0;

	r = vt_cli_parse(&serve_cmd, argc, argv, &a, &operands);
	if (r != VT_CLI_RUN)
		return r;
	if (a.report.top < 1 || a.report.top > 100000)
		return vt_usage_error("serve", "--top: %zu is not a number from 1 to 100000",
				      a.report.top);
	if (operands < argc)
		a.session.cmd = argv + operands;
	if (a.all && vt_cli_all_conflict(&a))
		return vt_usage_error("serve", "%s", vt_cli_all_conflict(&a));
	if (a.have_pid && a.session.cmd)
		return vt_usage_error("serve", "-p and a command exclude each other (got command '%s')",
				      a.session.cmd[0]);
	if (!a.have_pid && !a.session.cmd && !a.all)
		return vt_usage_error("serve", "nothing to trace: give -p PID, --all or -- CMD");
	if (a.npids > 1)
		return vt_usage_error("serve", "-p: one process at a time here (several: vmtrace record)");
	a.session.verbose = vt_verbose();
	/* /metrics counts cache resets and signals but shows no timeline: none
	 * is kept, which costs no CPU and can lose nothing */
	a.session.no_events = true;
	a.session.always_on = true;
	listen = a.listen;
	duration = a.duration;
	linger = a.linger;

	vt_session_catch_signals();
	/* listen first: a taken port is refused before anything is traced */
	r = vt_http_start(&http, listen, on_scrape, &e, err, sizeof(err));
	if (r) {
		fprintf(stderr, "vmtrace: %s\n", err);
		return r == -EINVAL ? 2 : 1;
	}
	r = vt_watch_open(&w, &a.session, vt_cli_watch_what(&a), err, sizeof(err));
	if (r) {
		fprintf(stderr, "vmtrace: %s\n", err);
		status = 1;
		goto out;
	}
	/* with --children, as with --all, every series carries its process */
	comm = a.all || a.children ? NULL : vt_target_comm(w.one.target.pid);
	m = vt_metrics_new(a.report.top, comm, a.all || a.children);
	free(comm);
	if (!m || refresh(&e, &w, m, false)) {
		fprintf(stderr, "vmtrace: cannot read the counters\n");
		status = 1;
		goto out;
	}
	/* the port it really got, for --listen ADDR:0 */
	if (a.all)
		fprintf(stderr, "vmtrace: serving every process of %zu file%s", w.every.n,
			w.every.n == 1 ? "" : "s");
	else
		fprintf(stderr, "vmtrace: serving pid %d%s (%s probes%s)", (int)vt_watch_session(&w)->target.pid,
			a.children ? " and the processes below it" : "", vt_watch_session(&w)->rt->name,
			vt_watch_session(&w)->sample_period ? ": sampled, estimates" : "");
	fprintf(stderr, " at http://%.*s:%u/metrics\n", (int)(strrchr(listen, ':') - listen),
		listen, (unsigned)vt_http_port(http));

	while (!exited) {
		enum vt_wait_result how = vt_watch_wait(&w, SLICE_MS);

		if (how == VT_WAIT_ERROR && a.all) {
			fprintf(stderr, "vmtrace: lost contact with the BPF programs\n");
			status = 1;
			break;
		} else if (how == VT_WAIT_EXITED || how == VT_WAIT_ERROR) {
			fprintf(stderr, how == VT_WAIT_EXITED ? "vmtrace: pid %d exited\n"
				: "vmtrace: lost contact with the BPF programs of pid %d\n",
				(int)vt_watch_session(&w)->target.pid);
			exited = true;
		} else if (how == VT_WAIT_SIGNAL ||
			   (duration > 0 && vt_watch_elapsed(&w) >= duration)) {
			break;
		} else if (refresh_due(&e) && refresh(&e, &w, m, false)) {
			fprintf(stderr, "vmtrace: cannot read the counters\n");
			status = 1;
			break;
		}
	}
	if (exited && linger > 0) {
		struct timespec t0, now;

		/* the final counts, for the scrapes still to come */
		refresh(&e, &w, m, true);
		fprintf(stderr, "vmtrace: serving its final counts for %.0f s more\n", linger);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			sleep_slice();
			clock_gettime(CLOCK_MONOTONIC, &now);
		} while (!vt_session_stop_requested() &&
			 (now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9 < linger);
	}
out:
	/* wake any scrape still waiting before the server goes */
	pthread_mutex_lock(&e.lock);
	e.final = true;
	pthread_cond_broadcast(&e.fresh);
	pthread_mutex_unlock(&e.lock);
	vt_http_stop(http);
	vt_metrics_free(m);
	free(e.text[0]);
	free(e.text[1]);
	vt_watch_close(&w);
	return status;
}
