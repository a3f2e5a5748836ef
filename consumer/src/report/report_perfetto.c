/*
 * report_perfetto.c: `--format perfetto`, the record's timeline as Chrome's
 * trace-event JSON ({"traceEvents": [...]}), which ui.perfetto.dev and
 * chrome://tracing open as they are.
 *
 * What goes in (docs/exports.md):
 * - process_name and thread_name metadata ("M") for the target and every
 *   thread seen on the timeline;
 * - each GC pause with a known start as a complete event ("X") on the
 *   thread that collected;
 * - each handled signal as a nestable async slice ("b" then "e") from its
 *   arrival to the end of its handling: the handlings of a burst overlap,
 *   which slices of one thread track may not;
 * - each method or constant cache reset as an instant ("i") on its thread;
 * - the heap's size after each pause as a counter ("C") where the runtime
 *   gives it, and one mark for the pauses the record did not keep.
 * Times are microseconds after the record's start, with ns kept as three
 * decimals. Perfetto drops events before time 0, so when one began before
 * the start (a pause or signal straddling the start of an --every
 * interval) the zero moves back to it, and otherData's ts_origin_ns says
 * by how much. The record's header and loss counters go into "otherData".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "report/report_fmt.h"
#include "report/report_model.h"

/* ns as microseconds: "12.345" (exact, no floating point) */
static void print_us(FILE *out, uint64_t ns)
{
	fprintf(out, "%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
}

/* The common head of an event: {"ph": PH, "name": NAME, "cat": CAT, "ts": TS,
 * "pid": PID, "tid": TID; the caller adds the rest and the closing brace.
 * at_ns is after the record's start, origin_ns the trace's zero on that clock. */
static void event_head(FILE *out, const struct vt_profile *p, const char *ph, const char *name,
		       const char *cat, int64_t at_ns, int64_t origin_ns, uint32_t tid)
{
	fprintf(out, ",\n{\"ph\": \"%s\", \"name\": ", ph);
	vt_json_string(out, name);
	fprintf(out, ", \"cat\": \"%s\", \"ts\": ", cat);
	print_us(out, (uint64_t)at_ns - (uint64_t)origin_ns); /* at_ns >= origin_ns */
	fprintf(out, ", \"pid\": %" PRId32 ", \"tid\": %" PRIu32, p->pid, tid);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* The threads on the timeline, sorted, each once; *n their number. */
static uint32_t *timeline_threads(const struct vt_profile *p, size_t *n)
{
	uint32_t *t = malloc((p->gc_pauses.n + p->events.n + 1) * sizeof(*t));
	size_t k = 0;

	if (!t)
		return NULL;
	for (size_t i = 0; i < p->gc_pauses.n; i++)
		if (p->gc_pauses.v[i].tid)
			t[k++] = p->gc_pauses.v[i].tid;
	for (size_t i = 0; i < p->events.n; i++)
		t[k++] = p->events.v[i].tid;
	qsort(t, k, sizeof(*t), cmp_u32);
	*n = 0;
	for (size_t i = 0; i < k; i++)
		if (!*n || t[*n - 1] != t[i])
			t[(*n)++] = t[i];
	return t;
}

static void metadata(FILE *out, const struct vt_profile *p, const uint32_t *threads, size_t n)
{
	char name[64];

	/* the first event: no leading comma (event_head's are ",\n{") */
	fprintf(out, "\n{\"ph\": \"M\", \"name\": \"process_name\", \"ts\": 0, \"pid\": %" PRId32
		", \"tid\": %" PRId32 ", \"args\": {\"name\": ", p->pid, p->pid);
	vt_json_string(out, p->target && *p->target ? p->target : p->runtime);
	fputs("}}", out);
	for (size_t i = 0; i < n; i++) {
		if (threads[i] == (uint32_t)p->pid)
			snprintf(name, sizeof(name), "main thread %" PRIu32, threads[i]);
		else
			snprintf(name, sizeof(name), "thread %" PRIu32, threads[i]);
		event_head(out, p, "M", "thread_name", "__metadata", 0, 0, threads[i]);
		fputs(", \"args\": {\"name\": ", out);
		vt_json_string(out, name);
		fputs("}}", out);
	}
}

/* Which of a pause's figures the runtime gives: one no pause of the record
 * has is left out of every pause's args, not printed as 0. */
struct pause_fields {
	bool heap, allocated, collected;
};

static struct pause_fields fields_given(const struct vt_profile *p)
{
	struct pause_fields f = { false, false, false };

	for (size_t i = 0; i < p->gc_pauses.n; i++) {
		f.heap |= p->gc_pauses.v[i].heap_bytes != 0;
		f.allocated |= p->gc_pauses.v[i].allocated_bytes != 0;
		f.collected |= p->gc_pauses.v[i].objects_collected != 0;
	}
	return f;
}

/* The pauses on the timeline, and the heap's size after each as a counter
 * track where the runtime gives it; *untimed counts those without a start. */
static void gc_pauses(FILE *out, const struct vt_profile *p, int64_t o, uint64_t *untimed)
{
	struct pause_fields f = fields_given(p);
	char name[64];

	for (size_t i = 0; i < p->gc_pauses.n; i++) {
		const struct vt_gc_pause *g = &p->gc_pauses.v[i];
		const char *kind = vt_gc_kind_name(p, g->kind);

		if (!g->tid) { /* an older record: no start, no thread */
			(*untimed)++;
			continue;
		}
		snprintf(name, sizeof(name), "GC %s", kind);
		event_head(out, p, "X", name, "gc", g->at_ns, o, g->tid);
		fputs(", \"dur\": ", out);
		print_us(out, g->duration_ns);
		fputs(", \"args\": {\"kind\": ", out);
		vt_json_string(out, kind);
		fprintf(out, ", \"duration_ns\": %" PRIu64, g->duration_ns);
		if (f.heap)
			fprintf(out, ", \"heap_bytes\": %" PRIu64, g->heap_bytes);
		if (f.allocated)
			fprintf(out, ", \"allocated_bytes\": %" PRIu64, g->allocated_bytes);
		if (f.collected)
			fprintf(out, ", \"objects_collected\": %" PRIu64, g->objects_collected);
		fputs("}}", out);
		if (f.heap) {
			event_head(out, p, "C", "heap", "gc", g->at_ns + (int64_t)g->duration_ns, o, g->tid);
			fprintf(out, ", \"args\": {\"bytes\": %" PRIu64 "}}", g->heap_bytes);
		}
	}
}

/* when a signal's handling began: dur_ns before it ended (at_ns), at the
 * earliest INT64_MIN (a damaged record's numbers must not wrap) */
static int64_t signal_start(const struct vt_event *e)
{
	uint64_t room = (uint64_t)e->at_ns - (uint64_t)INT64_MIN;

	return e->dur_ns >= room ? INT64_MIN : (int64_t)((uint64_t)e->at_ns - e->dur_ns);
}

/* The trace's zero: the record's start, or the earliest event if earlier. */
static int64_t origin(const struct vt_profile *p)
{
	int64_t o = 0;

	for (size_t i = 0; i < p->gc_pauses.n; i++)
		if (p->gc_pauses.v[i].tid && p->gc_pauses.v[i].at_ns < o)
			o = p->gc_pauses.v[i].at_ns;
	for (size_t i = 0; i < p->events.n; i++) {
		const struct vt_event *e = &p->events.v[i];
		int64_t at = e->kind == VT_EVENT_SIGNAL ? signal_start(e) : e->at_ns;

		if (at < o)
			o = at;
	}
	return o;
}

static void timeline_events(FILE *out, const struct vt_profile *p, int64_t o)
{
	char sig[32];

	for (size_t i = 0; i < p->events.n; i++) {
		const struct vt_event *e = &p->events.v[i];

		switch (e->kind) {
		case VT_EVENT_SIGNAL:
			vt_signal_name((int)e->arg, sig, sizeof(sig));
			event_head(out, p, "b", sig, "signal", signal_start(e), o, e->tid);
			fprintf(out, ", \"id\": \"0x%zx\", \"args\": {\"signo\": %" PRId64
				", \"latency_ns\": %" PRIu64 "}}", i, e->arg, e->dur_ns);
			event_head(out, p, "e", sig, "signal", e->at_ns, o, e->tid);
			fprintf(out, ", \"id\": \"0x%zx\"}", i);
			break;
		case VT_EVENT_METHOD_CACHE_RESET:
			event_head(out, p, "i", "method cache reset", "cache", e->at_ns, o, e->tid);
			fputs(", \"s\": \"t\", \"args\": {\"class\": ", out);
			vt_json_string(out, e->name);
			fputs(", \"method\": ", out);
			vt_json_string(out, e->name2);
			fprintf(out, ", \"serial\": %" PRIu64 "}}", e->serial);
			break;
		case VT_EVENT_CONSTANT_CACHE_RESET:
			event_head(out, p, "i", "constant cache reset", "cache", e->at_ns, o, e->tid);
			fputs(", \"s\": \"t\", \"args\": {\"name\": ", out);
			vt_json_string(out, e->name);
			fprintf(out, ", \"serial\": %" PRIu64 "}}", e->serial);
			break;
		default:
			break; /* the reader refuses kinds it does not know */
		}
	}
}

/* Pauses counted but not in the record's list (record --gc-pauses keeps the
 * longest): one process-wide mark at the start says how many are not drawn. */
static uint64_t not_kept(FILE *out, const struct vt_profile *p, int64_t o)
{
	uint64_t n = 0;
	char name[96];

	for (int k = 0; k < VT_GC_KINDS; k++)
		n += vt_gc_not_kept(p, k);
	if (n) {
		snprintf(name, sizeof(name), "%" PRIu64 " shorter GC pauses not drawn (record --gc-pauses)",
			 n);
		event_head(out, p, "i", name, "gc", o, o, (uint32_t)p->pid);
		fputs(", \"s\": \"p\"}", out);
	}
	return n;
}

static void other_data(FILE *out, const struct vt_profile *p, int64_t o, uint64_t untimed,
		       uint64_t unkept)
{
	fputs("\"otherData\": {\"runtime\": ", out);
	vt_json_string(out, p->runtime);
	fputs(", \"target\": ", out);
	vt_json_string(out, p->target);
	fprintf(out, ", \"pid\": %" PRId32 ", \"start_unix_ns\": %" PRIu64 ", \"duration_s\": %.9f"
		", \"ts_origin_ns\": %" PRId64 ", \"gc_pauses_without_start\": %" PRIu64
		", \"gc_pauses_not_kept\": %" PRIu64 ", \"lost\": {", p->pid, p->start_unix_ns,
		p->duration_s, o, untimed, unkept);
	for (size_t i = 0; i < p->lost.n; i++) {
		fputs(i ? ", " : "", out);
		vt_json_string(out, p->lost.v[i].what);
		fprintf(out, ": %" PRIu64, p->lost.v[i].count);
	}
	fputs("}}", out);
}

int vt_report_perfetto(FILE *out, const struct vt_profile *p, const struct vt_report_opts *opts)
{
	uint64_t untimed = 0, unkept;
	int64_t o = origin(p);
	size_t nthreads;
	uint32_t *threads = timeline_threads(p, &nthreads);

	(void)opts; /* a timeline has no rows to group, sort or cut */
	if (!threads)
		return -ENOMEM;
	fputs("{\"displayTimeUnit\": \"ns\",\n\"traceEvents\": [", out);
	metadata(out, p, threads, nthreads);
	gc_pauses(out, p, o, &untimed);
	unkept = not_kept(out, p, o);
	timeline_events(out, p, o);
	fputs("\n],\n", out);
	other_data(out, p, o, untimed, unkept);
	fputs("}\n", out);
	free(threads);
	if (untimed)
		fprintf(stderr, "vmtrace: perfetto: %" PRIu64 " GC pauses have no start time or "
			"thread (an older record), left off the timeline\n", untimed);
	return 0;
}
