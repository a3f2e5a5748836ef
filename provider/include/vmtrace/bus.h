/*
 * bus.h: libvmtrace's in-process event bus (docs/bus.md).
 *
 * The same calls that fire the USDT probes publish here when a subscriber
 * wants their kind. Publishing copies a fixed-size event into a bounded
 * lock-free ring: it never blocks, never allocates, takes no lock and is
 * async-signal-safe. One dispatcher thread delivers events to subscribers in
 * publish order per producer thread. Events published before the dispatcher
 * starts wait in the ring.
 */
#ifndef VMTRACE_BUS_H
#define VMTRACE_BUS_H

#include <stddef.h>
#include <stdint.h>

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
	uint32_t producer;   /* kernel thread id of the publisher */
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

/* Subscribe fn to one kind: an id > 0, or -errno. Not async-signal-safe. */
int vmtrace_bus_subscribe(enum vmtrace_event_kind kind, vmtrace_subscriber_fn fn, void *user);
/* 0, or -ENOENT for an unknown id. */
int vmtrace_bus_unsubscribe(int id);

/* Start the dispatcher thread; events published earlier wait in the ring
 * and are delivered now. 0 or -errno. */
int vmtrace_bus_start(void);
/* Deliver what the ring holds, then join the dispatcher. */
void vmtrace_bus_stop(void);
/* Return once every event published before the call has been delivered
 * (or dropped). 0, or -EAGAIN when the dispatcher is not running. */
int vmtrace_bus_flush(void);

/* Route signal signo to the bus: the handler only publishes a
 * VMTRACE_EV_SIGNAL event and fires signal__received; subscribers run on the
 * dispatcher, after which signal__handled fires with the latency. 0 or -errno. */
int vmtrace_signal_route(int signo);

/* Publish from the host. Returns 0, or -ENOSPC when the ring was full and
 * the event was dropped (counted, and bus__dropped fired). Async-signal-safe. */
int vmtrace_bus_publish(const struct vmtrace_event *ev);

#ifdef __cplusplus
}
#endif

#endif /* VMTRACE_BUS_H */
