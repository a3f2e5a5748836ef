/*
 * record_write.c: a vt_profile written to disk (docs/record-format.md).
 *
 * A record is text, one item per line: a magic line with the format
 * version, then "key field field ..." lines, then "end N" with the number of
 * item lines, so a truncated file never reads as a shorter recording.
 * Strings start with '=' (so "" is "=") and escape as %XX every byte that
 * is not printable ASCII, and '%' itself: names may hold any byte but NUL.
 * Doubles are written with %a, so they read back bit for bit.
 *
 * Writing goes to a temporary file in the destination's directory, is
 * fsynced, then renamed into place; without force the rename refuses to
 * replace an existing file (RENAME_NOREPLACE, or link() where the file
 * system lacks it), so two recorders never overwrite each other.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "profile/profile.h"
#include "record/record_format.h"

/* The non-empty buckets of a log2 histogram as ` B:COUNT` fields. */
static void put_hist(FILE *f, const uint64_t hist[VT_HIST_BUCKETS])
{
	for (int b = 0; b < VT_HIST_BUCKETS; b++)
		if (hist[b])
			fprintf(f, " %d:%" PRIu64, b, hist[b]);
}

static void put_str(FILE *f, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	const unsigned char *c = (const unsigned char *)(s ? s : ""), *plain = c;

	fputs(" =", f);
	/* runs of plain bytes in one write: a recording with stacks holds
	 * millions of frame names */
	for (; *c; c++) {
		if (*c > 0x20 && *c < 0x7f && *c != '%')
			continue;
		fwrite(plain, 1, (size_t)(c - plain), f);
		fputc('%', f);
		fputc(hex[*c >> 4], f);
		fputc(hex[*c & 15], f);
		plain = c + 1;
	}
	fwrite(plain, 1, (size_t)(c - plain), f);
}

/* " N" for an integer, or " #N" with mark '#', at b: past its end. A
 * recording with stacks holds millions of them, so a stack's line is made
 * in memory and written at once. */
static char *put_int_marked(char *b, int64_t v, char mark)
{
	char digits[24], *e = digits + sizeof(digits), *d = e;
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;

	do
		*--d = (char)('0' + u % 10);
	while (u /= 10);
	*b++ = ' ';
	if (mark)
		*b++ = mark;
	if (v < 0)
		*b++ = '-';
	memcpy(b, d, (size_t)(e - d));
	return b + (e - d);
}

/* A frame's text into the line being made at b: " #N", the text line N,
 * or, when the table has no number for it, the text itself (the line so
 * far written first). Where the line goes on. */
static char *put_text(FILE *f, char *line, char *b, const struct vt_stack_table *t, const char *text)
{
	int64_t n = vt_stack_table_text_number(t, text);

	if (n >= 0)
		return put_int_marked(b, n + 1, '#');
	fwrite(line, 1, (size_t)(b - line), f);
	put_str(f, text);
	return line;
}

/* One stack's line, made in memory and written in a few calls. */
static void put_stack(FILE *f, const struct vt_stack_table *t, const struct vt_stack *s)
{
	enum { FRAME_MAX = 3 * 22 }; /* a frame's two numbers and line at most */
	char line[4096], *b = line;

	b += snprintf(b, 32, "stack %d %" PRIu32, s->cut ? 1 : 0, s->depth);
	for (uint32_t k = 0; k < s->depth; k++) {
		if (line + sizeof(line) - b < FRAME_MAX) {
			fwrite(line, 1, (size_t)(b - line), f);
			b = line;
		}
		b = put_text(f, line, b, t, s->frames[k].name);
		b = put_text(f, line, b, t, s->frames[k].file);
		b = put_int_marked(b, s->frames[k].line, 0);
	}
	*b++ = '\n';
	fwrite(line, 1, (size_t)(b - line), f);
}

/* One line per keyed count: tag, its name (and name2 for two-name keys),
 * the count. Returns how many. */
static unsigned long put_keyed(FILE *f, const char *tag, const struct vt_keyed_count *v,
			       size_t n, bool two_names)
{
	for (size_t i = 0; i < n; i++) {
		fputs(tag, f);
		put_str(f, v[i].name);
		if (two_names)
			put_str(f, v[i].name2);
		fprintf(f, " %" PRIu64 "\n", v[i].count);
	}
	return n;
}

/* Writes every item line; returns how many. */
static unsigned long write_items(FILE *f, const struct vt_profile *p)
{
	unsigned long lines = 0;

	fputs("runtime", f), put_str(f, p->runtime), fputc('\n', f), lines++;
	fputs("probes", f), put_str(f, p->probes), fputc('\n', f), lines++;
	fputs("target", f), put_str(f, p->target), fputc('\n', f), lines++;
	fprintf(f, "pid %" PRId32 "\n", p->pid), lines++;
	fprintf(f, "duration_s %a\n", p->duration_s), lines++;
	fprintf(f, "start_unix_ns %" PRIu64 "\n", p->start_unix_ns), lines++;
	fprintf(f, "sample_period %" PRIu64 "\n", p->sample_period), lines++;
	fprintf(f, "has_allocations %d\n", p->has_allocations ? 1 : 0), lines++;
	fprintf(f, "last_serial %" PRIu64 "\n", p->last_serial), lines++;
	fprintf(f, "gc_collections %d", VT_GC_KINDS);
	for (int k = 0; k < VT_GC_KINDS; k++)
		fprintf(f, " %" PRIu64, p->gc_collections[k]);
	fputc('\n', f), lines++;

	/* the frames' texts once, then stacks that name them by number, before
	 * the rows that name the stacks by number */
	size_t ntexts = vt_stack_table_ntexts(&p->stacks);

	for (size_t i = 0; i < ntexts; i++, lines++) {
		fputs("text", f);
		put_str(f, vt_stack_table_text(&p->stacks, i));
		fputc('\n', f);
	}
	for (size_t i = 0; i < p->stacks.n; i++, lines++) {
		const struct vt_stack *s = &p->stacks.v[i];

		put_stack(f, &p->stacks, s);
	}
	/* processes before the rows that name them by number */
	for (size_t i = 0; i < p->procs.n; i++, lines++) {
		fprintf(f, "process %" PRId32, p->procs.v[i].pid);
		put_str(f, p->procs.v[i].comm);
		put_str(f, p->procs.v[i].cgroup);
		fputc('\n', f);
	}
	for (size_t i = 0; i < p->allocs.n; i++, lines++) {
		const struct vt_alloc *a = &p->allocs.v[i];

		if (a->proc)
			fprintf(f, "alloc_process %" PRIu32 " %" PRIu32, a->proc, a->stack);
		else if (a->stack)
			fprintf(f, "alloc_stack %" PRIu32, a->stack);
		else
			fputs("alloc", f);
		put_str(f, a->klass);
		put_str(f, a->method);
		put_str(f, a->site);
		fprintf(f, " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", a->count, a->bytes, a->samples);
	}
	lines += put_keyed(f, "method_cache_reset", p->method_cache_resets.v,
			   p->method_cache_resets.n, true);
	lines += put_keyed(f, "constant_cache_reset", p->constant_cache_resets.v,
			   p->constant_cache_resets.n, false);
	lines += put_keyed(f, "global_serial_inc", p->global_serial_incs.v,
			   p->global_serial_incs.n, false);
	/* every pause counted, before the list of those kept */
	for (int k = 0; k < VT_GC_KINDS; k++) {
		const struct vt_gc_stats *g = &p->gc_stats[k];

		if (!g->count)
			continue;
		fprintf(f, "gc_summary %d %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
			" %" PRIu64, k, g->count, g->total_ns, g->max_ns, g->allocated_bytes,
			g->allocated_max, g->objects_collected);
		for (int b = 0; b < VT_HIST_BUCKETS; b++)
			if (g->hist[b])
				fprintf(f, " %d:%" PRIu64, b, g->hist[b]);
		fputc('\n', f), lines++;
	}
	for (size_t i = 0; i < p->gc_pauses.n; i++, lines++) {
		const struct vt_gc_pause *g = &p->gc_pauses.v[i];

		fprintf(f, "gc_pause %d %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRId64
			" %" PRIu32 "\n", g->kind, g->duration_ns, g->heap_bytes, g->allocated_bytes,
			g->objects_collected, g->at_ns, g->tid);
	}
	for (size_t i = 0; i < p->events.n; i++, lines++) {
		const struct vt_event *e = &p->events.v[i];

		fprintf(f, "event %d %" PRIu32 " %" PRId64 " %" PRIu64 " %" PRId64 " %" PRIu64, e->kind,
			e->tid, e->at_ns, e->dur_ns, e->arg, e->serial);
		put_str(f, e->name);
		put_str(f, e->name2);
		fputc('\n', f);
	}
	for (size_t i = 0; i < p->signals.n; i++, lines++) {
		const struct vt_signal *s = &p->signals.v[i];

		fprintf(f, "signal %d %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64, s->signo,
			s->received, s->handled, s->latency_total_ns, s->latency_max_ns);
		put_hist(f, s->latency_hist);
		fputc('\n', f);
	}
	lines += put_keyed(f, "call", p->calls.v, p->calls.n, true);
	for (size_t i = 0; i < p->lost.n; i++, lines++) {
		fputs("lost", f);
		put_str(f, p->lost.v[i].what);
		fprintf(f, " %" PRIu64 "\n", p->lost.v[i].count);
	}
	for (size_t i = 0; i < p->frees.n; i++, lines++) {
		fputs("free", f);
		put_str(f, p->frees.v[i].klass);
		fprintf(f, " %" PRIu64 " %" PRIu64 "\n", p->frees.v[i].count, p->frees.v[i].bytes);
	}
	if (p->live_info.on) {
		const struct vt_live_info *li = &p->live_info;

		fprintf(f, "live_heap %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRId64, li->max_tracked,
			li->temp_ns, li->peak_bytes, li->peak_at_ns);
		put_hist(f, li->age_hist);
		fputc('\n', f);
		lines++;
	}
	if (p->series.n) {
		fprintf(f, "series_step %" PRIu64 "\n", p->series_step_ns);
		lines++;
	}
	for (size_t i = 0; i < p->series.n; i++, lines++) {
		const struct vt_series *r = &p->series.v[i];

		fputs("series", f);
		put_str(f, r->klass);
		fprintf(f, " %" PRIu32 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRId64 "\n",
			r->step, r->allocs, r->alloc_bytes, r->frees, r->free_bytes, r->live_bytes);
	}
	for (size_t i = 0; i < p->live.n; i++, lines++) {
		const struct vt_live *r = &p->live.v[i];

		fputs("live", f);
		put_str(f, r->klass);
		put_str(f, r->method);
		put_str(f, r->site);
		fprintf(f, " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", r->count,
			r->bytes, r->objects, r->temp_count, r->temp_bytes);
	}
	return lines;
}

/* A fresh file beside path, created with O_EXCL and mode 0666 so the umask
 * applies as it would to any file the user creates. */
static int open_temp(const char *path, char *tmp, size_t tmplen)
{
	const char *slash = strrchr(path, '/');
	int dirlen = slash ? (int)(slash - path + 1) : 0;
	const char *base = slash ? slash + 1 : path;
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	for (unsigned attempt = 0; attempt < 100; attempt++) {
		int n = snprintf(tmp, tmplen, "%.*s.%s.tmp.%ld.%lx%u", dirlen, path, base,
				 (long)getpid(), (unsigned long)ts.tv_nsec, attempt);
		int fd;

		if (n < 0 || (size_t)n >= tmplen)
			return -ENAMETOOLONG;
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd : -errno;
	}
	return -EEXIST;
}

static int sync_dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	int fd, err = 0;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else if (snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd) && errno != EINVAL)
		err = -errno;
	close(fd);
	return err;
}

/* Moves tmp to path; without force, never replaces an existing path. */
static int install(const char *tmp, const char *path, bool force)
{
	if (force)
		return rename(tmp, path) ? -errno : 0;
	if (!renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE))
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	/* no RENAME_NOREPLACE here: link() fails with EEXIST just the same */
	if (link(tmp, path))
		return -errno;
	unlink(tmp);
	return 0;
}

int vt_profile_write_stream(const struct vt_profile *p, FILE *f)
{
	unsigned long lines;

	fprintf(f, "%s %d\n", RECORD_MAGIC, RECORD_VERSION);
	lines = write_items(f, p);
	fprintf(f, "end %lu\n", lines);
	if (fflush(f) || ferror(f))
		return errno ? -errno : -EIO;
	return 0;
}

/* Something that is not a file to replace (a device such as /dev/null, a
 * FIFO, a socket): written into as it is, as perf does, never renamed over.
 * 0 = no, 1 = yes, -errno. */
static int is_special(const char *path)
{
	struct stat sb;

	if (stat(path, &sb))
		return errno == ENOENT ? 0 : -errno;
	if (S_ISDIR(sb.st_mode))
		return -EISDIR;
	return !S_ISREG(sb.st_mode);
}

bool vt_profile_output_is_file(const char *path)
{
	return is_special(path) == 0;
}

static int write_special(const struct vt_profile *p, const char *path)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY), err;
	FILE *f;

	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
		return err;
	}
	err = vt_profile_write_stream(p, f);
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

int vt_profile_check_output(const char *path, bool force)
{
	char tmp[PATH_MAX];
	struct stat sb;
	int fd, special;

	if (!path || !*path)
		return -EINVAL;
	if (!force && lstat(path, &sb) == 0)
		return -EEXIST;
	special = is_special(path);
	if (special < 0)
		return special;
	if (special) {
		/* O_NONBLOCK: a FIFO nobody reads yet must not hang the check */
		fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		if (fd < 0 && errno != ENXIO)
			return -errno;
		if (fd >= 0)
			close(fd);
		return 0;
	}
	/* what writing will do: a new file in the destination's directory */
	fd = open_temp(path, tmp, sizeof(tmp));
	if (fd < 0)
		return fd;
	close(fd);
	unlink(tmp);
	return 0;
}

int vt_profile_write(const struct vt_profile *p, const char *path, bool force)
{
	char tmp[PATH_MAX];
	FILE *f;
	int fd, err = 0, special;

	if (!path || !*path)
		return -EINVAL;
	if (!force && access(path, F_OK) == 0)
		return -EEXIST;
	special = is_special(path);
	if (special < 0)
		return special;
	if (special)
		return write_special(p, path);
	fd = open_temp(path, tmp, sizeof(tmp));
	if (fd < 0)
		return fd;
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
		unlink(tmp);
		return err;
	}
	err = vt_profile_write_stream(p, f);
	if (!err && fsync(fd))
		err = -errno;
	if (fclose(f) && !err)
		err = -errno;
	if (!err)
		err = install(tmp, path, force);
	if (err) {
		unlink(tmp);
		return err;
	}
	return sync_dir_of(path);
}

/* ---- reading ---- */
