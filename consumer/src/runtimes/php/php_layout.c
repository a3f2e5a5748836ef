/*
 * php_layout.c: the Zend engine's layout per PHP version (php_layout.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtimes/adapter.h"
#include "runtimes/php/php_layout.h"
#include "runtimes/php/php_layout_rows.h"

#define SCAN_MAX (64 << 20) /* the most of a php binary read for its build id */
#define SCAN_CHUNK (1 << 20)

/* "API" 8 digits "," and "NTS" or "TS", in buf: the API version, *ts set
 * for a thread-safe build; 0 when none. */
static int build_id(const char *buf, size_t n, int *ts)
{
	for (const char *p = buf; (p = memmem(p, n - (size_t)(p - buf), "API", 3)); p++) {
		size_t left = n - (size_t)(p - buf);
		int api = 0, i;

		if (left < 3 + 8 + 3)
			break;
		for (i = 3; i < 11 && p[i] >= '0' && p[i] <= '9'; i++)
			api = api * 10 + (p[i] - '0');
		if (i != 11 || p[11] != ',')
			continue;
		if (left >= 15 && !memcmp(p + 12, "NTS", 3)) {
			*ts = 0;
			return api;
		}
		if (!memcmp(p + 12, "TS", 2)) {
			*ts = 1;
			return api;
		}
	}
	return 0;
}

/* The build id of the file at path, read in bounded chunks (each
 * overlapping the last by the id's length). */
static int read_build_id(const char *path, int *ts)
{
	char *buf = malloc(SCAN_CHUNK + 16);
	size_t keep = 0, total = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), api = 0;

	if (!buf || fd < 0) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while (!api && total < SCAN_MAX) {
		ssize_t r = read(fd, buf + keep, SCAN_CHUNK);
		size_t n;

		if (r <= 0)
			break;
		total += (size_t)r;
		n = keep + (size_t)r;
		api = build_id(buf, n, ts);
		keep = n < 16 ? n : 16;
		memmove(buf, buf + n - keep, keep);
	}
	free(buf);
	close(fd);
	return api;
}

int vt_php_layout_of(const char *path, struct vt_php_layout *l, char *err, size_t errlen)
{
	uint64_t eg, objects_new, std_init, off;
	int ts = 0, api;

	if (vt_elf_symbol(path, "executor_globals", &eg, &off) ||
	    vt_elf_symbol(path, "zend_objects_new", &objects_new, &off) ||
	    vt_elf_symbol(path, "zend_object_std_init", &std_init, &off)) {
		snprintf(err, errlen, "%s exports no Zend engine (executor_globals, zend_objects_new)", path);
		return -ENOENT;
	}
	api = read_build_id(path, &ts);
	if (ts) {
		snprintf(err, errlen, "%s is a thread-safe PHP build (API %d,TS): its executor's globals "
			 "are per thread, which vmtrace does not read", path, api);
		return -ENOTSUP;
	}
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		if (rows[i].api != api)
			continue;
		*l = *rows[i].l;
		l->api = (uint32_t)api;
		l->eg_vaddr = eg;
		l->objects_new_vaddr = objects_new;
		l->std_init_vaddr = std_init;
		return 0;
	}
	snprintf(err, errlen, "%s is a PHP of extension API %d, whose layout vmtrace has no row for "
		 "(known: 8.2, 8.4)", path, api);
	return -ENOTSUP;
}

/* Whether probes hold php probes of the file at exe itself (a PHP built
 * with DTrace), rather than of an extension. */
static bool own_probes(const char *exe, const struct vt_usdt_list *probes)
{
	struct stat a, b;

	if (stat(exe, &a))
		return false;
	for (size_t i = 0; i < probes->n; i++)
		if (probes->v[i].provider && !strcmp(probes->v[i].provider, "php") && probes->v[i].path &&
		    !stat(probes->v[i].path, &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			return true;
	return false;
}

int vt_php_claim(const char *exe, struct vt_usdt_list *probes)
{
	struct vt_php_layout l;
	struct vt_usdt_probe p = { 0 };
	char err[256];

	if (!exe || own_probes(exe, probes) || vt_usdt_probe_path(probes, "php", VT_PHP_EXPORTS_PROBE) ||
	    vt_php_layout_of(exe, &l, err, sizeof(err)))
		return 0;
	p.provider = strdup("php");
	p.name = strdup(VT_PHP_EXPORTS_PROBE);
	p.args = strdup("");
	p.path = strdup(exe);
	if (!p.provider || !p.name || !p.args || !p.path || vt_usdt_list_take(probes, &p)) {
		free(p.provider);
		free(p.name);
		free(p.args);
		free(p.path);
		return 0;
	}
	return 1;
}
