/*
 * bench_bus: the in-process bus beside a self-pipe, in one run.
 *
 *   publish    ns of the publishing thread's CPU time per
 *              vmtrace_bus_publish (1 and 2 threads) vs. write() of the
 *              same 64-byte event to a pipe
 *   throughput events/s the dispatcher delivers from a full ring vs. a
 *              reader thread draining the same backlog from a pipe; and
 *              events/s delivered while one producer publishes flat out
 *              (with events per CPU second of the consuming thread and the
 *              cores the process got, since the machine may be shared)
 *   signal     ns from the handler (timestamp taken in it) to the subscriber
 *              vs. a handler that writes the timestamp to a pipe read by a
 *              thread; "hot" sends the next signal as soon as the last was
 *              seen, "idle" waits 2 ms first so the reader/dispatcher sleeps
 *
 * Usage: bench_bus [--quick]
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vmtrace/vmtrace.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static struct vmtrace_event sample_event(void)
{
	struct vmtrace_event ev = { .kind = VMTRACE_EV_USER, .producer = 1, .time_ns = 1 };
	ev.u.user.type = 3;
	return ev;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "bench_bus: %s: %s\n", what, strerror(err));
	exit(1);
}

/* ---- publish cost ---- */

struct burst {
	uint64_t events;
	uint64_t ns;
	pthread_barrier_t *go;
	int fd; /* -1: the bus, else a pipe */
	int retry; /* bus: yield and publish again when the ring is full */
	uint64_t full; /* publishes refused, ring full */
};

static void *publish_burst(void *arg)
{
	struct burst *b = arg;
	struct vmtrace_event ev = sample_event();

	pthread_barrier_wait(b->go);
	/* CPU time of this thread: on a shared machine wall time would count
	 * the slices other processes took */
	uint64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	if (b->fd < 0) {
		for (uint64_t i = 0; i < b->events; i++) {
			while (vmtrace_bus_publish(&ev) == -ENOSPC && b->retry) {
				b->full++;
				sched_yield();
			}
		}
	} else {
		for (uint64_t i = 0; i < b->events; i++)
			if (write(b->fd, &ev, sizeof(ev)) != sizeof(ev))
				die("pipe write", errno);
	}
	b->ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	return NULL;
}

/* ns per publish with `threads` publishers, each burst filling the empty
 * ring exactly (dispatcher stopped, so nothing is dropped and nothing else
 * touches the ring while we time it); then drained. */
static double bus_publish_ns(int threads, int rounds)
{
	uint64_t per = vmtrace_bus_capacity() / (uint64_t)threads, total_ns = 0, total = 0;
	pthread_barrier_t go;

	for (int r = 0; r < rounds; r++) {
		struct burst b[2];
		pthread_t t[2];
		pthread_barrier_init(&go, NULL, (unsigned)threads);
		for (int i = 0; i < threads; i++) {
			b[i] = (struct burst){ .events = per, .go = &go, .fd = -1 };
			pthread_create(&t[i], NULL, publish_burst, &b[i]);
		}
		for (int i = 0; i < threads; i++) {
			pthread_join(t[i], NULL);
			total_ns += b[i].ns;
			total += b[i].events;
		}
		pthread_barrier_destroy(&go);
		vmtrace_bus_start();
		vmtrace_bus_flush();
		vmtrace_bus_stop();
	}
	return (double)total_ns / (double)total;
}

/* the same with the dispatcher running and consuming concurrently; a full
 * ring makes the publisher yield and try again, so every event gets in and
 * the cost per event includes the refused attempts */
static double bus_publish_live_ns(int threads, uint64_t events, uint64_t *refused)
{
	pthread_barrier_t go;
	struct burst b[2];
	pthread_t t[2];
	uint64_t total_ns = 0;

	*refused = 0;
	vmtrace_bus_start();
	pthread_barrier_init(&go, NULL, (unsigned)threads);
	for (int i = 0; i < threads; i++) {
		b[i] = (struct burst){ .events = events, .go = &go, .fd = -1, .retry = 1 };
		pthread_create(&t[i], NULL, publish_burst, &b[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		total_ns += b[i].ns;
		*refused += b[i].full;
	}
	pthread_barrier_destroy(&go);
	vmtrace_bus_flush();
	vmtrace_bus_stop();
	return (double)total_ns / (double)(events * (uint64_t)threads);
}

static void *drain_pipe(void *arg)
{
	int fd = *(int *)arg;
	char buf[65536];
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	return NULL;
}

static double pipe_publish_ns(int threads, uint64_t events)
{
	int p[2];
	pthread_t reader, t[2];
	pthread_barrier_t go;
	struct burst b[2];
	uint64_t total_ns = 0;

	if (pipe(p))
		die("pipe", errno);
	fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
	pthread_create(&reader, NULL, drain_pipe, &p[0]);
	pthread_barrier_init(&go, NULL, (unsigned)threads);
	for (int i = 0; i < threads; i++) {
		b[i] = (struct burst){ .events = events, .go = &go, .fd = p[1] };
		pthread_create(&t[i], NULL, publish_burst, &b[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		total_ns += b[i].ns;
	}
	pthread_barrier_destroy(&go);
	close(p[1]);
	pthread_join(reader, NULL);
	close(p[0]);
	return (double)total_ns / (double)(events * (uint64_t)threads);
}

/* ---- dispatcher throughput ---- */

static _Atomic uint64_t delivered_count;
static pthread_t consumer_thread;
static _Atomic int consumer_known;

static void count_event(const struct vmtrace_event *ev, void *user)
{
	(void)ev;
	(void)user;
	if (!atomic_load_explicit(&consumer_known, memory_order_relaxed)) {
		consumer_thread = pthread_self();
		atomic_store(&consumer_known, 1);
	}
	atomic_store_explicit(&delivered_count,
			      atomic_load_explicit(&delivered_count, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

/* What one throughput window measured. The machine may be shared: besides
 * events per wall second, report events per CPU second of the consuming
 * thread (its capacity) and the cores the process got. */
struct window {
	double per_s, per_consumer_cpu_s, cores;
};

static struct window measure_window(double seconds)
{
	clockid_t consumer_clock;
	struct window w;

	while (!atomic_load(&consumer_known))
		usleep(100);
	pthread_getcpuclockid(consumer_thread, &consumer_clock);
	uint64_t c0 = atomic_load(&delivered_count), t0 = now_ns();
	uint64_t k0 = clock_ns(consumer_clock), p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	usleep((useconds_t)(seconds * 1e6));
	uint64_t c1 = atomic_load(&delivered_count), t1 = now_ns();
	uint64_t k1 = clock_ns(consumer_clock), p1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	w.per_s = (double)(c1 - c0) * 1e9 / (double)(t1 - t0);
	w.per_consumer_cpu_s = (double)(c1 - c0) * 1e9 / (double)(k1 - k0);
	w.cores = (double)(p1 - p0) / (double)(t1 - t0);
	atomic_store(&consumer_known, 0);
	return w;
}

static _Atomic int producing;

/* ---- draining a backlog ---- */

/* The subscriber both sides use: counts, and stamps the first event and
 * every 1024th, so the clock costs little per event. */
static uint64_t drain_count, drain_first, drain_last, drain_last_count;

static void drain_event(const struct vmtrace_event *ev, void *user)
{
	(void)ev;
	(void)user;
	if (drain_count == 0)
		drain_first = now_ns();
	if ((++drain_count & 1023) == 0) {
		drain_last = now_ns();
		drain_last_count = drain_count;
	}
}

static double drain_rate(void)
{
	return (double)(drain_last_count - 1) * 1e9 / (double)(drain_last - drain_first);
}

/* events/s the dispatcher delivers from a full ring (filled while it was
 * stopped), first event to last: its own speed, no producer in the way */
static double bus_drain(int rounds)
{
	double *rate = calloc((size_t)rounds, sizeof(*rate));
	struct vmtrace_event ev = sample_event();
	int id = vmtrace_bus_subscribe(VMTRACE_EV_USER, drain_event, NULL);

	for (int r = 0; r < rounds; r++) {
		for (size_t i = 0; i < vmtrace_bus_capacity(); i++)
			vmtrace_bus_publish(&ev);
		drain_count = 0;
		vmtrace_bus_start();
		vmtrace_bus_flush();
		vmtrace_bus_stop();
		rate[r] = drain_rate();
	}
	vmtrace_bus_unsubscribe(id);
	qsort(rate, (size_t)rounds, sizeof(*rate), cmp_double);
	double median = rate[rounds / 2];
	free(rate);
	return median;
}

static void *drain_pipe_events(void *arg)
{
	int fd = *(int *)arg;
	struct vmtrace_event buf[1024];
	ssize_t n;

	/* the pipe holds whole events: 64 divides the pipe's page size */
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (size_t i = 0; i < (size_t)n / sizeof(buf[0]); i++)
			drain_event(&buf[i], NULL);
	return NULL;
}

/* the same backlog in a pipe, drained by a reader thread */
static double pipe_drain(int rounds)
{
	double *rate = calloc((size_t)rounds, sizeof(*rate));
	struct vmtrace_event ev = sample_event();
	size_t events = vmtrace_bus_capacity();

	for (int r = 0; r < rounds; r++) {
		int p[2];
		pthread_t reader;
		if (pipe(p))
			die("pipe", errno);
		if (fcntl(p[1], F_SETPIPE_SZ, 1 << 20) < (int)(events * sizeof(ev)))
			die("F_SETPIPE_SZ", errno);
		for (size_t i = 0; i < events; i++)
			if (write(p[1], &ev, sizeof(ev)) != sizeof(ev))
				die("pipe write", errno);
		close(p[1]);
		drain_count = 0;
		pthread_create(&reader, NULL, drain_pipe_events, &p[0]);
		pthread_join(reader, NULL);
		close(p[0]);
		rate[r] = drain_rate();
	}
	qsort(rate, (size_t)rounds, sizeof(*rate), cmp_double);
	double median = rate[rounds / 2];
	free(rate);
	return median;
}

/* A producer that yields when the ring is full, as a host would if it
 * could: the consumer, not the drop path, sets the pace. */
static void *produce_until_stopped(void *arg)
{
	struct vmtrace_event ev = sample_event();
	(void)arg;
	while (atomic_load_explicit(&producing, memory_order_relaxed))
		for (int i = 0; i < 64; i++)
			if (vmtrace_bus_publish(&ev) == -ENOSPC)
				sched_yield();
	return NULL;
}

/* events per second delivered while one thread publishes flat out */
static struct window bus_throughput(double seconds, uint64_t *dropped_out)
{
	struct vmtrace_bus_stats s0, s1;
	pthread_t t;
	int id = vmtrace_bus_subscribe(VMTRACE_EV_USER, count_event, NULL);

	vmtrace_bus_start();
	vmtrace_bus_get_stats(&s0);
	atomic_store(&producing, 1);
	pthread_create(&t, NULL, produce_until_stopped, NULL);
	struct window w = measure_window(seconds);
	atomic_store(&producing, 0);
	pthread_join(t, NULL);
	vmtrace_bus_flush();
	vmtrace_bus_stop();
	vmtrace_bus_get_stats(&s1);
	vmtrace_bus_unsubscribe(id);
	*dropped_out = s1.dropped[VMTRACE_EV_USER] - s0.dropped[VMTRACE_EV_USER];
	return w;
}

struct pipe_reader {
	int fd;
};

static void *read_events(void *arg)
{
	struct pipe_reader *r = arg;
	struct vmtrace_event buf[1024];
	ssize_t n;
	size_t carry = 0;

	while ((n = read(r->fd, (char *)buf + carry, sizeof(buf) - carry)) > 0) {
		size_t have = carry + (size_t)n, whole = have / sizeof(buf[0]);
		for (size_t i = 0; i < whole; i++)
			count_event(&buf[i], NULL);
		carry = have % sizeof(buf[0]);
		memmove(buf, (char *)buf + whole * sizeof(buf[0]), carry);
	}
	return NULL;
}

static int pipe_w;

static void *write_until_stopped(void *arg)
{
	struct vmtrace_event ev[64];
	(void)arg;
	for (int i = 0; i < 64; i++)
		ev[i] = sample_event();
	/* one event per write: the publish API hands over one event */
	while (atomic_load_explicit(&producing, memory_order_relaxed))
		for (int i = 0; i < 64; i++)
			if (write(pipe_w, &ev[i], sizeof(ev[i])) != sizeof(ev[i]))
				die("pipe write", errno);
	return NULL;
}

static struct window pipe_throughput(double seconds)
{
	int p[2];
	struct pipe_reader r = { 0 };
	pthread_t reader, writer;

	if (pipe(p))
		die("pipe", errno);
	fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
	r.fd = p[0];
	pipe_w = p[1];
	pthread_create(&reader, NULL, read_events, &r);
	atomic_store(&producing, 1);
	pthread_create(&writer, NULL, write_until_stopped, NULL);
	struct window w = measure_window(seconds);
	atomic_store(&producing, 0);
	pthread_join(writer, NULL);
	close(p[1]);
	pthread_join(reader, NULL);
	close(p[0]);
	return w;
}

/* ---- signal latency ---- */

#define BUS_SIGNAL SIGUSR1
#define PIPE_SIGNAL SIGUSR2

static _Atomic uint64_t last_latency;
static _Atomic uint64_t seen_signals;
static int sig_pipe[2];

static void bus_signal_subscriber(const struct vmtrace_event *ev, void *user)
{
	(void)user;
	atomic_store(&last_latency, now_ns() - ev->time_ns);
	atomic_fetch_add(&seen_signals, 1);
}

static void pipe_handler(int signo)
{
	int saved = errno;
	uint64_t t = now_ns();
	(void)signo;
	if (write(sig_pipe[1], &t, sizeof(t)) != sizeof(t))
		abort();
	errno = saved;
}

static void *pipe_signal_reader(void *arg)
{
	uint64_t t;
	(void)arg;
	while (read(sig_pipe[0], &t, sizeof(t)) == sizeof(t)) {
		atomic_store(&last_latency, now_ns() - t);
		atomic_fetch_add(&seen_signals, 1);
	}
	return NULL;
}

/* median and p99 of n signals' latency; gap_ns between them */
static void signal_latency(int signo, int n, uint64_t gap_ns, double *median, double *p99)
{
	uint64_t *lat = calloc((size_t)n, sizeof(*lat));
	if (!lat)
		die("calloc", ENOMEM);
	for (int i = 0; i < n; i++) {
		if (gap_ns) {
			struct timespec ts = { 0, (long)gap_ns };
			nanosleep(&ts, NULL);
		}
		uint64_t before = atomic_load(&seen_signals);
		raise(signo);
		/* yield, not spin: on a busy machine the waiter must not hold
		 * the CPU the dispatcher or reader needs */
		while (atomic_load(&seen_signals) == before)
			sched_yield();
		lat[i] = atomic_load(&last_latency);
	}
	qsort(lat, (size_t)n, sizeof(*lat), cmp_u64);
	*median = (double)lat[n / 2];
	*p99 = (double)lat[(n * 99) / 100];
	free(lat);
}

int main(int argc, char **argv)
{
	int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
	double secs = quick ? 0.2 : 1.0;
	int rounds = quick ? 20 : 200, nsig = quick ? 200 : 2000, nidle = quick ? 50 : 300;
	uint64_t dropped1, dropped2, dropped_t;

	if (argc > 1 && !quick) {
		fprintf(stderr, "usage: bench_bus [--quick]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);

	/* warm the pages of every shard (each new thread may take another) */
	bus_publish_ns(1, 16);

	printf("bench_bus: %ld CPUs, ring of %zu events of %zu bytes\n\n", sysconf(_SC_NPROCESSORS_ONLN),
	       vmtrace_bus_capacity(), sizeof(struct vmtrace_event));
	printf("%-44s %12s %12s %8s\n", "measure", "bus", "pipe", "ratio");

	double b1 = bus_publish_ns(1, rounds), b2 = bus_publish_ns(2, rounds);
	double p1 = pipe_publish_ns(1, quick ? 20000 : 200000), p2 = pipe_publish_ns(2, quick ? 20000 : 200000);
	printf("%-44s %10.1f ns %9.1f ns %7.1fx\n", "publish, 1 thread (ns/event)", b1, p1, p1 / b1);
	printf("%-44s %10.1f ns %9.1f ns %7.1fx\n", "publish, 2 threads (ns/event per thread)", b2, p2, p2 / b2);
	double l1 = bus_publish_live_ns(1, quick ? 200000 : 2000000, &dropped1);
	double l2 = bus_publish_live_ns(2, quick ? 200000 : 2000000, &dropped2);
	uint64_t live = quick ? 200000 : 2000000;
	printf("%-44s %10.1f ns %12s %8s   (%.2f refusals per event: ring full)\n",
	       "publish, 1 thread, dispatcher consuming", l1, "", "", (double)dropped1 / (double)live);
	printf("%-44s %10.1f ns %12s %8s   (%.2f refusals per event: ring full)\n",
	       "publish, 2 threads, dispatcher consuming", l2, "", "", (double)dropped2 / (double)(2 * live));

	double bd = bus_drain(rounds / 4), pd = pipe_drain(rounds / 4);
	printf("%-44s %8.2f M/s %7.2f M/s %7.1fx\n", "dispatcher draining a backlog (median)", bd / 1e6,
	       pd / 1e6, bd / pd);
	struct window bt = bus_throughput(secs, &dropped_t), pt = pipe_throughput(secs);
	printf("%-44s %8.2f M/s %7.2f M/s %7.1fx   (bus dropped %llu while saturated)\n",
	       "delivered, 1 producer flat out (events/s)", bt.per_s / 1e6, pt.per_s / 1e6, bt.per_s / pt.per_s,
	       (unsigned long long)dropped_t);
	printf("%-44s %8.2f M/s %7.2f M/s %7.1fx\n", "  per CPU second of the consuming thread",
	       bt.per_consumer_cpu_s / 1e6, pt.per_consumer_cpu_s / 1e6,
	       bt.per_consumer_cpu_s / pt.per_consumer_cpu_s);
	printf("%-44s %8.2f %11.2f\n", "  CPU cores the process got", bt.cores, pt.cores);

	/* signals: the bus route vs. a self-pipe */
	if (pipe(sig_pipe))
		die("pipe", errno);
	pthread_t reader;
	pthread_create(&reader, NULL, pipe_signal_reader, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = pipe_handler;
	sa.sa_flags = SA_RESTART;
	sigaction(PIPE_SIGNAL, &sa, NULL);
	int err = vmtrace_signal_route(BUS_SIGNAL);
	if (err)
		die("vmtrace_signal_route", -err);
	int id = vmtrace_bus_subscribe(VMTRACE_EV_SIGNAL, bus_signal_subscriber, NULL);
	vmtrace_bus_start();

	double bm, bp, pm, pp;
	signal_latency(BUS_SIGNAL, nsig, 0, &bm, &bp);
	signal_latency(PIPE_SIGNAL, nsig, 0, &pm, &pp);
	printf("%-44s %10.0f ns %9.0f ns %7.1fx\n", "signal to subscriber, hot (median)", bm, pm, pm / bm);
	printf("%-44s %10.0f ns %9.0f ns %7.1fx\n", "signal to subscriber, hot (p99)", bp, pp, pp / bp);
	signal_latency(BUS_SIGNAL, nidle, 2000000, &bm, &bp);
	signal_latency(PIPE_SIGNAL, nidle, 2000000, &pm, &pp);
	printf("%-44s %10.0f ns %9.0f ns %7.1fx\n", "signal to subscriber, idle 2 ms (median)", bm, pm, pm / bm);
	printf("%-44s %10.0f ns %9.0f ns %7.1fx\n", "signal to subscriber, idle 2 ms (p99)", bp, pp, pp / bp);

	vmtrace_bus_stop();
	vmtrace_bus_unsubscribe(id);
	close(sig_pipe[1]);
	pthread_join(reader, NULL);
	return 0;
}
