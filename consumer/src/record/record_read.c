/*
 * record_read.c: a record file (docs/record-format.md) read back into a
 * vt_profile. Every read is bounded, every number checked, and a damaged
 * file is refused with the line and the reason; record_write.c says how the
 * file is laid out.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile/profile.h"
#include "record/record_format.h"
#include "record/record_items.h"

/* Why the item on a line was refused, for the error message. */
static const char *item_problem(int r)
{
	return r == -EOVERFLOW ? "its counts overflow the totals (more than 2^64)" : "malformed";
}

static void set_error(struct vt_record_error *e, unsigned long line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_error(struct vt_record_error *e, unsigned long line, const char *fmt, ...)
{
	va_list ap;

	e->line = line;
	va_start(ap, fmt);
	vsnprintf(e->what, sizeof(e->what), fmt, ap);
	va_end(ap);
}

/*
 * One line into *buf, at most max bytes with its '\n'. Returns its length
 * (0 at the end of the file), -E2BIG when no '\n' comes within max bytes,
 * -EBADMSG for a NUL byte, -errno on a read error. Bounded, so that
 * /dev/zero or a multi-gigabyte line costs max bytes, not the whole input.
 */
static ssize_t read_line(FILE *f, char **buf, size_t *cap, size_t max)
{
	size_t len = 0;
	int c;

	while ((c = getc_unlocked(f)) != EOF) {
		if (len + 2 > *cap) {
			size_t ncap = *cap ? *cap * 2 : 256;
			char *nb;

			if (ncap > max + 1)
				ncap = max + 1;
			if (len + 2 > ncap)
				return -E2BIG;
			nb = realloc(*buf, ncap);
			if (!nb)
				return -ENOMEM;
			*buf = nb;
			*cap = ncap;
		}
		if (c == '\0')
			return -EBADMSG;
		(*buf)[len++] = (char)c;
		if (c == '\n')
			break;
	}
	if (ferror(f))
		return errno ? -errno : -EIO;
	if (*buf)
		(*buf)[len] = '\0';
	return (ssize_t)len;
}

static const char *missing_header(unsigned seen)
{
	static const char *const names[] = { "runtime", "probes", "target", "pid", "duration_s",
					     "sample_period", "has_allocations", "last_serial",
					     "gc_collections" };

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!(seen & (1u << i)))
			return names[i];
	return "?";
}

static int read_lines(struct vt_profile *p, FILE *f, struct vt_record_error *e)
{
	char *line = NULL, *field[MAX_FIELDS], key[32];
	size_t cap = 0;
	unsigned long items = 0, lineno = 0;
	unsigned seen = 0;
	bool ended = false;
	ssize_t len;
	int err = -EBADMSG;

	for (;;) {
		int n;

		/* the magic line is short: refuse a foreign file after a few bytes */
		len = read_line(f, &line, &cap, lineno ? VT_RECORD_LINE_MAX : RECORD_MAGIC_LINE_MAX);
		lineno++;
		if (len == 0)
			break;
		if (len == -ENOMEM || (len < 0 && len != -E2BIG && len != -EBADMSG)) {
			err = (int)len;
			set_error(e, lineno, "%s", strerror(-err));
			goto out;
		}
		if (lineno == 1 && len < 0) {
			set_error(e, 1, "not a vmtrace record (no '%s' line)", RECORD_MAGIC);
			goto out;
		}
		if (len == -E2BIG) {
			set_error(e, lineno, "longer than %d bytes", VT_RECORD_LINE_MAX);
			goto out;
		}
		if (len == -EBADMSG) {
			set_error(e, lineno, "holds a NUL byte");
			goto out;
		}
		if (line[len - 1] != '\n') {
			set_error(e, lineno, "cut short (no newline): the file is truncated");
			goto out;
		}
		if (ended) {
			set_error(e, lineno, "text after the end line");
			goto out;
		}
		line[len - 1] = '\0';
		n = vt_record_split(line, field, MAX_FIELDS);
		if (lineno == 1) {
			long version;

			if (n != 2 || strcmp(field[0], RECORD_MAGIC) ||
			    vt_record_get_int(field[1], 1, LONG_MAX, &version)) {
				set_error(e, 1, "not a vmtrace record (no '%s' line)", RECORD_MAGIC);
				goto out;
			}
			if (version > RECORD_VERSION) {
				set_error(e, 1, "format version %ld is newer than this reader's (%d)",
					  version, RECORD_VERSION);
				err = -EPROTONOSUPPORT;
				goto out;
			}
			continue;
		}
		if (n < 0) {
			set_error(e, lineno, "malformed (empty field, or too many fields)");
			goto out;
		}
		snprintf(key, sizeof(key), "%s", field[0]);
		if (!strcmp(field[0], "end")) {
			uint64_t declared;

			if (n != 2 || vt_record_get_u64(field[1], &declared)) {
				set_error(e, lineno, "malformed end line");
				goto out;
			}
			if (declared != items) {
				set_error(e, lineno, "end says %" PRIu64 " items, the file holds %lu",
					  declared, items);
				goto out;
			}
			if ((seen & SEEN_ALL) != SEEN_ALL) {
				set_error(e, lineno, "header item '%s' missing", missing_header(seen));
				goto out;
			}
			if ((seen & SEEN_GC_SUMMARY) && !vt_gc_list_fits(p)) {
				set_error(e, lineno, "more gc_pause lines than gc_summary counts");
				goto out;
			}
			if (p->series.n && !p->series_step_ns)
				p->series_step_ns = 1000000000ull; /* before version 4: a second */
			ended = true;
			continue;
		}
		n = vt_record_parse_item(p, field, n, &seen);
		if (n == -ENOMEM) {
			err = -ENOMEM;
			set_error(e, lineno, "%s", strerror(ENOMEM));
			goto out;
		}
		if (n == -ENOENT) {
			set_error(e, lineno, "unknown item '%s'", key);
			goto out;
		}
		if (n) {
			set_error(e, lineno, "'%s' item %s", key, item_problem(n));
			goto out;
		}
		items++;
	}
	if (ended)
		err = 0;
	else
		set_error(e, 0, lineno == 1 ? "empty file" : "no end line: the file is truncated");
out:
	free(line);
	return err;
}

int vt_profile_read_stream(struct vt_profile *p, FILE *f, struct vt_record_error *e)
{
	struct vt_record_error ignored;
	int err;

	if (!e)
		e = &ignored;
	memset(e, 0, sizeof(*e));
	vt_profile_init(p);
	err = read_lines(p, f, e);
	if (err)
		vt_profile_free(p);
	return err;
}

int vt_profile_read_detail(struct vt_profile *p, const char *path, struct vt_record_error *e)
{
	FILE *f = fopen(path, "re");
	int err;

	if (!f) {
		err = -errno;
		if (e)
			memset(e, 0, sizeof(*e));
		vt_profile_init(p);
		return err;
	}
	err = vt_profile_read_stream(p, f, e);
	fclose(f);
	return err;
}

int vt_profile_read(struct vt_profile *p, const char *path)
{
	return vt_profile_read_detail(p, path, NULL);
}
