/*
 * report_fmt.c: printing pieces every renderer shares (report_fmt.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "report/report_fmt.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static int digits(uint64_t v)
{
	int d = 1;

	while (v >= 10) {
		v /= 10;
		d++;
	}
	return d;
}

void vt_print_log2_hist(FILE *out, const uint64_t *hist, int buckets, const char *unit,
			const char *indent)
{
	enum { BAR = 40 };
	int first = -1, last = -1, w;
	uint64_t max = 0;

	for (int i = 0; i < buckets; i++) {
		if (!hist[i])
			continue;
		if (first < 0)
			first = i;
		last = i;
		if (hist[i] > max)
			max = hist[i];
	}
	if (first < 0)
		return;
	w = digits(last >= 63 ? UINT64_MAX : (UINT64_C(1) << (last + 1)) - 1);
	if (w < 5)
		w = 5;
	fprintf(out, "%s%*s%*s : count    distribution\n", indent, w, unit, w + 4, "");
	for (int i = first; i <= last; i++) {
		uint64_t low = i ? UINT64_C(1) << i : 0;
		uint64_t high = i >= 63 ? UINT64_MAX : (UINT64_C(1) << (i + 1)) - 1;
		/* 128 bits: a count above 2^64/40 would wrap the product */
		int stars = (int)((unsigned __int128)hist[i] * BAR / max);

		fprintf(out, "%s%*llu -> %-*llu : %-8llu |%.*s%*s|\n", indent, w,
			(unsigned long long)low, w, (unsigned long long)high,
			(unsigned long long)hist[i], stars,
			"****************************************", BAR - stars, "");
	}
}

/* ---- escaping ---- */

int vt_utf8_len(const unsigned char *s)
{
	int n;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) /* also stops at the NUL */
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void vt_json_string(FILE *out, const char *str)
{
	vt_json_string_in(out, str, false);
}

void vt_json_string_in(FILE *out, const char *str, bool script)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");

	fputc('"', out);
	while (*s) {
		int n;

		switch (*s) {
		case '"': fputs("\\\"", out); s++; continue;
		case '\\': fputs("\\\\", out); s++; continue;
		case '\b': fputs("\\b", out); s++; continue;
		case '\f': fputs("\\f", out); s++; continue;
		case '\n': fputs("\\n", out); s++; continue;
		case '\r': fputs("\\r", out); s++; continue;
		case '\t': fputs("\\t", out); s++; continue;
		}
		if (*s < 0x20 || *s == 0x7f || (script && (*s == '<' || *s == '>' || *s == '&'))) {
			fprintf(out, "\\u%04x", *s++);
			continue;
		}
		n = vt_utf8_len(s);
		if (!n) {
			fputs("\\ufffd", out);
			s++;
			continue;
		}
		fwrite(s, 1, (size_t)n, out);
		s += n;
	}
	fputc('"', out);
}

char *vt_text_name(const char *name)
{
	const unsigned char *s = (const unsigned char *)name;
	char *buf = malloc(strlen(name) * 4 + 1), *w = buf;

	if (!buf)
		return NULL;
	while (*s) {
		int n = vt_utf8_len(s);

		if (*s == '\\') {
			*w++ = '\\';
			*w++ = (char)*s++;
			continue;
		}
		if (n == 0 || *s < 0x20 || *s == 0x7f) {
			w += sprintf(w, "\\x%02x", *s++);
			continue;
		}
		memcpy(w, s, (size_t)n);
		w += n;
		s += n;
	}
	*w = '\0';
	return buf;
}

void vt_csv_field(FILE *out, const char *str)
{
	const char *s = str ? str : "";
	size_t len = strlen(s);
	/* a spreadsheet runs a cell starting with one of these as a formula */
	bool formula = len && strchr("=+-@\t\r", s[0]);
	bool quote = formula || strpbrk(s, ",\"\r\n") ||
		     (len && (s[0] == ' ' || s[len - 1] == ' '));

	if (!quote) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	if (formula)
		fputc('\'', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

/* ---- names and units ---- */

const char *vt_signal_name(int signo, char *buf, size_t len)
{
	static const char *const names[] = {
		[1] = "SIGHUP", [2] = "SIGINT", [3] = "SIGQUIT", [4] = "SIGILL",
		[5] = "SIGTRAP", [6] = "SIGABRT", [7] = "SIGBUS", [8] = "SIGFPE",
		[9] = "SIGKILL", [10] = "SIGUSR1", [11] = "SIGSEGV", [12] = "SIGUSR2",
		[13] = "SIGPIPE", [14] = "SIGALRM", [15] = "SIGTERM", [16] = "SIGSTKFLT",
		[17] = "SIGCHLD", [18] = "SIGCONT", [19] = "SIGSTOP", [20] = "SIGTSTP",
		[21] = "SIGTTIN", [22] = "SIGTTOU", [23] = "SIGURG", [24] = "SIGXCPU",
		[25] = "SIGXFSZ", [26] = "SIGVTALRM", [27] = "SIGPROF", [28] = "SIGWINCH",
		[29] = "SIGIO", [30] = "SIGPWR", [31] = "SIGSYS",
	};

	if (signo > 0 && (size_t)signo < ARRAY_SIZE(names) && names[signo])
		snprintf(buf, len, "%s", names[signo]);
	else if (signo == SIGRTMIN)
		snprintf(buf, len, "SIGRTMIN");
	else if (signo > SIGRTMIN && signo < SIGRTMAX)
		snprintf(buf, len, "SIGRTMIN+%d", signo - SIGRTMIN);
	else if (signo == SIGRTMAX)
		snprintf(buf, len, "SIGRTMAX");
	else
		snprintf(buf, len, "SIG%d", signo);
	return buf;
}

const char *vt_format_ns(uint64_t ns, char *buf, size_t len)
{
	if (ns < 1000)
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
	else if (ns < 999950) /* so rounding never prints "1000.0 us" */
		snprintf(buf, len, "%.1f us", (double)ns / 1e3);
	else if (ns < 999995000)
		snprintf(buf, len, "%.2f ms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.2f s", (double)ns / 1e9);
	return buf;
}

/* ---- gzip ---- */

int vt_gzip(const uint8_t *in, size_t len, uint8_t **out, size_t *outlen)
{
	z_stream z = { 0 };
	uLong cap;
	int r;

	/* 16 + MAX_WBITS: a gzip header and trailer, as pprof expects */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&z, (uLong)len);
	*out = malloc(cap);
	if (!*out) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = *out;
	z.avail_out = (uInt)cap;
	r = deflate(&z, Z_FINISH);
	*outlen = z.total_out;
	deflateEnd(&z);
	if (r != Z_STREAM_END) {
		free(*out);
		*out = NULL;
		return -EIO;
	}
	return 0;
}
