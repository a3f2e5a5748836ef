/*
 * demovm: a small object runtime that embeds libvmtrace.
 *
 * main.c parses the flags, boots the runtime, routes the workload's signal
 * through the vmtrace bus, runs one worker thread per --threads, stops them
 * on --ops, --duration, SIGINT or SIGTERM, and writes the truth file.
 *
 * Signals. SIGINT, SIGTERM and SIGUSR1 are blocked in every thread and taken
 * by the main thread with sigtimedwait, so no handler races with the
 * workers. SIGUSR2 (the workload's own signal) goes through
 * vmtrace_signal_route: its handler only publishes onto the bus, and a bus
 * subscriber counts it on the dispatcher thread; that count is the truth's.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vmtrace/vmtrace.h>

#include "workload.h"

#define MAX_THREADS 64

struct options {
	double duration;      /* seconds; 0 = until SIGINT/SIGTERM */
	int duration_set;
	uint64_t ops;         /* per thread; 0 = unbounded */
	int ops_set;
	unsigned threads;
	uint64_t seed;
	int wait;
	const char *truth;
	enum workload_kind workload;
	int quiet;
	const char *statsd;   /* HOST:PORT, or NULL */
	unsigned profile_hz;  /* 0 = no profiler */
	uint64_t leak;        /* Sessions each thread leaks (--leak) */
	int leak_set;
};

static const char usage[] =
"Usage: demovm [OPTIONS]\n"
"A small object runtime embedding libvmtrace: classes, cached method dispatch,\n"
"a constant cache, a mark-sweep GC and signals routed through the vmtrace bus,\n"
"running a seeded, deterministic workload. It keeps its own count of what it\n"
"did (the truth) and can write it as JSON.\n"
"\n"
"  --ops N           run N workload iterations per thread, then exit\n"
"                    (default 5000 when --duration is not given)\n"
"  --duration SECS   run for SECS seconds (fractions allowed); 0 = until\n"
"                    SIGINT or SIGTERM. With --ops too, whichever ends first\n"
"  --threads N       worker threads, 1..64 (default 1); thread i runs seed + i\n"
"  --seed N          workload seed (default 1)\n"
"  --workload KIND   mixed (default: every method and event) or alloc\n"
"                    (allocation-heavy churn, for benchmarks: 4 MiB young\n"
"                    generation, cache resets and signals 64x rarer)\n"
"  --wait            after start-up print 'ready' on stdout and wait for\n"
"                    SIGUSR1 before running, so a tracer can attach first\n"
"  --truth FILE      at exit write the truth (allocations per class and\n"
"                    method, frees, cache resets, serial increments, GCs,\n"
"                    signals received, objects alive at the end) to FILE\n"
"                    as JSON\n"
"  --leak N          each thread leaks N Session objects from\n"
"                    Registry#remember (one per op) while the rest churn,\n"
"                    and ends with a major collection, so what is alive at\n"
"                    the end is what the roots reach: --leak 0 is the same\n"
"                    run without the leak\n"
"  --uncached        report allocations and frees through libvmtrace's plain\n"
"                    calls, not its cached keys and words (to compare)\n"
"  --quiet           no summary on stderr\n"
"  --statsd HOST:PORT  send counters and timings to statsd over UDP\n"
"  --profile HZ      sample stacks HZ times per CPU second; print the top\n"
"                    backtraces on stderr at exit\n"
"  -h, --help        this text\n"
"\n"
"SIGINT or SIGTERM ends a run cleanly: the truth is written and the exit\n"
"status is 0. Bad flags exit with status 2.\n"
"\n"
"Examples:\n"
"  demovm --ops 2000 --threads 2 --truth truth.json\n"
"  demovm --threads 2 --duration 0 --wait   # then attach, then kill -USR1\n";

static void bad_flag(const char *flag, const char *value, const char *expected)
{
	fprintf(stderr, "demovm: %s: expected %s, got '%s'\n", flag, expected, value);
	exit(2);
}

static uint64_t parse_u64(const char *flag, const char *s, uint64_t min, uint64_t max,
			  const char *expected)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (*s == '-' || *s == '\0')
		bad_flag(flag, s, expected);
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		bad_flag(flag, s, expected);
	return v;
}

static void parse_options(int argc, char **argv, struct options *o)
{
	enum { OPT_OPS = 256, OPT_DURATION, OPT_THREADS, OPT_SEED, OPT_WAIT, OPT_TRUTH,
	       OPT_WORKLOAD, OPT_QUIET, OPT_STATSD, OPT_PROFILE, OPT_LEAK, OPT_UNCACHED };
	static const struct option longs[] = {
		{ "ops", required_argument, NULL, OPT_OPS },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "wait", no_argument, NULL, OPT_WAIT },
		{ "truth", required_argument, NULL, OPT_TRUTH },
		{ "workload", required_argument, NULL, OPT_WORKLOAD },
		{ "quiet", no_argument, NULL, OPT_QUIET },
		{ "uncached", no_argument, NULL, OPT_UNCACHED },
		{ "statsd", required_argument, NULL, OPT_STATSD },
		{ "profile", required_argument, NULL, OPT_PROFILE },
		{ "leak", required_argument, NULL, OPT_LEAK },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct options){ .threads = 1, .seed = 1, .workload = WORKLOAD_MIXED };
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longs, NULL)) != -1) {
		switch (c) {
		case OPT_OPS:
			o->ops = parse_u64("--ops", optarg, 1, UINT64_MAX / 2, "a number of iterations >= 1");
			o->ops_set = 1;
			break;
		case OPT_DURATION: {
			char *end;
			errno = 0;
			o->duration = strtod(optarg, &end);
			if (errno || *end || end == optarg || !(o->duration >= 0) || o->duration > 1e9)
				bad_flag("--duration", optarg, "seconds >= 0");
			o->duration_set = 1;
			break;
		}
		case OPT_THREADS:
			o->threads = (unsigned)parse_u64("--threads", optarg, 1, MAX_THREADS, "a thread count 1..64");
			break;
		case OPT_SEED:
			o->seed = parse_u64("--seed", optarg, 0, UINT64_MAX, "an unsigned integer");
			break;
		case OPT_WAIT:
			o->wait = 1;
			break;
		case OPT_TRUTH:
			if (!*optarg)
				bad_flag("--truth", optarg, "a file name");
			o->truth = optarg;
			break;
		case OPT_WORKLOAD:
			if (strcmp(optarg, "mixed") == 0)
				o->workload = WORKLOAD_MIXED;
			else if (strcmp(optarg, "alloc") == 0)
				o->workload = WORKLOAD_ALLOC;
			else
				bad_flag("--workload", optarg, "mixed or alloc");
			break;
		case OPT_UNCACHED:
			vm_key_caches = 0;
			break;
		case OPT_QUIET:
			o->quiet = 1;
			break;
		case OPT_STATSD:
			o->statsd = optarg;
			break;
		case OPT_PROFILE:
			o->profile_hz = (unsigned)parse_u64("--profile", optarg, 1, 100000, "a rate 1..100000 Hz");
			break;
		case OPT_LEAK:
			o->leak = parse_u64("--leak", optarg, 0, UINT64_MAX / 2, "a number of objects >= 0");
			o->leak_set = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		case ':':
			fprintf(stderr, "demovm: %s needs a value (see --help)\n", argv[optind - 1]);
			exit(2);
		default:
			fprintf(stderr, "demovm: unknown option '%s' (see --help)\n", argv[optind - 1]);
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "demovm: unexpected argument '%s' (see --help)\n", argv[optind]);
		exit(2);
	}
	if (!o->ops_set && !o->duration_set) {
		o->ops = 5000;
		o->ops_set = 1;
	}
}

/* ---- signals counted by the bus subscriber ---- */

static uint64_t signals_delivered[VM_SIGNAL_MAX];

static void count_signal(const struct vmtrace_event *ev, void *user)
{
	(void)user;
	int signo = ev->u.signal.signo;
	if (signo > 0 && signo < VM_SIGNAL_MAX)
		__atomic_add_fetch(&signals_delivered[signo], 1, __ATOMIC_RELAXED);
}

/* ---- workers ---- */

struct worker {
	pthread_t thread;
	struct vm_thread *vm;
	const struct options *opt;
	double cpu_s;         /* the worker's CPU time: steadier than wall time on a shared machine */
};

static int stop_requested;
static unsigned workers_done;

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct vm_thread *t = w->vm;

	vmtrace_profile_thread_register(); /* lets --profile walk this stack */
	vmtrace_frames_thread((void *const *)&t->frame); /* lets --stack vm walk its VM stack */
	while (!__atomic_load_n(&stop_requested, __ATOMIC_RELAXED)) {
		if (w->opt->ops_set && t->ops >= w->opt->ops)
			break;
		workload_op(t, w->opt->workload);
	}
	/* with --leak only what the roots reach stays: the garbage of the
	 * last cycle would differ between runs that leak and runs that do not */
	if (w->opt->leak_set)
		vm_gc_full(t);
	heap_count_live(t);
	struct timespec cpu;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
	w->cpu_s = (double)cpu.tv_sec + cpu.tv_nsec / 1e9;
	__atomic_add_fetch(&workers_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Wait for the workers to finish or for a reason to stop them. */
static void supervise(const struct options *o, const sigset_t *control)
{
	double end = o->duration_set && o->duration > 0 ? now_s() + o->duration : 0;
	struct timespec tick = { 0, 20 * 1000 * 1000 };

	while (__atomic_load_n(&workers_done, __ATOMIC_ACQUIRE) < o->threads) {
		int sig = sigtimedwait(control, NULL, &tick);
		if (sig == SIGINT || sig == SIGTERM)
			break;
		if (end && now_s() >= end)
			break;
	}
	__atomic_store_n(&stop_requested, 1, __ATOMIC_RELAXED);
}

/* --wait: 1 to run, 0 when SIGINT/SIGTERM came first. */
static int wait_for_go(const sigset_t *control)
{
	int sig;

	fputs("ready\n", stdout);
	fflush(stdout);
	do {
		if (sigwait(control, &sig) != 0)
			return 0;
	} while (sig != SIGUSR1 && sig != SIGINT && sig != SIGTERM);
	return sig == SIGUSR1;
}

static void summary(const struct options *o, const struct truth *total, struct worker *w,
		    uint64_t raised, double seconds)
{
	uint64_t abytes, fbytes, ops = 0, pause = 0, pause_max = 0;
	double cpu = 0;
	uint64_t allocs = truth_total_allocs(total, &abytes);
	uint64_t frees = truth_total_frees(total, &fbytes);
	uint64_t delivered = total->signals[WORKLOAD_SIGNAL];

	for (unsigned i = 0; i < o->threads; i++) {
		ops += w[i].vm->ops;
		cpu += w[i].cpu_s;
		pause += w[i].vm->heap.pause_ns_total;
		if (w[i].vm->heap.pause_ns_max > pause_max)
			pause_max = w[i].vm->heap.pause_ns_max;
	}
	fprintf(stderr,
		"demovm: %" PRIu64 " ops on %u thread(s) in %.3f s (seed %" PRIu64 "), workers' cpu %.3f s\n"
		"  allocations %" PRIu64 " (%" PRIu64 " bytes), frees %" PRIu64 " (%" PRIu64 " bytes)\n"
		"  gc: %" PRIu64 " minor, %" PRIu64 " major, pauses %.3f ms total, %.3f ms max\n"
		"  global serial %" PRIu64 ", signals raised %" PRIu64 ", delivered by the bus %" PRIu64 "\n",
		ops, o->threads, seconds, o->seed, cpu, allocs, abytes, frees, fbytes,
		total->gc_minor, total->gc_major, pause / 1e6, pause_max / 1e6,
		vm_global_serial(), raised, delivered);
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "demovm: %s: %s\n", what, strerror(err));
	return 1;
}

int main(int argc, char **argv)
{
	struct options opt;
	sigset_t control;
	int err, run = 1;

	parse_options(argc, argv, &opt);

	/* Before any thread exists (the bus dispatcher included), so every
	 * thread inherits the mask and only sigtimedwait takes these. */
	sigemptyset(&control);
	sigaddset(&control, SIGINT);
	sigaddset(&control, SIGTERM);
	sigaddset(&control, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &control, NULL);

	workload_boot();

	err = vmtrace_bus_subscribe(VMTRACE_EV_SIGNAL, count_signal, NULL);
	if (err < 0)
		return fail("cannot subscribe to signal events", -err);
	err = vmtrace_signal_route(WORKLOAD_SIGNAL);
	if (err < 0)
		return fail("cannot route SIGUSR2 through the bus", -err);
	err = vmtrace_bus_start();
	if (err < 0)
		return fail("cannot start the bus", -err);
	if (opt.statsd && (err = vmtrace_statsd_start(opt.statsd, "demovm", 1000)) < 0) {
		if (err == -EINVAL)
			bad_flag("--statsd", opt.statsd, "HOST:PORT");
		return fail("cannot start statsd", -err);
	}
	if (opt.profile_hz && (err = vmtrace_profile_start(opt.profile_hz, NULL, NULL)) < 0)
		return fail("cannot start the profiler", -err);

	struct worker *workers = calloc(opt.threads, sizeof(*workers));
	if (!workers)
		return fail("cannot allocate workers", ENOMEM);
	for (unsigned i = 0; i < opt.threads; i++) {
		workers[i].vm = calloc(1, sizeof(struct vm_thread));
		if (!workers[i].vm)
			return fail("cannot allocate a VM thread", ENOMEM);
		workers[i].opt = &opt;
		workload_thread_init(workers[i].vm, i, opt.seed, opt.workload);
		workers[i].vm->leak_left = opt.leak;
	}

	if (opt.wait)
		run = wait_for_go(&control);

	double start = now_s();
	unsigned started = 0;
	if (run) {
		for (; started < opt.threads; started++) {
			err = pthread_create(&workers[started].thread, NULL, worker_main, &workers[started]);
			if (err) {
				fail("cannot start a worker thread", err);
				__atomic_store_n(&stop_requested, 1, __ATOMIC_RELAXED);
				break;
			}
		}
		if (started == opt.threads)
			supervise(&opt, &control);
	}
	for (unsigned i = 0; i < started; i++)
		pthread_join(workers[i].thread, NULL);
	double seconds = now_s() - start;

	/* every signal raised has been published; count what the bus delivers */
	err = vmtrace_bus_flush();
	if (err < 0)
		fail("cannot flush the bus", -err);
	if (opt.profile_hz)
		vmtrace_profile_stop();
	if (opt.statsd)
		vmtrace_statsd_stop();
	vmtrace_bus_stop();
	if (opt.profile_hz && (err = vmtrace_profile_write_top(stderr, 10, 8)) < 0)
		fail("cannot print the profile", -err);

	struct truth *total = calloc(1, sizeof(*total));
	if (!total)
		return fail("cannot allocate the truth", ENOMEM);
	uint64_t raised = 0;
	for (unsigned i = 0; i < opt.threads; i++) {
		truth_merge(total, &workers[i].vm->truth);
		raised += workers[i].vm->signals_raised;
	}
	for (unsigned s = 0; s < VM_SIGNAL_MAX; s++)
		total->signals[s] = __atomic_load_n(&signals_delivered[s], __ATOMIC_RELAXED);

	struct vm_paths **paths = calloc(opt.threads, sizeof(*paths));
	if (!paths)
		return fail("cannot allocate the truth", ENOMEM);
	for (unsigned i = 0; i < opt.threads; i++)
		paths[i] = &workers[i].vm->paths;
	struct truth_run info = { .seed = opt.seed, .ops = opt.ops_set ? opt.ops : 0,
				  .threads = opt.threads, .global_serial = vm_global_serial(),
				  .paths = paths };
	int status = started == opt.threads || !run ? 0 : 1;
	if (opt.truth) {
		err = truth_write(opt.truth, total, &info);
		if (err < 0) {
			fprintf(stderr, "demovm: cannot write %s: %s\n", opt.truth, strerror(-err));
			status = 1;
		}
	}
	if (!opt.quiet)
		summary(&opt, total, workers, raised, seconds);
	if (total->signals[WORKLOAD_SIGNAL] < raised)
		fprintf(stderr, "demovm: the bus delivered %" PRIu64 " of %" PRIu64 " SIGUSR2 raised (dropped or lost)\n",
			total->signals[WORKLOAD_SIGNAL], raised);

	for (unsigned i = 0; i < opt.threads; i++) {
		workload_thread_fini(workers[i].vm);
		free(workers[i].vm);
	}
	free(workers);
	free(total);
	free(paths);
	return status;
}
