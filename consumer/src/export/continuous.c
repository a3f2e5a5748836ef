/*
 * continuous.c: `record --every` (continuous.h).
 *
 * The session's maps are cumulative, so each interval is the difference of
 * the collection at its end and the one at its start (profile_diff.c): the
 * first interval starts from an empty profile at the moment the probes went
 * live, each later one from where the previous ended. Nothing falls between
 * two intervals and nothing is in two of them, however late a read is.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "export/continuous.h"
#include "report/pprof.h"
#include "profile/profile_diff.h"
#include "report/report_registry.h"

#define LOST_PUSH_DROPPED "push queue full (intervals not sent)"
#define LOST_PUSH_FAILED "push failed after retries (intervals not sent)"

static const char *extension(enum vt_format f)
{
	switch (f) {
	case VT_FORMAT_PPROF: return "pb.gz";
	case VT_FORMAT_TEXT: return "txt";
	case VT_FORMAT_PERFETTO: return "perfetto.json";
	default: return vt_format_name(f);
	}
}

/* Renders p into dir/name through a temporary file, so a collector
 * watching dir never sees half a profile. 0 or -errno. */
static int write_interval(const char *dir, const char *name, const struct vt_profile *p,
			  const struct vt_report_opts *ro)
{
	char path[4096], tmp[4200];
	FILE *f;
	int err;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -ENAMETOOLONG;
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	err = vt_report_print(f, p, ro);
	if (fclose(f) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

static uint64_t allocations_of(const struct vt_profile *p)
{
	uint64_t n = 0;

	for (size_t i = 0; i < p->allocs.n; i++)
		n += p->allocs.v[i].count;
	return n;
}

struct run {
	const struct vt_every_opts *o;
	struct vt_session *s;
	struct vt_pusher *pusher;
	struct vt_push_stats pushed;   /* as of the previous interval */
	unsigned seq;
	int status;
};

/* One interval: written, pushed, announced on stderr. */
static void emit(struct run *r, struct vt_profile *iv)
{
	char name[128], err[512];
	uint64_t from_s = iv->start_unix_ns / 1000000000ull;
	uint64_t until_s = (iv->start_unix_ns + (uint64_t)(iv->duration_s * 1e9)) / 1000000000ull;
	int e;

	r->seq++;
	if (r->pusher) {
		struct vt_push_stats now;

		/* what the pusher lost since the last interval is this one's loss */
		vt_pusher_stats(r->pusher, &now);
		if (vt_profile_add_lost(iv, LOST_PUSH_DROPPED, now.dropped - r->pushed.dropped) ||
		    vt_profile_add_lost(iv, LOST_PUSH_FAILED, now.failed - r->pushed.failed))
			r->status = 1;
		r->pushed = now;
	}
	snprintf(name, sizeof(name), "vmtrace-%d-%05u.%s", (int)iv->pid, r->seq,
		 extension(r->o->ropts.format));
	if (r->o->out_dir) {
		e = write_interval(r->o->out_dir, name, iv, &r->o->ropts);
		if (e) {
			fprintf(stderr, "vmtrace: cannot write %s/%s: %s\n", r->o->out_dir, name,
				strerror(-e));
			r->status = 1;
		}
	}
	if (r->pusher) {
		uint8_t *buf;
		size_t len;

		snprintf(err, sizeof(err), "runtime=%s,pid=%d", iv->runtime ? iv->runtime : "",
			 (int)iv->pid);
		if (until_s <= from_s)
			until_s = from_s + 1; /* the ingest API wants a non-empty span */
		e = vt_pprof_encode(iv, &buf, &len);
		if (!e)
			e = vt_pusher_enqueue(r->pusher, buf, len, err, from_s, until_s);
		if (e) {
			fprintf(stderr, "vmtrace: interval %u: cannot queue it for --push: %s\n", r->seq,
				strerror(-e));
			r->status = 1;
		}
	}
	fprintf(stderr, "vmtrace: interval %u: %.3f s, %llu allocations%s%s\n", r->seq,
		iv->duration_s, (unsigned long long)allocations_of(iv),
		r->o->out_dir ? ", " : "", r->o->out_dir ? name : "");
}

int vt_record_every(struct vt_session *s, const struct vt_every_opts *o, struct vt_profile *whole)
{
	struct run r = { .o = o, .s = s };
	struct vt_profile prev, cur, iv;
	char err[512];
	bool done = false;
	int e;

	vt_profile_init(whole);
	vt_profile_init(&prev);
	if (o->push) {
		e = vt_pusher_start(&r.pusher, o->push, err, sizeof(err));
		if (e) {
			fprintf(stderr, "vmtrace: %s\n", err);
			return 1;
		}
	}
	/* the first interval starts when the probes went live, from nothing */
	prev.start_unix_ns = (uint64_t)s->started_wall.tv_sec * 1000000000ull +
			     (uint64_t)s->started_wall.tv_nsec;
	while (!done) {
		double now = vt_session_elapsed(s);
		double next = (r.seq + 1) * o->every_s;
		int wait_ms;

		if (o->duration_s > 0 && next >= o->duration_s)
			next = o->duration_s;
		wait_ms = next > now ? (int)ceil((next - now) * 1000) : 0;
		enum vt_wait_result how = vt_session_wait(s, wait_ms);

		switch (how) {
		case VT_WAIT_TIMEOUT:
			done = o->duration_s > 0 && vt_session_elapsed(s) >= o->duration_s;
			break;
		case VT_WAIT_EXITED:
			fprintf(stderr, "vmtrace: pid %d exited; the last interval ends here\n",
				(int)s->target.pid);
			done = true;
			break;
		case VT_WAIT_ERROR:
			fprintf(stderr, "vmtrace: lost contact with the BPF programs; the last interval ends here\n");
			done = true;
			break;
		default:
			done = true;
			break;
		}
		/* pending batched counts belong to the interval that ends here */
		vt_session_finish(s, how == VT_WAIT_EXITED);
		e = vt_session_collect(s, &cur);
		if (!e)
			e = vt_profile_diff(&cur, &prev, &iv);
		if (e) {
			fprintf(stderr, "vmtrace: cannot read the counters: %s\n", strerror(-e));
			vt_profile_free(&cur);
			r.status = 1;
			break;
		}
		emit(&r, &iv);
		vt_profile_free(&iv);
		vt_profile_free(&prev);
		prev = cur; /* the next interval starts where this one ended */
	}
	*whole = prev;
	if (r.pusher) {
		struct vt_push_stats st;

		vt_pusher_stop(r.pusher, &st);
		if (vt_profile_add_lost(whole, LOST_PUSH_DROPPED, st.dropped) ||
		    vt_profile_add_lost(whole, LOST_PUSH_FAILED, st.failed))
			r.status = 1;
		fprintf(stderr, "vmtrace: pushed %llu of %u intervals (%llu retries); "
			"%llu failed, %llu dropped from a full queue\n",
			(unsigned long long)st.sent, r.seq, (unsigned long long)st.retried,
			(unsigned long long)st.failed, (unsigned long long)st.dropped);
		if (st.failed || st.dropped)
			r.status = 1;
	}
	return r.status;
}
