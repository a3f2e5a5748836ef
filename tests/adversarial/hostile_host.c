/*
 * hostile_host.c: a host of libvmtrace that behaves as the awkward programs
 * vmtrace meets do, for the adversarial tests (adversarial.sh).
 *
 * Usage: hostile_host [--marker FILE] [--pidfile FILE] MODE
 *   --marker FILE   create FILE first thing (proves the program ran)
 *   --pidfile FILE  write the pid to FILE
 * Modes:
 *   --ignore-term   ignore SIGTERM and allocate until killed (a daemon)
 *   --exit N        allocate 10 objects and exit with status N
 *   --thread        start a thread, print "tid N pid P", allocate until killed
 *   --names L,...   allocate once per length L with a class name of L bytes
 *                   ("N" then '0'..'9' repeated), then exit at once
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <vmtrace/vmtrace.h>

static void nap(void)
{
	struct timespec ts = { 0, 1000000 };

	nanosleep(&ts, NULL);
}

static void allocate_forever(const char *method)
{
	for (;;) {
		vmtrace_alloc("Hostile", method, 32, NULL);
		nap();
	}
}

static void *thread_main(void *arg)
{
	(void)arg;
	printf("tid %ld pid %ld\n", (long)syscall(SYS_gettid), (long)getpid());
	fflush(stdout);
	allocate_forever("Thread#run");
	return NULL;
}

/* A name of len bytes, kept for the life of the process (interned). */
static const char *long_name(size_t len)
{
	char *s = malloc(len + 1);

	if (!s)
		exit(1);
	for (size_t i = 0; i < len; i++)
		s[i] = i == 0 ? 'N' : (char)('0' + i % 10);
	s[len] = '\0';
	return s;
}

int main(int argc, char **argv)
{
	int i = 1;

	for (; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--marker")) {
			int fd = open(argv[i + 1], O_WRONLY | O_CREAT | O_TRUNC, 0644);

			if (fd >= 0)
				close(fd);
		} else if (!strcmp(argv[i], "--pidfile")) {
			FILE *f = fopen(argv[i + 1], "w");

			if (f) {
				fprintf(f, "%ld\n", (long)getpid());
				fclose(f);
			}
		} else {
			break;
		}
	}
	if (i >= argc)
		goto usage;
	if (!strcmp(argv[i], "--ignore-term")) {
		signal(SIGTERM, SIG_IGN);
		allocate_forever("Daemon#serve");
	}
	if (!strcmp(argv[i], "--exit") && i + 1 < argc) {
		for (int k = 0; k < 10; k++)
			vmtrace_alloc("Hostile", "Main#exit", 16, NULL);
		return atoi(argv[i + 1]);
	}
	if (!strcmp(argv[i], "--thread")) {
		pthread_t t;

		if (pthread_create(&t, NULL, thread_main, NULL))
			return 1;
		allocate_forever("Main#wait");
	}
	if (!strcmp(argv[i], "--names") && i + 1 < argc) {
		for (char *len = strtok(argv[i + 1], ","); len; len = strtok(NULL, ","))
			vmtrace_alloc(long_name(strtoul(len, NULL, 10)), "Names#long", 8, NULL);
		return 0;
	}
usage:
	fprintf(stderr, "usage: hostile_host [--marker F] [--pidfile F] "
		"--ignore-term | --exit N | --thread | --names L,...\n");
	return 2;
}
