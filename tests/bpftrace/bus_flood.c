/*
 * bus_flood: overflows libvmtrace's in-process bus on purpose, so the
 * bus__dropped probe fires a known number of times.
 *
 * One subscriber takes the first event and then blocks until every event has
 * been published, so the ring fills and the rest are dropped. The truth is
 * what vmtrace_bus_publish() returned (-ENOSPC per drop), per event kind, and
 * the library's own per-kind drop counters; the two must agree.
 *
 * Usage: bus_flood [--wait] [--truth FILE] [--events N]
 *   --wait      print "ready" and wait for SIGUSR1 before flooding
 *   --truth     write {"dropped": [{"kind": NAME, "count": N}, ...]} to FILE
 *   --events N  events to publish, alternately of kind user and gc_begin
 *               (default 3 x the ring's capacity)
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vmtrace/vmtrace.h>

static atomic_int published_all;

/* Hold the dispatcher until the flood is over: everything past the ring's
 * capacity must be dropped. */
static void hold(const struct vmtrace_event *ev, void *user)
{
	(void)ev;
	(void)user;
	while (!atomic_load(&published_all))
		;
}

static int usage(const char *why)
{
	fprintf(stderr, "bus_flood: %s\nusage: bus_flood [--wait] [--truth FILE] [--events N]\n", why);
	return 2;
}

int main(int argc, char **argv)
{
	static const uint32_t kinds[] = { VMTRACE_EV_USER, VMTRACE_EV_GC_BEGIN };
	uint64_t events = 3 * vmtrace_bus_capacity(), refused[VMTRACE_EV__COUNT] = { 0 };
	const char *truth = NULL;
	int wait = 0, err;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--wait") == 0) {
			wait = 1;
		} else if (strcmp(argv[i], "--truth") == 0 && i + 1 < argc) {
			truth = argv[++i];
		} else if (strcmp(argv[i], "--events") == 0 && i + 1 < argc) {
			char *end;
			errno = 0;
			events = strtoull(argv[++i], &end, 10);
			if (errno || *end || end == argv[i] || argv[i][0] == '-' || events == 0)
				return usage("--events: expected a count >= 1");
		} else {
			return usage("unknown or incomplete option");
		}
	}

	/* blocked before the dispatcher thread exists, so it inherits the mask
	 * and SIGUSR1 reaches only sigwait() */
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		err = vmtrace_bus_subscribe(kinds[k], hold, NULL);
		if (err < 0) {
			fprintf(stderr, "bus_flood: cannot subscribe: %s\n", strerror(-err));
			return 1;
		}
	}
	err = vmtrace_bus_start();
	if (err < 0) {
		fprintf(stderr, "bus_flood: cannot start the bus: %s\n", strerror(-err));
		return 1;
	}

	if (wait) {
		int sig;
		fputs("ready\n", stdout);
		fflush(stdout);
		if (sigwait(&usr1, &sig) != 0)
			return 1;
	}

	for (uint64_t i = 0; i < events; i++) {
		struct vmtrace_event ev = { .kind = kinds[i % 2] };
		err = vmtrace_bus_publish(&ev);
		if (err == -ENOSPC) {
			refused[ev.kind]++;
		} else if (err < 0) {
			fprintf(stderr, "bus_flood: publish: %s\n", strerror(-err));
			return 1;
		}
	}
	atomic_store(&published_all, 1);
	vmtrace_bus_flush();
	vmtrace_bus_stop();

	struct vmtrace_bus_stats stats;
	vmtrace_bus_get_stats(&stats);
	for (uint32_t k = 0; k < VMTRACE_EV__COUNT; k++) {
		if (stats.dropped[k] != refused[k]) {
			fprintf(stderr, "bus_flood: %s: %llu publishes refused, the bus counted %llu drops\n",
				vmtrace_event_kind_name(k), (unsigned long long)refused[k],
				(unsigned long long)stats.dropped[k]);
			return 1;
		}
	}
	if (refused[VMTRACE_EV_USER] == 0 || refused[VMTRACE_EV_GC_BEGIN] == 0) {
		fputs("bus_flood: the ring never filled\n", stderr);
		return 1;
	}

	if (truth) {
		FILE *f = fopen(truth, "w");
		if (!f) {
			fprintf(stderr, "bus_flood: cannot write %s: %s\n", truth, strerror(errno));
			return 1;
		}
		fputs("{\"dropped\": [", f);
		const char *sep = "";
		for (uint32_t k = 0; k < VMTRACE_EV__COUNT; k++) {
			if (!refused[k])
				continue;
			fprintf(f, "%s{\"kind\": \"%s\", \"count\": %llu}", sep, vmtrace_event_kind_name(k),
				(unsigned long long)refused[k]);
			sep = ", ";
		}
		fputs("]}\n", f);
		if (fclose(f) != 0) {
			fprintf(stderr, "bus_flood: cannot write %s: %s\n", truth, strerror(errno));
			return 1;
		}
	}
	return 0;
}
