/*
 * libFuzzer target for the record reader and every renderer: any bytes as
 * a record file. The reader must accept it or refuse it with a reason; a
 * profile it accepts must render in every --format without a sanitizer
 * report, and each output must hold to what its consumers rely on:
 *   json, perfetto  parse (jansson) as one object
 *   csv     every row of a section has its header's number of fields (RFC 4180)
 *   text    valid UTF-8 with no control byte but the newline: no name draws
 *           rows or moves a terminal's cursor
 *   folded  "frame;frame weight" lines, no control byte, a decimal weight
 * and the record written back reads again and writes the same bytes.
 * The grouping, sort and --top come from the input's last bytes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "profile/profile.h"
#include "report/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(...) do { fprintf(stderr, "fuzz_record: " __VA_ARGS__); abort(); } while (0)

static void check_json(const char *out, size_t len)
{
	json_error_t jerr;
	/* counts reach 2^64-1, past jansson's integers: read numbers as reals */
	json_t *root = json_loadb(out, len, JSON_DECODE_INT_AS_REAL, &jerr);

	if (!root || !json_is_object(root))
		FAIL("json does not parse: %s at line %d\n%.*s\n", jerr.text, jerr.line, (int)len, out);
	json_decref(root);
}

/* Fields of the CSV record at *s (RFC 4180: quoted fields may hold , " CR
 * LF); *s moves past its line end. -1 when a quote is not closed. */
static long csv_record(const char **s, const char *end)
{
	const char *c = *s;
	long fields = 1;

	while (c < end && *c != '\n') {
		if (*c == '"') {
			for (c++;; c++) {
				if (c >= end)
					return -1;
				if (*c == '"') {
					if (c + 1 < end && c[1] == '"')
						c++;
					else
						break;
				}
			}
			c++;
			if (c < end && *c != ',' && *c != '\n')
				return -1; /* text after a closing quote */
			continue;
		}
		if (*c == ',')
			fields++;
		c++;
	}
	if (c >= end)
		return -1; /* every record ends with a newline */
	fields = (c == *s) ? 0 : fields;
	*s = c + 1;
	return fields;
}

static void check_csv(const char *out, size_t len)
{
	const char *s = out, *end = out + len;
	long header = -1;
	unsigned long line = 0;

	while (s < end) {
		long n = csv_record(&s, end);

		line++;
		if (n < 0)
			FAIL("csv line %lu: a quote not closed or a record cut\n%.*s\n", line, (int)len, out);
		if (n == 0) {
			header = -1; /* the empty line between sections */
			continue;
		}
		if (header < 0)
			header = n;
		else if (n != header)
			FAIL("csv line %lu: %ld fields, its header has %ld\n%.*s\n", line, n, header,
			     (int)len, out);
	}
}

static void check_text(const char *out, size_t len)
{
	const unsigned char *s = (const unsigned char *)out, *end = s + len;

	if (memchr(out, '\0', len))
		FAIL("text holds a NUL\n");
	while (s < end) {
		int n = vt_utf8_len(s);

		if (*s != '\n' && (*s < 0x20 || *s == 0x7f || n == 0))
			FAIL("text byte 0x%02x at offset %zu\n%.*s\n", *s, (size_t)(s - (const unsigned char *)out),
			     (int)len, out);
		s += n ? n : 1;
	}
}

static void check_folded(const char *out, size_t len)
{
	const char *s = out, *end = out + len;

	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s)), *sp;

		if (!nl)
			FAIL("folded: last line has no newline\n");
		for (const char *c = s; c < nl; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				FAIL("folded: control byte 0x%02x\n", (unsigned char)*c);
		for (sp = nl; sp > s && sp[-1] != ' '; sp--)
			;
		if (sp == s || sp == nl || sp - 1 == s)
			FAIL("folded: no 'frames weight' in '%.*s'\n", (int)(nl - s), s);
		for (const char *c = sp; c < nl; c++)
			if (*c < '0' || *c > '9')
				FAIL("folded: weight '%.*s' is not a number\n", (int)(nl - sp), sp);
		s = nl + 1;
	}
}

/* p written, read back and written again: the same bytes both times. */
static void check_round_trip(const struct vt_profile *p)
{
	char *a = NULL, *b = NULL;
	size_t alen = 0, blen = 0;
	struct vt_record_error e;
	struct vt_profile q;
	FILE *f = open_memstream(&a, &alen);
	int err;

	if (!f || vt_profile_write_stream(p, f) || fclose(f))
		abort();
	f = fmemopen(a, alen, "r");
	if (!f)
		abort();
	err = vt_profile_read_stream(&q, f, &e);
	fclose(f);
	if (err == -ENOMEM) {
		free(a);
		return;
	}
	if (err)
		FAIL("the record written does not read back: line %lu: %s\n%.*s\n", e.line, e.what,
		     (int)alen, a);
	f = open_memstream(&b, &blen);
	if (!f || vt_profile_write_stream(&q, f) || fclose(f))
		abort();
	if (alen != blen || memcmp(a, b, alen))
		FAIL("written twice, two records:\n%.*s\n---\n%.*s\n", (int)alen, a, (int)blen, b);
	vt_profile_free(&q);
	free(a);
	free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vt_record_error e;
	struct vt_profile p;
	FILE *in;
	int err;

	if (!size)
		return 0; /* fmemopen refuses an empty buffer */
	in = fmemopen((void *)data, size, "r");
	if (!in)
		abort();
	err = vt_profile_read_stream(&p, in, &e);
	fclose(in);
	if (err) {
		if ((err != -EBADMSG && err != -EPROTONOSUPPORT && err != -ENOMEM) || !e.what[0])
			FAIL("refused with %d and no reason '%s'\n", err, e.what);
		return 0;
	}
	check_round_trip(&p);
	for (int f = 0; f < VT_FORMAT__COUNT; f++) {
		uint8_t k = data[size - 1];
		struct vt_report_opts o = { (enum vt_format)f, (enum vt_group)(k & 3),
					    (enum vt_sort)((k >> 2) & 1), (size_t)(k >> 3) % 4 };
		char *out = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&out, &len);

		if (!mem)
			abort();
		err = vt_report_print(mem, &p, &o);
		if (fclose(mem))
			abort();
		if (err && err != -ENOMEM)
			FAIL("--format %s: error %d\n", vt_format_name(o.format), err);
		if (!err) {
			if (o.format == VT_FORMAT_JSON || o.format == VT_FORMAT_PERFETTO)
				check_json(out, len);
			else if (o.format == VT_FORMAT_CSV)
				check_csv(out, len);
			else if (o.format == VT_FORMAT_TEXT)
				check_text(out, len);
			else if (o.format == VT_FORMAT_FOLDED)
				check_folded(out, len);
		}
		free(out);
	}
	vt_profile_free(&p);
	return 0;
}
