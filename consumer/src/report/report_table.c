/*
 * report_table.c: tables for people (report_table.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_fmt.h"
#include "report/report_table.h"

void vt_table_init(struct vt_table *t, int ncols, const char *align)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
	t->align = align;
	t->drop = NULL;
}

void vt_table_push(struct vt_table *t, char *s)
{
	if (!s) {
		t->err = -ENOMEM;
		return;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		char **c = realloc(t->cells, cap * sizeof(*c));

		if (!c) {
			free(s);
			t->err = -ENOMEM;
			return;
		}
		t->cells = c;
		t->cap = cap;
	}
	t->cells[t->n++] = s;
}

__attribute__((format(printf, 2, 3)))
void vt_cell(struct vt_table *t, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	vt_table_push(t, s);
}

void vt_cell_u64(struct vt_table *t, uint64_t v)
{
	vt_cell(t, "%llu", (unsigned long long)v);
}

/* A name as the terminal should show it (vt_text_name); "" as empty_as. */
void vt_cell_name(struct vt_table *t, const char *name, const char *empty_as)
{
	if (!name || !*name) {
		vt_cell(t, "%s", empty_as);
		return;
	}
	vt_table_push(t, vt_text_name(name));
}

size_t vt_display_width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	return w;
}

/* The byte length of s's first n characters (UTF-8). */
static size_t char_bytes(const char *s, size_t n)
{
	size_t b = 0;

	for (size_t chars = 0; s[b]; b++) {
		if (((unsigned char)s[b] & 0xc0) != 0x80 && chars++ == n)
			break;
	}
	return b;
}

/* Where s's own name starts: after its last '#', '.', "::" or '/' (a
 * method's, a class's, a file's), within its last 48 characters; 0 when it
 * has none. */
static size_t own_name_at(const char *s)
{
	size_t at = 0, n = strlen(s);

	for (size_t i = n > 48 ? n - 48 : 0; i < n; i++) {
		if (s[i] == '#' || s[i] == '.' || s[i] == '/')
			at = i;
		else if (s[i] == ':' && s[i + 1] == ':')
			at = i++;
	}
	return at;
}

/* s in w columns, shortened in the middle with ".." when it is wider: its
 * own name (own_name_at) kept whole when it fits, else its longer end. */
void vt_put_shortened(FILE *out, const char *s, size_t w)
{
	size_t have = vt_display_width(s), head, tail, own;

	if (have <= w) {
		fputs(s, out);
		return;
	}
	own = vt_display_width(s + own_name_at(s));
	if (own + 3 <= w && own < have)
		tail = own, head = w - 2 - own;     /* "Vend..#initialize" */
	else
		head = w >= 8 ? (w - 2) / 4 : 0, tail = w > head + 2 ? w - 2 - head : w;
	fwrite(s, 1, char_bytes(s, head), out);
	if (w > 2)
		fputs("..", out);
	fputs(s + char_bytes(s, have - tail), out);
}

/* Fit the columns to max (0: no limit): the droppable ones go from the
 * right, then the name columns lose a column at a time, each kept at the
 * same share of its own width, down to its header or 12. shown[c] false
 * for a dropped column. */
static void fit_columns(const struct vt_table *t, size_t *width, const size_t *natural, bool *shown,
			size_t indent, size_t max)
{
	size_t total = indent;

	for (int c = 0; c < t->ncols; c++) {
		shown[c] = true;
		total += width[c] + (c ? 2 : 0);
	}
	for (int c = t->ncols - 1; max && total > max && c > 0; c--) {
		if (t->drop && t->drop[c] == 'd') {
			shown[c] = false;
			total -= width[c] + 2;
		}
	}
	while (max && total > max) {
		int pick = -1;

		for (int c = 0; c < t->ncols; c++) {
			size_t least = vt_display_width(t->cells[c]);

			if (least < 12)
				least = 12;
			if (!shown[c] || t->align[c] != 'l' || width[c] <= least)
				continue;
			/* the least shortened so far, for its width */
			if (pick < 0 || width[c] * natural[pick] > width[pick] * natural[c])
				pick = c;
		}
		if (pick < 0)
			break;
		width[pick]--;
		total--;
	}
}

static int table_print(FILE *out, struct vt_table *t, const char *indent, size_t max)
{
	size_t *width, *natural, rows;
	bool *shown;

	if (t->err)
		return t->err;
	/* the widths the cells ask for, then the ones they get */
	natural = calloc(2 * (size_t)t->ncols, sizeof(*natural));
	width = natural ? natural + t->ncols : NULL;
	shown = calloc((size_t)t->ncols, sizeof(*shown));
	if (!natural || !shown) {
		free(natural);
		free(shown);
		return -ENOMEM;
	}
	rows = t->n / (size_t)t->ncols;
	for (size_t i = 0; i < rows * (size_t)t->ncols; i++) {
		size_t w = vt_display_width(t->cells[i]);

		if (w > natural[i % (size_t)t->ncols])
			natural[i % (size_t)t->ncols] = w;
	}
	memcpy(width, natural, (size_t)t->ncols * sizeof(*width));
	fit_columns(t, width, natural, shown, strlen(indent), max);
	for (size_t r = 0; r < rows; r++) {
		char **row = &t->cells[r * (size_t)t->ncols];
		int last = t->ncols - 1;
		bool first = true;

		/* no trailing blanks: stop at the last non-empty cell shown */
		while (last > 0 && (!shown[last] || !*row[last]))
			last--;
		fputs(indent, out);
		for (int c = 0; c <= last; c++) {
			size_t w = vt_display_width(row[c]), pad = w < width[c] ? width[c] - w : 0;

			if (!shown[c])
				continue;
			if (!first)
				fputs("  ", out);
			first = false;
			if (t->align[c] == 'r') {
				fprintf(out, "%*s%s", (int)pad, "", row[c]);
				continue;
			}
			vt_put_shortened(out, row[c], width[c]);
			if (c < last)
				fprintf(out, "%*s", (int)pad, "");
		}
		fputc('\n', out);
	}
	free(natural);
	free(shown);
	return 0;
}

int vt_table_done(FILE *out, struct vt_table *t, const char *indent, size_t max)
{
	int err = table_print(out, t, indent, max);

	for (size_t i = 0; i < t->n; i++)
		free(t->cells[i]);
	free(t->cells);
	return err;
}

/* v with a comma between each three digits, in buf. */
const char *vt_thousands(uint64_t v, char *buf, size_t len)
{
	char digits[24];
	int n = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)v);
	size_t o = 0;

	for (int i = 0; i < n && o + 1 < len; i++) {
		if (i && (n - i) % 3 == 0 && o + 2 < len)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
	return buf;
}

/* What a table cut at --top left out: its rows and their share of what
 * the table counts. */
void vt_print_left_out(FILE *out, size_t more, uint64_t part, uint64_t total, const char *what)
{
	char n[32];

	if (!more)
		return;
	fprintf(out, "  and %s more row%s", vt_thousands(more, n, sizeof(n)), more == 1 ? "" : "s");
	if (total)
		fprintf(out, ", %.1f%% of %s", 100.0 * (double)part / (double)total, what);
	fputs(": --top 0 for all\n", out);
}

