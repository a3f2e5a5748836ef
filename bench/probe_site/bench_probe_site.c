/*
 * bench_probe_site: what an untraced vmtrace_alloc() site costs.
 *
 * Two copies of the same loop, an allocator's fast path (pick a size class,
 * pop a free-list cell, write the header, clear the first fields), one with a
 * vmtrace_alloc() site and one without, run alternately in the same process
 * many times. Reported per iteration: the median time of each and, over the
 * pairs of neighbouring runs, the median difference (the cost of one site)
 * and the median ratio.
 *
 * Untraced, the site is one load of the gate and a not-taken branch.
 * --sampled BYTES measures the site with allocation sampling in force: the
 * program sets the gates a consumer's uprobes would (object__alloc and
 * sample__armed) and the period itself. No uprobe sits on the sites, so a
 * sampled allocation reaches a nop: the figure is the countdown every
 * allocation pays; a real tracer adds one trap per BYTES allocated. With
 * --wait, the program prints `ready` and waits for SIGUSR1 before measuring,
 * so a tracer can attach first and the same table shows the traced cost.
 * --cached measures the site as vmtrace_alloc_cached() (one key cache per
 * class) instead; --batched sets the gate a batching consumer's uprobe on
 * alloc__batch would, so the site counts every allocation exactly in the
 * thread's batch (its table, or with --cached its counts by key).
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vmtrace/vmtrace.h>

#define CLASSES 8
#define SIZE_CLASSES 8
#define CELLS 4096          /* per size class: a working set that fits L2 */
#define CELL_STEP 16        /* size class k holds 32 + (k + 1) * 16 bytes */
#define CELL_BYTES(k) (32 + ((k) + 1) * CELL_STEP)
#define INIT_BYTES 32       /* the fields every new object starts with */

static const char *const class_names[CLASSES] = {
	"Point", "String", "Array", "Hash", "Float", "Node", "Range", "Symbol",
};

struct cell {
	struct cell *next;
	uint32_t klass, size;
	unsigned char body[];
};

struct pool {
	struct cell *free[SIZE_CLASSES];
	unsigned char *arena;
};

static void pool_init(struct pool *p)
{
	size_t total = 0;
	for (int k = 0; k < SIZE_CLASSES; k++)
		total += (size_t)CELLS * CELL_BYTES(k);
	p->arena = aligned_alloc(64, total);
	if (!p->arena) {
		fputs("bench_probe_site: out of memory\n", stderr);
		exit(1);
	}
	unsigned char *at = p->arena;
	for (int k = 0; k < SIZE_CLASSES; k++) {
		size_t size = CELL_BYTES(k);
		p->free[k] = NULL;
		for (int i = 0; i < CELLS; i++, at += size) {
			struct cell *c = (struct cell *)at;
			c->next = p->free[k];
			p->free[k] = c;
		}
	}
}

static inline uint64_t next_random(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The allocation fast path. The cell goes straight back to its list (a
 * collector would do that later), so the loop can run forever. */
#define ALLOC_STEP(p, rng, sum, SITE)                                          \
	do {                                                                   \
		uint64_t r = next_random(&(rng));                              \
		unsigned k = (unsigned)(r & (SIZE_CLASSES - 1));               \
		unsigned klass = (unsigned)(r >> 8) & (CLASSES - 1);           \
		uint32_t size = CELL_BYTES(k);                                 \
		struct cell *c = (p)->free[k];                                 \
		(p)->free[k] = c->next;                                        \
		c->klass = klass;                                              \
		c->size = size;                                                \
		memset(c->body, 0, INIT_BYTES);                                \
		SITE;                                                          \
		(sum) += size + c->body[0];                                    \
		c->next = (p)->free[k];                                        \
		(p)->free[k] = c;                                              \
	} while (0)

#define NO_SITE ((void)0)
#define WITH_SITE vmtrace_alloc(class_names[klass], "Bench#run", size, "bench_probe_site.c:1")
/* a runtime's inline cache beside its allocation site, one per class here */
static struct vmtrace_key_cache site_keys[CLASSES];
#define WITH_CACHED_SITE                                                       \
	vmtrace_alloc_cached(&site_keys[klass], class_names[klass], "Bench#run", size, \
			     "bench_probe_site.c:1", c)

__attribute__((noinline)) static uint64_t loop_plain(struct pool *p, uint64_t n, uint64_t seed)
{
	uint64_t rng = seed, sum = 0;
	for (uint64_t i = 0; i < n; i++)
		ALLOC_STEP(p, rng, sum, NO_SITE);
	return sum;
}

__attribute__((noinline)) static uint64_t loop_probed(struct pool *p, uint64_t n, uint64_t seed)
{
	uint64_t rng = seed, sum = 0;
	for (uint64_t i = 0; i < n; i++)
		ALLOC_STEP(p, rng, sum, WITH_SITE);
	return sum;
}

__attribute__((noinline)) static uint64_t loop_cached(struct pool *p, uint64_t n, uint64_t seed)
{
	uint64_t rng = seed, sum = 0;
	for (uint64_t i = 0; i < n; i++)
		ALLOC_STEP(p, rng, sum, WITH_CACHED_SITE);
	return sum;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static unsigned long parse_count(const char *flag, const char *s, unsigned long max)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end || end == s || *s == '-' || v == 0 || v > max) {
		fprintf(stderr, "bench_probe_site: %s: expected an integer 1..%lu, got '%s'\n", flag, max, s);
		exit(2);
	}
	return v;
}

static const char usage[] =
"Usage: bench_probe_site [--iterations N] [--repeat R] [--wait] [--cached] [--batched]\n"
"Times an allocator fast path with and without a vmtrace_alloc() site,\n"
"alternately, R times (default 41) over N iterations (default 2000000),\n"
"and prints the median ns per iteration of each and, from the paired runs,\n"
"the median difference (the cost of one site) and ratio.\n"
"  --wait   print 'ready', wait for SIGUSR1 (attach a tracer meanwhile)\n"
"  --sampled BYTES  measure with sampling in force at a mean of BYTES\n"
"                   between samples (gates set in-process, no uprobes)\n"
"  --cached         the site as vmtrace_alloc_cached(), one key cache per class\n"
"  --batched        count every allocation in the batch, as while a consumer\n"
"                   holds alloc__batch (gate set in-process, no uprobes)\n";

int main(int argc, char **argv)
{
	unsigned long iterations = 2000000, repeat = 41, sampled = 0;
	int wait = 0, cached = 0, batched = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc)
			iterations = parse_count("--iterations", argv[++i], 1000000000000ul);
		else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
			repeat = parse_count("--repeat", argv[++i], 1000);
		else if (strcmp(argv[i], "--sampled") == 0 && i + 1 < argc)
			sampled = parse_count("--sampled", argv[++i], 1ul << 40);
		else if (strcmp(argv[i], "--wait") == 0)
			wait = 1;
		else if (strcmp(argv[i], "--cached") == 0)
			cached = 1;
		else if (strcmp(argv[i], "--batched") == 0)
			batched = 1;
		else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(usage, stdout);
			return 0;
		} else {
			fprintf(stderr, "bench_probe_site: unknown or incomplete argument '%s' (see --help)\n", argv[i]);
			return 2;
		}
	}

	if (wait) {
		sigset_t set;
		int sig;
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		puts("ready");
		fflush(stdout);
		sigwait(&set, &sig);
	}

	if (sampled) {
		/* what a consumer's uprobes on object__alloc and sample__armed do */
		vmtrace_gate *gates = vmtrace__gate_table();
		gates[VMTRACE_PROBE_OBJECT_ALLOC].part.semaphore++;
		gates[VMTRACE_PROBE_SAMPLE_ARMED].part.semaphore++;
		vmtrace_sample_period = sampled;
	}

	if (batched) /* what a batching consumer's uprobe on alloc__batch does */
		vmtrace__gate_table()[VMTRACE_PROBE_ALLOC_BATCH].part.semaphore++;
	uint64_t (*loop_probed_here)(struct pool *, uint64_t, uint64_t) = cached ? loop_cached : loop_probed;

	/* stay on one CPU: a migration mid-run lands on one loop only */
	cpu_set_t cpus;
	CPU_ZERO(&cpus);
	CPU_SET(sched_getcpu(), &cpus);
	sched_setaffinity(0, sizeof(cpus), &cpus);

	struct pool pool;
	pool_init(&pool);
	double *plain = calloc(repeat, sizeof(double)), *probed = calloc(repeat, sizeof(double));
	if (!plain || !probed)
		return 1;

	/* warm the caches and the branch predictor on both loops */
	uint64_t check = loop_plain(&pool, iterations / 10, 1) + loop_probed_here(&pool, iterations / 10, 1);
	for (unsigned long r = 0; r < repeat; r++) {
		uint64_t seed = 0x9E3779B97F4A7C15ULL + r;
		/* alternate which runs first so drift hits both alike */
		for (int half = 0; half < 2; half++) {
			int do_probed = (int)((r + half) & 1);
			uint64_t t0 = now_ns();
			uint64_t sum = do_probed ? loop_probed_here(&pool, iterations, seed)
						 : loop_plain(&pool, iterations, seed);
			double ns = (double)(now_ns() - t0) / (double)iterations;
			check += sum;
			(do_probed ? probed : plain)[r] = ns;
		}
	}
	int traced = VMTRACE_ALLOC_ENABLED() ? 1 : 0;
	/* runs r of both loops were neighbours in time: their difference and
	 * ratio cancel most of what other processes do to the machine */
	double *diff = calloc(repeat, sizeof(double)), *ratio = calloc(repeat, sizeof(double));
	if (!diff || !ratio)
		return 1;
	for (unsigned long r = 0; r < repeat; r++) {
		diff[r] = probed[r] - plain[r];
		ratio[r] = probed[r] / plain[r];
	}
	double cost = median(diff, (int)repeat), rel = median(ratio, (int)repeat);
	double mp = median(plain, (int)repeat), mq = median(probed, (int)repeat);

	if (sampled)
		printf("probe site cost: %lu iterations x %lu paired runs, object__alloc "
		       "sampled every %lu bytes on average (no uprobes)\n", iterations, repeat, sampled);
	else if (batched)
		printf("probe site cost: %lu iterations x %lu paired runs, every allocation counted in "
		       "the batch (no uprobes)\n", iterations, repeat);
	else
		printf("probe site cost: %lu iterations x %lu paired runs, object__alloc %s\n",
		       iterations, repeat, traced ? "ENABLED (traced)" : "untraced");
	printf("%-26s %11s %11s %11s\n", "loop", "median ns", "min ns", "max ns");
	printf("%-26s %11.3f %11.3f %11.3f\n", "without the site", mp, plain[0], plain[repeat - 1]);
	printf("%-26s %11.3f %11.3f %11.3f\n", cached ? "with vmtrace_alloc_cached()" : "with vmtrace_alloc()",
	       mq, probed[0], probed[repeat - 1]);
	printf("site cost (median of paired runs): %+.3f ns per site, ratio %.4f (%+.2f%%)\n",
	       cost, rel, (rel - 1) * 100);
	if (!traced)
		printf("goal (within 1 ns and 5%%): %s\n",
		       cost <= 1.0 && rel <= 1.05 ? "met" : "NOT met");
	free(diff);
	free(ratio);
	printf("(checksum %llx)\n", (unsigned long long)check);
	free(plain);
	free(probed);
	free(pool.arena);
	return 0;
}
