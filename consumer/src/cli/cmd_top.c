/*
 * cmd_top.c: `vmtrace top`, a live view of a process (or with --all of
 * every process): every interval, the rates per second over that interval
 * and the totals since attaching, until Ctrl-C, the target's exit, or -n
 * views.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/top_screen.h"
#include "profile/profile.h"
#include "report/report.h"
#include "report/report_fmt.h"
#include "report/report_model.h"
#include "session/session_watch.h"

#define DEFAULT_ROWS 20
#define KEY_SLICE_S 0.05 /* on a terminal, keys are looked at this often */

static const char usage_line[] =
	"Usage: vmtrace top -p PID [-i SECONDS] [-n COUNT] [--top N] [options]\n"
	"       vmtrace top --all [-i SECONDS] [-n COUNT] [--top N] [options]\n";

static const char help_text[] =
	"\n"
	"A live view of a process's allocations per class and method, GC, cache\n"
	"resets and signals, refreshed every interval: rates per second over the\n"
	"last interval and totals since vmtrace attached. Ends at q or Ctrl-C, when\n"
	"the target exits, or after COUNT views. On a terminal each view fits the\n"
	"window (and follows its resizes) and the screen is given back at the end;\n"
	"piped, the views are printed one after the other.\n"
	"\n"
	"  -p, --pid PID          the process\n"
	VT_HELP_CHILDREN
	"      --all              every process record --all follows, now or later:\n"
	"                         rows by pid and comm (docs/runtimes.md); ends at\n"
	"                         Ctrl-C or after COUNT views\n"
	"  -i, --interval SECS    seconds between views (default 1; fractions allowed,\n"
	"                         at most 86400)\n"
	"  -n, --count COUNT      stop after COUNT views\n"
	"      --top N            allocation rows shown (default 20, 0: all)\n"
	"      --live             the live heap too: what is alive now, by class,\n"
	"                         method and site, and its peak (docs/live.md)\n"
	"      --live-max N       objects tracked at once (default 1048576)\n"
	VT_HELP_WATCH_OPTIONS
	"\n"
	"Examples:\n"
	"  vmtrace top -p 4242\n"
	"  vmtrace top -p 4242 -i 5 --top 40\n"
	"  vmtrace top --all\n";

/* ---- rows keyed by (pid, class, method), as the view shows them ---- */

/* A view's allocation rows merged by (class, method), and per process when
 * the profile is of several: the profile keys them by site too, which the
 * view does not show. Sorted by key for bsearch; the strings point into the
 * profile, which the caller keeps. */
static int merged_rows_set(struct vt_alloc_table *t, const struct vt_profile *p)
{
	struct vt_report_opts o = { .by = VT_BY_CLASS_METHOD, .per = p->procs.n ? VT_PER_PID : 0 };
	int err;

	vt_alloc_table_free(t);
	err = vt_alloc_table_build(p, &o, t);
	if (!err)
		qsort(t->rows, t->n, sizeof(*t->rows), vt_alloc_row_cmp);
	return err;
}

static const struct vt_alloc_row *merged_find(const struct vt_alloc_table *t,
					      const struct vt_alloc_row *r)
{
	return t->n ? bsearch(r, t->rows, t->n, sizeof(*t->rows), vt_alloc_row_cmp) : NULL;
}

struct top_row {
	const struct vt_alloc_row *a;
	double count_rate, bytes_rate;
};

static int row_cmp(const void *a_, const void *b_)
{
	const struct top_row *a = a_, *b = b_;

	if (a->count_rate != b->count_rate)
		return a->count_rate < b->count_rate ? 1 : -1;
	if (a->a->count != b->a->count)
		return a->a->count < b->a->count ? 1 : -1;
	return vt_alloc_row_cmp(a->a, b->a);
}

static uint64_t keyed_total(const struct vt_keyed_count *v, size_t n)
{
	uint64_t t = 0;

	for (size_t i = 0; i < n; i++)
		t += v[i].count;
	return t;
}

static void human_bytes(char *buf, size_t len, double b)
{
	const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;

	while (b >= 1024 && u < 4) {
		b /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
}

struct totals {
	uint64_t allocs, bytes, gc[VT_GC_KINDS], mcr, ccr, gsi, signals, lost;
};

static void totals_of(const struct vt_profile *p, struct totals *t)
{
	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < p->allocs.n; i++) {
		t->allocs += p->allocs.v[i].count;
		t->bytes += p->allocs.v[i].bytes;
	}
	for (int k = 0; k < VT_GC_KINDS; k++)
		t->gc[k] = p->gc_collections[k];
	t->mcr = keyed_total(p->method_cache_resets.v, p->method_cache_resets.n);
	t->ccr = keyed_total(p->constant_cache_resets.v, p->constant_cache_resets.n);
	t->gsi = keyed_total(p->global_serial_incs.v, p->global_serial_incs.n);
	for (size_t i = 0; i < p->signals.n; i++)
		t->signals += p->signals.v[i].received;
	for (size_t i = 0; i < p->lost.n; i++)
		t->lost += p->lost.v[i].count;
}

/* --live: what is alive now, largest first. */
static int live_cmp(const void *pa, const void *pb)
{
	const struct vt_live *a = *(const struct vt_live *const *)pa, *b = *(const struct vt_live *const *)pb;

	return a->bytes != b->bytes ? (a->bytes > b->bytes ? -1 : 1) : strcmp(a->klass, b->klass);
}

static void print_live(FILE *out, const struct vt_profile *p, size_t rows)
{
	const struct vt_live **v;
	uint64_t objects = 0, bytes = 0;
	size_t shown = 0;

	if (!p->live_info.on || !(v = malloc((p->live.n ? p->live.n : 1) * sizeof(*v))))
		return;
	for (size_t i = 0; i < p->live.n; i++) {
		v[i] = &p->live.v[i];
		objects += v[i]->count;
		bytes += v[i]->bytes;
	}
	qsort(v, p->live.n, sizeof(*v), live_cmp);
	fprintf(out, "\nlive: %" PRIu64 " objects, %" PRIu64 " bytes; peak %" PRIu64 " bytes\n", objects,
		bytes, p->live_info.peak_bytes);
	fprintf(out, "%12s %14s  %-20s %-28s %s\n", "LIVE", "LIVE BYTES", "CLASS", "METHOD", "SITE");
	for (size_t i = 0; i < p->live.n && (rows == 0 || shown < rows); i++) {
		if (!v[i]->count)
			continue;
		shown++;
		fprintf(out, "%12" PRIu64 " %14" PRIu64 "  %-20s %-28s %s\n", v[i]->count, v[i]->bytes,
			v[i]->klass, v[i]->method, v[i]->site);
	}
	free(v);
}

static void print_header(FILE *out, const struct vt_watch *w, const struct vt_profile *p)
{
	const struct vt_session *s = vt_watch_session(w);
	char *cmdline;

	if (w->all) {
		fprintf(out, "vmtrace top - every process (%zu with allocations) - %s probes - %.1fs\n",
			p->procs.n, p->runtime ? p->runtime : "?", vt_watch_elapsed(w));
		return;
	}
	if (w->what == VT_WATCH_TREE) {
		fprintf(out, "vmtrace top - pid %d and the processes below it (%zu recorded) - %s probes "
			"- %.1fs\n", (int)s->target.pid, w->tree.n, p->runtime ? p->runtime : "?",
			vt_watch_elapsed(w));
		return;
	}
	/* the command line is the target's to choose: escaped like any name */
	cmdline = s->cmdline ? vt_text_name(s->cmdline) : NULL;
	fprintf(out, "vmtrace top - pid %d (%s) - %s probes - %.1fs\n", (int)s->target.pid,
		cmdline ? cmdline : "?", s->rt->name, vt_watch_elapsed(w));
	free(cmdline);
}

/* The allocation rows, fastest first; PID and COMM when the rows are per
 * process. */
static void print_rows(FILE *out, const struct vt_alloc_table *cur, const struct vt_alloc_table *prev,
		       double rate, size_t rows, bool by_pid)
{
	struct top_row *tr = cur->n ? calloc(cur->n, sizeof(*tr)) : NULL;

	if (!tr)
		return;
	for (size_t i = 0; i < cur->n; i++) {
		const struct vt_alloc_row *a = &cur->rows[i], *b = merged_find(prev, a);

		tr[i].a = a;
		tr[i].count_rate = (double)(a->count - (b ? b->count : 0)) * rate;
		tr[i].bytes_rate = (double)(a->bytes - (b ? b->bytes : 0)) * rate;
	}
	qsort(tr, cur->n, sizeof(*tr), row_cmp);
	fprintf(out, "%10s %12s %12s %14s  ", "ALLOCS/s", "BYTES/s", "ALLOCS", "BYTES");
	if (by_pid)
		fprintf(out, "%7s %-16s ", "PID", "COMM");
	fprintf(out, "%-20s %s\n", "CLASS", "METHOD");
	for (size_t i = 0; i < cur->n && (rows == 0 || i < rows); i++) {
		/* escaped as the text report does: a name cannot draw rows */
		char *kl = vt_text_name(tr[i].a->klass), *me = vt_text_name(tr[i].a->method);
		char *co = by_pid ? vt_text_name(tr[i].a->comm ? tr[i].a->comm : "") : NULL;

		fprintf(out, "%10.0f %12.0f %12" PRIu64 " %14" PRIu64 "  ", tr[i].count_rate,
			tr[i].bytes_rate, tr[i].a->count, tr[i].a->bytes);
		if (by_pid)
			fprintf(out, "%7d %-16s ", (int)tr[i].a->pid, co ? (*co ? co : "-") : "?");
		fprintf(out, "%-20s %s\n", kl ? (*kl ? kl : "-") : "?", me ? (*me ? me : "-") : "?");
		free(kl);
		free(me);
		free(co);
	}
	free(tr);
}

static void print_view(FILE *out, const struct vt_watch *w, const struct vt_profile *p,
		       const struct vt_alloc_table *cur, const struct vt_alloc_table *prev,
		       const struct totals *t0, double dt, size_t rows)
{
	struct totals t;
	char b1[32], b2[32];
	double rate = dt > 0 ? 1.0 / dt : 0;

	totals_of(p, &t);
	print_header(out, w, p);
	if (!p->has_allocations) {
		fputs("allocations: this runtime has no allocation probes\n", out);
	} else {
		human_bytes(b1, sizeof(b1), (double)t.bytes);
		human_bytes(b2, sizeof(b2), (double)(t.bytes - t0->bytes) * rate);
		fprintf(out, "allocations: %" PRIu64 " (%.0f/s), %s (%s/s)%s\n", t.allocs,
			(double)(t.allocs - t0->allocs) * rate, b1, b2,
			p->sample_period ? " - sampled, estimates" : "");
	}
	/* the kinds and names `record` shows: minor/major, mark/sweep, gen0..gen2 */
	fputs("gc:", out);
	for (int k = 0; k < VT_GC_KINDS; k++)
		if (vt_gc_kind_shown(p, k))
			fprintf(out, " %" PRIu64 " %s (%.1f/s),", t.gc[k], vt_gc_kind_name(p, k),
				(double)(t.gc[k] - t0->gc[k]) * rate);
	struct vt_pause_stats ps;

	if (vt_pause_stats(p, -1, &ps))
		memset(&ps, 0, sizeof(ps));
	fprintf(out, " %" PRIu64 " pauses, p99 %.3f ms%s\n", ps.pauses, (double)ps.p99_ns / 1e6,
		ps.estimated ? " (estimated)" : "");
	fprintf(out, "method cache resets: %" PRIu64 " (%.1f/s)  constant cache resets: %" PRIu64
		" (%.1f/s)  serial incs: %" PRIu64 " (%.1f/s)\n",
		t.mcr, (double)(t.mcr - t0->mcr) * rate, t.ccr, (double)(t.ccr - t0->ccr) * rate,
		t.gsi, (double)(t.gsi - t0->gsi) * rate);
	fprintf(out, "signals: %" PRIu64 " received (%.1f/s)  lost: %" PRIu64 "\n\n", t.signals,
		(double)(t.signals - t0->signals) * rate, t.lost);

	if (!cur->n)
		return;
	print_rows(out, cur, prev, rate, rows, p->procs.n > 0);
	print_live(out, p, rows);
}

static const enum vt_opt top_opts[] = {
	VT_OPT_PID, VT_OPT_CHILDREN, VT_OPT_INTERVAL, VT_OPT_COUNT, VT_OPT_TOP, VT_OPT_MAP_ENTRIES,
	VT_OPT_RUNTIME, VT_OPT_NO_METHODS, VT_OPT_NO_FRAME_WALK, VT_OPT_LIVE, VT_OPT_LIVE_MAX,
	VT_OPT_ALL, VT_OPT_VERBOSE, VT_OPT_HELP, 0,
};

static const struct vt_cli_cmd top_cmd = { "top", usage_line, help_text, top_opts, false };

int vt_cmd_top(int argc, char **argv)
{
	struct vt_cli_args a = { .report.top = DEFAULT_ROWS, .interval = 1.0 };
	struct vt_watch w;
	struct vt_profile prev, cur;
	struct vt_alloc_table pr = { 0 }, cr = { 0 };
	struct totals t0;
	double last = 0;
	uint64_t shown = 0;
	bool screen;
	char err[4608];
	int operands, r, status = 0;

	r = vt_cli_parse(&top_cmd, argc, argv, &a, &operands);
	if (r != VT_CLI_RUN)
		return r;
	if (operands < argc)
		return vt_usage_error("top", "unexpected argument '%s'", argv[operands]);
	if (a.all && vt_cli_all_conflict(&a))
		return vt_usage_error("top", "%s", vt_cli_all_conflict(&a));
	if (!a.have_pid && !a.all)
		return vt_usage_error("top", "which process? give -p PID (or --all)");
	if (a.npids > 1)
		return vt_usage_error("top", "-p: one process at a time here (several: vmtrace record)");
	a.session.verbose = vt_verbose();

	vt_session_catch_signals();
	r = vt_watch_open(&w, &a.session, vt_cli_watch_what(&a), err, sizeof(err));
	if (r) {
		fprintf(stderr, "vmtrace: %s\n", err);
		vt_watch_close(&w);
		return 1;
	}
	vt_profile_init(&prev);
	memset(&t0, 0, sizeof(t0));
	screen = vt_screen_open();
	for (;;) {
		enum vt_wait_result how = VT_WAIT_TIMEOUT;
		double now, until = vt_watch_elapsed(&w) + a.interval;
		bool quit = false;

		/* the interval in slices, so a key (q, a resize) is seen at once */
		while (how == VT_WAIT_TIMEOUT && !(quit = screen && vt_screen_quit_asked())) {
			double left = until - vt_watch_elapsed(&w);

			if (left <= 0)
				break;
			how = vt_watch_wait(&w, (long long)((screen && left > KEY_SLICE_S ? KEY_SLICE_S : left) * 1000));
		}
		if (quit || how == VT_WAIT_SIGNAL)
			break;
		if (how == VT_WAIT_ERROR) {
			vt_screen_close();
			fprintf(stderr, "vmtrace: lost contact with the BPF programs\n");
			status = 1;
			break;
		}
		now = vt_watch_elapsed(&w);
		r = vt_watch_collect(&w, &cur);
		if (!r)
			r = merged_rows_set(&cr, &cur);
		if (r) {
			vt_screen_close();
			fprintf(stderr, "vmtrace: cannot read the counters: %s\n", strerror(-r));
			vt_profile_free(&cur);
			status = 1;
			break;
		}
		if (screen) {
			char *text = NULL;
			size_t len = 0;
			FILE *f = open_memstream(&text, &len);

			if (f) {
				print_view(f, &w, &cur, &cr, &pr, &t0, now - last, (size_t)a.report.top);
				fclose(f);
				vt_screen_draw(text);
			}
			free(text);
		} else {
			print_view(stdout, &w, &cur, &cr, &pr, &t0, now - last, (size_t)a.report.top);
			fflush(stdout);
		}
		last = now;
		totals_of(&cur, &t0);
		vt_profile_free(&prev);
		prev = cur;   /* pr points into it */
		vt_alloc_table_free(&pr);
		pr = cr;
		memset(&cr, 0, sizeof(cr));
		shown++;
		if (how == VT_WAIT_EXITED) {
			vt_screen_close();
			fprintf(stderr, "vmtrace: pid %d exited\n", (int)vt_watch_session(&w)->target.pid);
			break;
		}
		if (a.count && shown >= a.count)
			break;
	}
	vt_screen_close();
	vt_alloc_table_free(&pr);
	vt_alloc_table_free(&cr);
	vt_profile_free(&prev);
	vt_watch_close(&w);
	return status;
}
