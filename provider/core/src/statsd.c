/*
 * statsd.c: the built-in statsd subscriber.
 *
 * Subscribers (on the dispatcher thread) add into a fixed table keyed by
 * (metric, name pointer): the names are interned strings, so a pointer is
 * a cheap key, and two pointers to equal strings just become two lines for
 * the same metric, which statsd adds up. Timings (GC pauses, signal
 * latency) queue as single values. Every interval the dispatcher formats
 * the lines and sends them over one connected UDP socket, packed into
 * datagrams of at most MAX_DATAGRAM bytes (under a 1500-byte MTU with
 * IPv6 and UDP headers), then starts the interval from zero.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "vmtrace/bus.h"
#include "bus_dispatch.h"
#include "bus_ring.h"

#define MAX_DATAGRAM 1432
#define TABLE_SIZE 4096		/* power of two */
#define TABLE_FILL 3072		/* distinct keys per interval */
#define MAX_TIMINGS 1024	/* timing values per interval */

enum metric {
	M_ALLOC = 1, M_FREE, M_METHOD_CACHE_RESET, M_CONSTANT_CACHE_RESET,
	M_GLOBAL_SERIAL_INC, M_GC, M_SIGNAL,
};
enum timing { T_GC_MINOR, T_GC_MAJOR, T_SIGNAL_LATENCY };

struct cell {
	uint32_t metric;	/* 0 = empty */
	uintptr_t key;		/* name pointer, GC kind or signo */
	uint64_t count;
	uint64_t bytes;
};
struct timing_value {
	uint32_t which;
	uint64_t ns;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int active;
static int sock = -1;
static char prefix[64];
static uint64_t interval_ns;
static uint64_t next_due;
static struct cell *cells;
static size_t ncells;
static struct timing_value timings[MAX_TIMINGS];
static size_t ntimings;
/* GC begin times by (producer thread, kind): threads collect their own heaps */
#define GC_OPEN 64
static struct { uint32_t producer; int kind; uint64_t ns; } gc_open[GC_OPEN];
static int sub_ids[8];
static size_t nsubs;
static _Atomic uint64_t stat_lines, stat_datagrams, stat_errors, stat_overflow;

/* ---- aggregation (dispatcher thread) ---- */

static void add(uint32_t metric, uintptr_t key, uint64_t bytes)
{
	size_t j = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 40 ^ metric) & (TABLE_SIZE - 1);

	while (cells[j].metric) {
		if (cells[j].metric == metric && cells[j].key == key) {
			cells[j].count++;
			cells[j].bytes += bytes;
			return;
		}
		j = (j + 1) & (TABLE_SIZE - 1);
	}
	if (ncells >= TABLE_FILL) {
		atomic_fetch_add(&stat_overflow, 1);
		return;
	}
	cells[j] = (struct cell){ metric, key, 1, bytes };
	ncells++;
}

static void add_timing(uint32_t which, uint64_t ns)
{
	if (ntimings >= MAX_TIMINGS) {
		atomic_fetch_add(&stat_overflow, 1);
		return;
	}
	timings[ntimings++] = (struct timing_value){ which, ns };
}

static void on_event(const struct vmtrace_event *ev, void *user)
{
	(void)user;
	pthread_mutex_lock(&lock);
	if (!atomic_load(&active))
		goto out;
	switch (ev->kind) {
	case VMTRACE_EV_ALLOC:
		add(M_ALLOC, (uintptr_t)ev->u.alloc.klass, ev->u.alloc.size * ev->u.alloc.weight);
		break;
	case VMTRACE_EV_FREE:
		add(M_FREE, (uintptr_t)ev->u.free.klass, ev->u.free.size);
		break;
	case VMTRACE_EV_METHOD_CACHE_RESET:
		add(M_METHOD_CACHE_RESET, (uintptr_t)ev->u.method_cache_reset.klass, 0);
		break;
	case VMTRACE_EV_CONSTANT_CACHE_RESET:
		add(M_CONSTANT_CACHE_RESET, (uintptr_t)ev->u.constant_cache_reset.name, 0);
		break;
	case VMTRACE_EV_GLOBAL_SERIAL_INC:
		add(M_GLOBAL_SERIAL_INC, 0, 0);
		break;
	case VMTRACE_EV_GC_BEGIN: {
		size_t free_slot = GC_OPEN;
		for (size_t i = 0; i < GC_OPEN; i++) {
			if (gc_open[i].ns == 0 && free_slot == GC_OPEN)
				free_slot = i;
			if (gc_open[i].ns && gc_open[i].producer == ev->producer && gc_open[i].kind == ev->u.gc.kind)
				free_slot = i; /* an unmatched begin: start over */
		}
		if (free_slot < GC_OPEN)
			gc_open[free_slot].producer = ev->producer, gc_open[free_slot].kind = ev->u.gc.kind,
			gc_open[free_slot].ns = ev->time_ns;
		else
			atomic_fetch_add(&stat_overflow, 1);
		break;
	}
	case VMTRACE_EV_GC_END: {
		int major = ev->u.gc.kind == VMTRACE_GC_MAJOR;
		add(M_GC, (uintptr_t)major, 0);
		for (size_t i = 0; i < GC_OPEN; i++) {
			if (gc_open[i].ns && gc_open[i].producer == ev->producer && gc_open[i].kind == ev->u.gc.kind) {
				if (ev->time_ns >= gc_open[i].ns)
					add_timing(major ? T_GC_MAJOR : T_GC_MINOR, ev->time_ns - gc_open[i].ns);
				gc_open[i].ns = 0;
				break;
			}
		}
		break;
	}
	case VMTRACE_EV_SIGNAL:
		add(M_SIGNAL, (uintptr_t)ev->u.signal.signo, 0);
		add_timing(T_SIGNAL_LATENCY, vmtrace__now_ns() - ev->time_ns);
		break;
	}
out:
	pthread_mutex_unlock(&lock);
}

/* ---- formatting and sending ---- */

/* statsd reserves ':', '|', '@' and newlines; keep names to [A-Za-z0-9_-]. */
static void clean_name(char *out, size_t len, const char *name)
{
	size_t i = 0;

	if (!name)
		name = "unknown";
	for (; name[i] && i + 1 < len; i++) {
		char c = name[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			 c == '_' || c == '-';
		out[i] = ok ? c : '_';
	}
	out[i] = '\0';
	if (i == 0)
		snprintf(out, len, "empty");
}

struct batch {
	char buf[MAX_DATAGRAM];
	size_t len;
};

static void send_batch(struct batch *b)
{
	if (b->len == 0)
		return;
	if (send(sock, b->buf, b->len, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)b->len)
		atomic_fetch_add(&stat_datagrams, 1);
	else
		atomic_fetch_add(&stat_errors, 1);
	b->len = 0;
}

static void put_line(struct batch *b, const char *line)
{
	size_t n = strlen(line);

	if (n + 1 > MAX_DATAGRAM) {
		atomic_fetch_add(&stat_overflow, 1);
		return;
	}
	if (b->len && b->len + 1 + n > MAX_DATAGRAM)
		send_batch(b);
	if (b->len)
		b->buf[b->len++] = '\n';
	memcpy(b->buf + b->len, line, n);
	b->len += n;
	atomic_fetch_add(&stat_lines, 1);
}

static void signal_name(char *out, size_t len, int signo)
{
	const char *abbrev = sigabbrev_np(signo);

	if (abbrev)
		snprintf(out, len, "%s", abbrev);
	else
		snprintf(out, len, "%d", signo);
}

/* Caller holds lock. */
static void send_all_locked(void)
{
	static struct batch b;
	static const char *const timing_names[] = { "gc.minor.pause", "gc.major.pause", "signal_latency" };
	char line[320], name[200];

	b.len = 0;
	for (size_t j = 0; j < TABLE_SIZE && ncells; j++) {
		struct cell *c = &cells[j];
		if (!c->metric)
			continue;
		switch (c->metric) {
		case M_ALLOC:
			clean_name(name, sizeof(name), (const char *)c->key);
			snprintf(line, sizeof(line), "%s.alloc.%s:%llu|c", prefix, name, (unsigned long long)c->count);
			put_line(&b, line);
			snprintf(line, sizeof(line), "%s.alloc_bytes.%s:%llu|c", prefix, name, (unsigned long long)c->bytes);
			break;
		case M_FREE:
			clean_name(name, sizeof(name), (const char *)c->key);
			snprintf(line, sizeof(line), "%s.free.%s:%llu|c", prefix, name, (unsigned long long)c->count);
			break;
		case M_METHOD_CACHE_RESET:
			clean_name(name, sizeof(name), (const char *)c->key);
			snprintf(line, sizeof(line), "%s.method_cache_reset.%s:%llu|c", prefix, name,
				 (unsigned long long)c->count);
			break;
		case M_CONSTANT_CACHE_RESET:
			clean_name(name, sizeof(name), (const char *)c->key);
			snprintf(line, sizeof(line), "%s.constant_cache_reset.%s:%llu|c", prefix, name,
				 (unsigned long long)c->count);
			break;
		case M_GLOBAL_SERIAL_INC:
			snprintf(line, sizeof(line), "%s.global_serial_inc:%llu|c", prefix, (unsigned long long)c->count);
			break;
		case M_GC:
			snprintf(line, sizeof(line), "%s.gc.%s:%llu|c", prefix, c->key ? "major" : "minor",
				 (unsigned long long)c->count);
			break;
		case M_SIGNAL:
			signal_name(name, sizeof(name), (int)c->key);
			snprintf(line, sizeof(line), "%s.signal.%s:%llu|c", prefix, name, (unsigned long long)c->count);
			break;
		}
		put_line(&b, line);
		c->metric = 0;
	}
	ncells = 0;
	for (size_t i = 0; i < ntimings; i++) {
		snprintf(line, sizeof(line), "%s.%s:%llu.%06llu|ms", prefix, timing_names[timings[i].which],
			 (unsigned long long)(timings[i].ns / 1000000), (unsigned long long)(timings[i].ns % 1000000));
		put_line(&b, line);
	}
	ntimings = 0;
	send_batch(&b);
}

/* The dispatcher's tick (bus_dispatch.h). */
static uint64_t statsd_tick(uint64_t now_ns, int force)
{
	uint64_t due;

	if (!atomic_load_explicit(&active, memory_order_relaxed))
		return 0;
	pthread_mutex_lock(&lock);
	if (atomic_load(&active) && (force || now_ns >= next_due)) {
		send_all_locked();
		next_due = now_ns + interval_ns;
	}
	due = atomic_load(&active) ? next_due : 0;
	pthread_mutex_unlock(&lock);
	return due;
}

/* ---- control ---- */

static int open_socket(const char *host_port)
{
	char host[256];
	const char *colon = strrchr(host_port, ':');
	const char *h = host_port;
	size_t hlen;
	struct addrinfo hints, *res, *ai;
	int fd = -ENOENT;

	if (!colon || colon == host_port || colon[1] == '\0')
		return -EINVAL;
	hlen = (size_t)(colon - host_port);
	if (h[0] == '[') {
		if (hlen < 3 || h[hlen - 1] != ']')
			return -EINVAL;
		h++;
		hlen -= 2;
	}
	if (hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	char *end;
	long port = strtol(colon + 1, &end, 10);
	if (*end != '\0' || port <= 0 || port > 65535)
		return -EINVAL;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_DGRAM;
	hints.ai_flags = AI_NUMERICSERV;
	if (getaddrinfo(host, colon + 1, &hints, &res) != 0)
		return -EINVAL;
	for (ai = res; ai; ai = ai->ai_next) {
		int s = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (s < 0) {
			fd = -errno;
			continue;
		}
		if (connect(s, ai->ai_addr, ai->ai_addrlen) == 0) {
			fd = s;
			break;
		}
		fd = -errno;
		close(s);
	}
	freeaddrinfo(res);
	return fd;
}

void vmtrace_statsd_stop(void);

int vmtrace_statsd_start(const char *host_port, const char *metric_prefix, unsigned interval_ms)
{
	static const enum vmtrace_event_kind kinds[] = {
		VMTRACE_EV_ALLOC, VMTRACE_EV_FREE, VMTRACE_EV_METHOD_CACHE_RESET,
		VMTRACE_EV_CONSTANT_CACHE_RESET, VMTRACE_EV_GLOBAL_SERIAL_INC,
		VMTRACE_EV_GC_BEGIN, VMTRACE_EV_GC_END, VMTRACE_EV_SIGNAL,
	};
	int fd;

	if (!host_port || (metric_prefix && strlen(metric_prefix) >= sizeof(prefix)))
		return -EINVAL;
	if (atomic_load(&active))
		return -EBUSY;
	fd = open_socket(host_port);
	if (fd < 0)
		return fd;
	struct cell *table = calloc(TABLE_SIZE, sizeof(*table));
	if (!table) {
		close(fd);
		return -ENOMEM;
	}

	vmtrace__bus_set_statsd_tick(statsd_tick);
	pthread_mutex_lock(&lock);
	sock = fd;
	free(cells);
	cells = table;
	ncells = ntimings = 0;
	memset(gc_open, 0, sizeof(gc_open));
	snprintf(prefix, sizeof(prefix), "%s", metric_prefix ? metric_prefix : "vmtrace");
	interval_ns = (uint64_t)(interval_ms ? interval_ms : 1000) * 1000000u;
	next_due = vmtrace__now_ns() + interval_ns;
	atomic_store(&active, 1);
	pthread_mutex_unlock(&lock);

	nsubs = 0;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		int id = vmtrace_bus_subscribe(kinds[i], on_event, NULL);
		if (id < 0) {
			vmtrace_statsd_stop();
			return id;
		}
		sub_ids[nsubs++] = id;
	}
	/* the dispatcher may sleep without a deadline: give it one */
	vmtrace__bus_wake();
	return 0;
}

void vmtrace_statsd_stop(void)
{
	if (vmtrace__bus_on_dispatcher())
		return;
	vmtrace_bus_flush(); /* events already published count in this batch */
	for (size_t i = 0; i < nsubs; i++)
		vmtrace_bus_unsubscribe(sub_ids[i]);
	nsubs = 0;
	pthread_mutex_lock(&lock);
	if (atomic_load(&active)) {
		send_all_locked();
		atomic_store(&active, 0);
		close(sock);
		sock = -1;
		free(cells);
		cells = NULL;
	}
	pthread_mutex_unlock(&lock);
}

void vmtrace_statsd_get_stats(struct vmtrace_statsd_stats *out)
{
	out->lines = atomic_load(&stat_lines);
	out->datagrams = atomic_load(&stat_datagrams);
	out->send_errors = atomic_load(&stat_errors);
	out->overflow = atomic_load(&stat_overflow);
}
