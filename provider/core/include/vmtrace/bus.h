/*
 * bus.h: libvmtrace's in-process event bus (docs/bus.md).
 *
 * The same calls that fire the USDT probes publish here when a subscriber
 * wants their kind. Publishing copies a fixed-size event into a bounded
 * lock-free ring: it never blocks, never allocates, takes no lock and is
 * async-signal-safe. One dispatcher thread delivers events to subscribers in
 * publish order per producer thread. Events published before the dispatcher
 * starts wait in the ring.
 *
 * Also here: signal routing onto the bus, a SIGPROF sampling profiler whose
 * stacks the dispatcher counts, and a statsd subscriber. Functions are
 * grouped by task; each says what it returns, who owns what, and whether it
 * is thread-safe or async-signal-safe.
 */
#ifndef VMTRACE_BUS_H
#define VMTRACE_BUS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

enum vmtrace_event_kind {
	VMTRACE_EV_ALLOC = 0,
	VMTRACE_EV_FREE,
	VMTRACE_EV_METHOD_ENTRY,
	VMTRACE_EV_METHOD_RETURN,
	VMTRACE_EV_METHOD_CACHE_RESET,
	VMTRACE_EV_CONSTANT_CACHE_RESET,
	VMTRACE_EV_GLOBAL_SERIAL_INC,
	VMTRACE_EV_GC_BEGIN,
	VMTRACE_EV_GC_END,
	VMTRACE_EV_SIGNAL,
	VMTRACE_EV_USER,
	VMTRACE_EV__COUNT
};

#define VMTRACE_USER_PAYLOAD 32

/* One event, copied by value into the ring. */
struct vmtrace_event {
	uint32_t kind;       /* enum vmtrace_event_kind */
	uint32_t producer;   /* kernel thread id of the publisher (the ring
	                        keeps its low 26 bits; tids fit in 22) */
	uint64_t time_ns;    /* CLOCK_MONOTONIC at publish */
	void *object;        /* an object reference the host's GC must keep
	                        alive until delivered, or NULL (see retain hooks) */
	union {
		struct { const char *klass, *method; uint64_t size; const char *site; uint64_t weight; } alloc;
		struct { const char *klass; uint64_t size; } free;
		struct { const char *klass, *method, *file; int line; } method;
		struct { const char *klass, *method; uint64_t serial; } method_cache_reset;
		struct { const char *name; uint64_t serial; } constant_cache_reset;
		struct { uint64_t serial; const char *reason; } global_serial_inc;
		struct { int kind; uint64_t heap_bytes; } gc;
		struct { int signo; } signal;
		struct { uint32_t type; unsigned char data[VMTRACE_USER_PAYLOAD]; } user;
	} u;
};

/* A subscriber; runs on the dispatcher thread, never in the publisher or in
 * a signal handler. ev is valid only during the call. */
typedef void (*vmtrace_subscriber_fn)(const struct vmtrace_event *ev, void *user);

/* ---- subscribers ---- */

/* Subscribe fn to one kind: an id > 0, or -errno (-EINVAL, -ENOSPC). Raises the
 * kind's gate so the host macros start publishing. Thread-safe; not
 * async-signal-safe. */
int vmtrace_bus_subscribe(enum vmtrace_event_kind kind, vmtrace_subscriber_fn fn, void *user);
/* 0, or -ENOENT for an unknown id. Once it returns, fn is not called again
 * (unless called from fn itself). Thread-safe; not async-signal-safe. */
int vmtrace_bus_unsubscribe(int id);

/* ---- the dispatcher ---- */

/* Start the dispatcher thread; events published earlier wait in the ring
 * and are delivered now. 0 or -errno. Thread-safe; not async-signal-safe. */
int vmtrace_bus_start(void);
/* Deliver what the ring holds, then join the dispatcher. Events published
 * later wait for the next start. Not from a subscriber; not async-signal-safe. */
void vmtrace_bus_stop(void);
/* Return once every event published before the call has been delivered
 * (or dropped). 0, or -EAGAIN when the dispatcher is not running, -EDEADLK
 * from a subscriber. Thread-safe; not async-signal-safe. */
int vmtrace_bus_flush(void);

/* ---- publishing ---- */

/* Route signal signo to the bus: the handler only publishes a
 * VMTRACE_EV_SIGNAL event and fires signal__received; subscribers run on the
 * dispatcher, after which signal__handled fires with the latency. 0 or -errno
 * (-EINVAL for SIGKILL, SIGSTOP or a bad number). Thread-safe; not
 * async-signal-safe. */
int vmtrace_signal_route(int signo);
/* Give signo back the action it had before vmtrace_signal_route. 0, or -ENOENT
 * when it is not routed. Not async-signal-safe. */
int vmtrace_signal_unroute(int signo);

/* Publish from the host. Returns 0, or -ENOSPC when the ring was full and
 * the event was dropped (counted, and bus__dropped fired), -EINVAL for a bad
 * kind. ev is copied; the caller keeps it. Async-signal-safe, lock-free,
 * never blocks or allocates; from a signal handler ev->object must be NULL. */
int vmtrace_bus_publish(const struct vmtrace_event *ev);

/* Events of an ordinary kind the ring holds; a further reserve takes only
 * VMTRACE_EV_SIGNAL events, so a flood of others cannot crowd signals
 * out. Any context. */
size_t vmtrace_bus_capacity(void);

/*
 * Object references (GC visibility). retain(object) runs on the publishing
 * thread before an event whose object is non-NULL enters the ring;
 * release(object) runs once every subscriber has seen it (on the dispatcher),
 * or at once on the publishing thread when the ring drops it. Every retain
 * has exactly one release. Set the hooks before publishing any object;
 * NULL, NULL removes them. 0, -EINVAL (only one hook), or -EBUSY while
 * references are in flight. Not async-signal-safe; the hooks themselves
 * must be thread-safe.
 */
typedef void (*vmtrace_object_fn)(void *object, void *user);
int vmtrace_bus_set_object_hooks(vmtrace_object_fn retain, vmtrace_object_fn release, void *user);

/* ---- accounting ---- */

/* Per kind: published = delivered + dropped + (events still in the ring). */
struct vmtrace_bus_stats {
	uint64_t published[VMTRACE_EV__COUNT]; /* publish calls with a valid kind */
	uint64_t delivered[VMTRACE_EV__COUNT]; /* handed to every subscriber */
	uint64_t dropped[VMTRACE_EV__COUNT];   /* refused: ring full */
	uint64_t objects_in_flight;            /* retained, not yet released */
};
/* Copy the counters. Exact once the bus is flushed and publishers are quiet;
 * any thread; not async-signal-safe. */
void vmtrace_bus_get_stats(struct vmtrace_bus_stats *out);
/* The event kind's name ("alloc", "signal", ...) or NULL. Any context. */
const char *vmtrace_event_kind_name(uint32_t kind);

/* ---- sampling profiler (SIGPROF) ---- */

#define VMTRACE_PROFILE_MAX_FRAMES 48

/*
 * A backtrace source: store up to max return addresses, innermost first, into
 * frames and return how many. Runs inside the SIGPROF handler, so it must be
 * async-signal-safe and must not touch memory it cannot prove readable.
 * ucontext is the handler's ucontext_t.
 */
typedef int (*vmtrace_backtrace_fn)(uintptr_t *frames, int max, void *ucontext, void *user);

/* Sample the process at hz per second of CPU time (ITIMER_PROF). backtrace
 * NULL: the built-in frame-pointer walk (needs -fno-omit-frame-pointer; see
 * vmtrace_profile_thread_register). Counts from an earlier run are cleared.
 * 0, -EINVAL, -EBUSY (already running), or -errno. Not async-signal-safe. */
int vmtrace_profile_start(unsigned hz, vmtrace_backtrace_fn backtrace, void *user);
/* Stop sampling and wait for handlers in flight; counts stay for snapshots. 0
 * or -EAGAIN when not running. Not async-signal-safe. */
int vmtrace_profile_stop(void);
/* Record the calling thread's stack bounds so the built-in walker can follow
 * its frame pointers (the main thread and the thread that started the
 * profiler are known already; other threads' samples hold only the
 * interrupted pc). 0 or -errno. Call on the thread, outside handlers. */
int vmtrace_profile_thread_register(void);

struct vmtrace_profile_stack {
	uint64_t count;                               /* samples with this stack */
	uint32_t depth;                               /* frames used */
	uintptr_t frames[VMTRACE_PROFILE_MAX_FRAMES]; /* innermost first */
};
struct vmtrace_profile_snapshot {
	uint64_t samples;  /* SIGPROF samples taken: sum of counts + dropped */
	uint64_t dropped;  /* samples lost because every slot was busy */
	size_t nstacks;
	struct vmtrace_profile_stack *stacks; /* most frequent first (owned) */
};
/* Count what is pending, then copy the table into out (caller frees it with
 * vmtrace_profile_snapshot_free). Exact after vmtrace_profile_stop. 0 or
 * -ENOMEM. Thread-safe; not async-signal-safe. */
int vmtrace_profile_snapshot(struct vmtrace_profile_snapshot *out);
/* Free a snapshot's stacks; NULL is fine. Not async-signal-safe. */
void vmtrace_profile_snapshot_free(struct vmtrace_profile_snapshot *snap);
/* Write "name+0xoff (module)" for a code address into buf (dladdr), or the
 * bare address. Returns buf. Not async-signal-safe. */
char *vmtrace_profile_symbolize(uintptr_t addr, char *buf, size_t len);
/* Print the `top` most frequent stacks (at most `frames` frames each,
 * symbolized) and the totals to out, for a host's --profile report. 0 or
 * -errno. Not async-signal-safe. */
int vmtrace_profile_write_top(FILE *out, size_t top, size_t frames);

/* ---- statsd subscriber ---- */

/*
 * Send counters and timings in statsd line format over UDP to host_port
 * ("HOST:PORT", "[v6]:PORT"), batched every interval_ms (0: 1000) into
 * datagrams of at most 1432 bytes. Metric names start with prefix (NULL:
 * "vmtrace"): PREFIX.alloc.CLASS, PREFIX.alloc_bytes.CLASS (c), PREFIX.free.CLASS,
 * PREFIX.method_cache_reset.CLASS, PREFIX.constant_cache_reset.NAME,
 * PREFIX.global_serial_inc, PREFIX.gc.minor|major (c), PREFIX.gc.minor|major.pause
 * (ms), PREFIX.signal.NAME (c), PREFIX.signal_latency (ms).
 * Subscribes on the bus; needs the dispatcher running to send. 0, -EINVAL
 * (bad address), -EBUSY (running), or -errno. Not async-signal-safe.
 */
int vmtrace_statsd_start(const char *host_port, const char *prefix, unsigned interval_ms);
/* Flush the bus, send what is pending, unsubscribe, close. Not from a
 * subscriber; not async-signal-safe. */
void vmtrace_statsd_stop(void);

struct vmtrace_statsd_stats {
	uint64_t lines;        /* metric lines sent */
	uint64_t datagrams;    /* datagrams sent */
	uint64_t send_errors;  /* datagrams the kernel refused (lines lost) */
	uint64_t overflow;     /* events not aggregated: too many distinct names */
};
/* Copy the statsd counters. Any thread; not async-signal-safe. */
void vmtrace_statsd_get_stats(struct vmtrace_statsd_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* VMTRACE_BUS_H */
