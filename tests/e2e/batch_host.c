/*
 * batch_host.c: a host of libvmtrace for the batched path's end-to-end
 * tests (batch.sh), with threads that count and then sit idle, so their
 * counts are still in their tables when a recording ends.
 *
 * Usage: batch_host THREADS PER_THREAD [cached]
 * With "cached" the events go through vmtrace_alloc_cached and
 * vmtrace_free_cached (one key cache each, shared by the threads).
 * Prints "ready" once its threads wait. On each SIGUSR1 every thread makes
 * PER_THREAD allocations of class Batch in method Host#round (size 24) and
 * frees them, then waits again, idle; when all are done it prints
 * "round N done". SIGTERM or SIGINT: exit 0.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vmtrace/vmtrace.h>

static const char klass[] = "Batch", method[] = "Host#round";

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static unsigned round_no, done;
static unsigned long per_thread;
static int cached;
static struct vmtrace_key_cache alloc_key, free_key;

static void *worker(void *arg)
{
	unsigned seen = 0;

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&mu);
		while (round_no == seen)
			pthread_cond_wait(&cv, &mu);
		seen = round_no;
		pthread_mutex_unlock(&mu);
		for (unsigned long i = 0; i < per_thread; i++) {
			if (cached) {
				vmtrace_alloc_cached(&alloc_key, klass, method, 24, NULL, NULL);
				vmtrace_free_cached(&free_key, klass, 24, NULL);
			} else {
				vmtrace_alloc(klass, method, 24, NULL);
				vmtrace_free(klass, 24);
			}
		}
		pthread_mutex_lock(&mu);
		done++;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	sigset_t set;
	int threads, sig;

	if (argc < 3 || argc > 4 || (threads = atoi(argv[1])) < 1 || threads > 256 ||
	    (per_thread = strtoul(argv[2], NULL, 10)) == 0 ||
	    (argc == 4 && strcmp(argv[3], "cached") != 0)) {
		fprintf(stderr, "usage: batch_host THREADS(1-256) PER_THREAD(>0) [cached]\n");
		return 2;
	}
	cached = argc == 4;
	/* the signals come to sigwait only, never to a worker */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	for (int i = 0; i < threads; i++) {
		pthread_t t;

		if (pthread_create(&t, NULL, worker, NULL) != 0) {
			fprintf(stderr, "batch_host: pthread_create failed\n");
			return 1;
		}
	}
	printf("ready\n");
	fflush(stdout);
	while (sigwait(&set, &sig) == 0 && sig == SIGUSR1) {
		pthread_mutex_lock(&mu);
		done = 0;
		round_no++;
		pthread_cond_broadcast(&cv);
		while (done < (unsigned)threads)
			pthread_cond_wait(&cv, &mu);
		printf("round %u done\n", round_no);
		fflush(stdout);
		pthread_mutex_unlock(&mu);
	}
	return 0;
}
