/*
 * test_statsd.c: the statsd subscriber sends parseable statsd lines to a
 * real UDP socket on 127.0.0.1, with the counts the host's calls imply.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <cmocka.h>

#include <vmtrace/vmtrace.h>

#define MAX_METRICS 256

struct metric {
	char name[128];
	char type[4];
	double sum;  /* counters: added up; timings: sum of values */
	int lines;
};

static struct metric metrics[MAX_METRICS];
static int nmetrics;

static struct metric *find(const char *name)
{
	for (int i = 0; i < nmetrics; i++)
		if (strcmp(metrics[i].name, name) == 0)
			return &metrics[i];
	return NULL;
}

/* One statsd line "name:value|type"; 0, or -1 when it does not parse. */
static int parse_line(const char *line)
{
	const char *colon = strchr(line, ':');
	const char *bar = colon ? strchr(colon, '|') : NULL;
	char *end;

	if (!colon || !bar || colon == line || (size_t)(colon - line) >= sizeof(metrics[0].name))
		return -1;
	double value = strtod(colon + 1, &end);
	if (end != bar || value < 0)
		return -1;
	if (strcmp(bar + 1, "c") != 0 && strcmp(bar + 1, "ms") != 0)
		return -1;
	for (const char *p = line; p < colon; p++)
		if (*p == '|' || *p == '@' || *p == ' ')
			return -1;

	char name[128];
	memcpy(name, line, (size_t)(colon - line));
	name[colon - line] = '\0';
	struct metric *m = find(name);
	if (!m) {
		if (nmetrics == MAX_METRICS)
			return -1;
		m = &metrics[nmetrics++];
		snprintf(m->name, sizeof(m->name), "%s", name);
		snprintf(m->type, sizeof(m->type), "%s", bar + 1);
	}
	if (strcmp(m->type, bar + 1) != 0)
		return -1;
	m->sum += value;
	m->lines++;
	return 0;
}

static void test_statsd_lines_over_udp(void **state)
{
	(void)state;
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(addr);
	int rx = socket(AF_INET, SOCK_DGRAM, 0);
	char target[64];

	assert_true(rx >= 0);
	assert_int_equal(bind(rx, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(getsockname(rx, (struct sockaddr *)&addr, &alen), 0);
	struct timeval tv = { .tv_sec = 5 };
	setsockopt(rx, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	snprintf(target, sizeof(target), "127.0.0.1:%u", ntohs(addr.sin_port));

	assert_int_equal(vmtrace_statsd_start("127.0.0.1", NULL, 50), -EINVAL);
	assert_int_equal(vmtrace_statsd_start("127.0.0.1:notaport", NULL, 50), -EINVAL);
	assert_int_equal(vmtrace_statsd_start("127.0.0.1:70000", NULL, 50), -EINVAL);
	assert_int_equal(vmtrace_statsd_start(target, "t", 50), 0);
	assert_int_equal(vmtrace_statsd_start(target, "t", 50), -EBUSY);
	assert_int_equal(vmtrace_bus_start(), 0);
	assert_int_equal(vmtrace_signal_route(SIGUSR1), 0);

	/* many classes, so the lines need more than one datagram */
	static char classes[40][48];
	for (int i = 0; i < 40; i++) {
		snprintf(classes[i], sizeof(classes[i]), "Generated::LongClassName%02d", i);
		for (int j = 0; j <= i % 3; j++)
			vmtrace_alloc(classes[i], "Gen#make", 10, NULL);
	}
	for (int i = 0; i < 5; i++)
		vmtrace_alloc("Point", "Geometry#translate", 16, "geometry.rb:3");
	vmtrace_alloc("Line", "Geometry#join", 40, NULL);
	vmtrace_free("Point", 16);
	vmtrace_method_cache_reset("Point", "translate", 2);
	vmtrace_method_cache_reset("Point", NULL, 3);
	vmtrace_constant_cache_reset("LIMIT", 4);
	vmtrace_global_serial_inc(5, "method redefined");
	vmtrace_gc_begin(VMTRACE_GC_MINOR, 1000);
	usleep(2000);
	vmtrace_gc_end(VMTRACE_GC_MINOR, 500);
	vmtrace_gc_begin(VMTRACE_GC_MAJOR, 1000);
	vmtrace_gc_end(VMTRACE_GC_MAJOR, 100);
	raise(SIGUSR1);
	raise(SIGUSR1);
	assert_int_equal(vmtrace_bus_flush(), 0);
	vmtrace_statsd_stop(); /* sends what is left */

	struct vmtrace_statsd_stats st;
	vmtrace_statsd_get_stats(&st);
	assert_int_equal(st.send_errors, 0);
	assert_int_equal(st.overflow, 0);
	assert_true(st.datagrams >= 2);

	/* read every datagram that was sent */
	uint64_t lines = 0;
	for (uint64_t d = 0; d < st.datagrams; d++) {
		char buf[2048];
		ssize_t n = recv(rx, buf, sizeof(buf) - 1, 0);
		assert_true(n > 0);
		assert_true(n <= 1432);
		buf[n] = '\0';
		for (char *save, *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			if (parse_line(line) != 0)
				fail_msg("unparseable statsd line: %s", line);
			lines++;
		}
	}
	assert_int_equal(lines, st.lines);

	struct { const char *name; double value; } want[] = {
		{ "t.alloc.Point", 5 }, { "t.alloc_bytes.Point", 80 }, { "t.alloc.Line", 1 },
		{ "t.alloc_bytes.Line", 40 }, { "t.alloc.Generated__LongClassName07", 2 },
		{ "t.free.Point", 1 }, { "t.method_cache_reset.Point", 2 },
		{ "t.constant_cache_reset.LIMIT", 1 }, { "t.global_serial_inc", 1 },
		{ "t.gc.minor", 1 }, { "t.gc.major", 1 }, { "t.signal.USR1", 2 },
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct metric *m = find(want[i].name);
		if (!m)
			fail_msg("metric %s missing", want[i].name);
		assert_string_equal(m->type, "c");
		assert_true(m->sum == want[i].value);
	}
	struct metric *pause = find("t.gc.minor.pause");
	assert_non_null(pause);
	assert_string_equal(pause->type, "ms");
	assert_int_equal(pause->lines, 1);
	assert_true(pause->sum >= 2.0); /* it slept 2 ms inside the pause */
	struct metric *latency = find("t.signal_latency");
	assert_non_null(latency);
	assert_int_equal(latency->lines, 2);

	assert_int_equal(vmtrace_signal_unroute(SIGUSR1), 0);
	vmtrace_bus_stop();
	close(rx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_statsd_lines_over_udp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
