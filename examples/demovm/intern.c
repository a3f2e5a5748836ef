/* intern.c: the process-lifetime name table (see intern.h). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intern.h"

#define INTERN_BUCKETS 256

struct interned {
	struct interned *next;
	char name[];
};

static struct interned *buckets[INTERN_BUCKETS];
static pthread_mutex_t intern_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned hash_name(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h % INTERN_BUCKETS;
}

const char *intern(const char *s)
{
	unsigned b = hash_name(s);
	struct interned *e;

	pthread_mutex_lock(&intern_lock);
	for (e = buckets[b]; e; e = e->next)
		if (strcmp(e->name, s) == 0)
			goto out;
	size_t len = strlen(s);
	e = malloc(sizeof(*e) + len + 1);
	if (!e) {
		fputs("demovm: out of memory interning a name\n", stderr);
		abort();
	}
	memcpy(e->name, s, len + 1);
	e->next = buckets[b];
	buckets[b] = e;
out:
	pthread_mutex_unlock(&intern_lock);
	return e->name;
}

const char *intern_site(const char *file, int line)
{
	const char *base = strrchr(file, '/');
	char buf[256];

	snprintf(buf, sizeof(buf), "%s:%d", base ? base + 1 : file, line);
	return intern(buf);
}
