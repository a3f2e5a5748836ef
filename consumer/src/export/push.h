/*
 * push.h: sending interval profiles to a Pyroscope-compatible ingest
 * endpoint (POST URL/ingest, pprof as multipart "profile"), from a thread of
 * its own through libcurl, so a slow or absent server never stalls the
 * recording. The queue is bounded: when it is full the oldest interval is
 * dropped and counted. Each interval is tried a bounded number of times.
 */
#ifndef VMTRACE_PUSH_H
#define VMTRACE_PUSH_H

#include <stddef.h>
#include <stdint.h>

struct vt_pusher;

struct vt_push_opts {
	const char *url;           /* http:// or https:// base; "/ingest" is appended */
	const char *name;          /* the application name, e.g. "vmtrace" */
	size_t queue_max;          /* intervals waiting at most (>= 1) */
	unsigned tries;            /* sends of one interval at most (>= 1) */
	unsigned backoff_ms;       /* wait before the 2nd try; doubles each try */
	unsigned timeout_ms;       /* one request, connect included */
};

struct vt_push_stats {         /* intervals */
	uint64_t sent;             /* accepted by the server (2xx) */
	uint64_t retried;          /* tries beyond the first */
	uint64_t failed;           /* given up: tries used up or refused (4xx) */
	uint64_t dropped;          /* pushed out of a full queue */
};

/* Whether o can be used: 0, or -EINVAL with a one-line reason in err. */
int vt_push_check(const struct vt_push_opts *o, char *err, size_t errlen);

/* Checks the options and starts the sender thread. 0, or -EINVAL (with a
 * one-line reason in err) / -ENOMEM / -errno. */
int vt_pusher_start(struct vt_pusher **out, const struct vt_push_opts *o, char *err, size_t errlen);

/* Queues one interval: pprof bytes (ownership passes to the pusher, freed
 * once sent or given up), its labels as "k=v,k=v" (copied), its time span in
 * Unix seconds. Never blocks on the network. 0 or -ENOMEM (buf freed). */
int vt_pusher_enqueue(struct vt_pusher *p, uint8_t *buf, size_t len, const char *labels,
		      uint64_t from_s, uint64_t until_s);

/* Counts so far (thread-safe). */
void vt_pusher_stats(struct vt_pusher *p, struct vt_push_stats *out);

/* Sends what is queued (each interval still within its tries), stops the
 * thread, gives the final counts (final may be NULL) and frees. Accepts NULL. */
void vt_pusher_stop(struct vt_pusher *p, struct vt_push_stats *final);

#endif /* VMTRACE_PUSH_H */
