/*
 * http_server.c: GET-only HTTP on libmicrohttpd (http_server.h).
 *
 * libmicrohttpd holds a connection whose first bytes are not HTTP (a TLS
 * hello, binary) until its idle timeout, and closes one whose first line is
 * no request without a status line. So connections are accepted here first,
 * by a gate thread that looks at their first bytes without taking them
 * (MSG_PEEK): one that starts like a request line (a method in capitals,
 * then a space) goes to libmicrohttpd (MHD_add_connection), which parses
 * the rest; any other gets a 400 and is closed; one that says nothing is
 * closed at the idle timeout. The gate bounds what it holds as
 * libmicrohttpd does (per address, in all).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "export/http_server.h"
#include "report/report_fmt.h"

/* Connections cost a few hundred bytes each in poll mode, so there is room
 * for every scraper beside clients that hold connections open doing
 * nothing, or trickling a byte now and then (which resets the idle
 * timeout): one address may hold a quarter of them at most. */
#define MAX_CONNECTIONS 1024
#define MAX_PER_ADDRESS 256
#define CONNECTION_TIMEOUT_S 10    /* an idle client is cut off */
#define GZIP_FROM 1024             /* bodies this long go gzipped to who takes it */

#define GATE_PEEK 24                /* "OPTIONS " and more: enough to judge */

#define GATE_RECHECK_MS 50          /* a partial first line is looked at again this often */

/* A connection the gate holds until its first bytes say what it is. */
struct pending {
	int fd;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	long long until_ms;
	bool partial;               /* bytes came, too few to judge: polled by time, not
				     * by POLLIN (which unread bytes keep raised) */
};

struct vt_http_server {
	struct MHD_Daemon *d;
	vt_http_handler *handler;
	void *ctx;
	uint16_t port;
	int listen_fd;
	int wake[2];                /* written to stop the gate */
	pthread_t gate;
	bool gate_running;
	struct pending *pend;       /* MAX_CONNECTIONS at most */
	size_t npend;
};

/* Does the client take gzip (Accept-Encoding: gzip, not gzip;q=0)? */
static bool takes_gzip(struct MHD_Connection *c)
{
	const char *enc = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						      MHD_HTTP_HEADER_ACCEPT_ENCODING);
	const char *g = enc ? strstr(enc, "gzip") : NULL;

	return g && strncmp(g + 4 + strspn(g + 4, " "), ";q=0", 4) != 0;
}

static enum MHD_Result queue(struct MHD_Connection *c, int status, const char *type, char *body,
			     size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	uint8_t *packed = NULL;
	size_t plen = 0;
	bool gzip = len > GZIP_FROM && takes_gzip(c) &&
		    vt_gzip((const uint8_t *)body, len, &packed, &plen) == 0;

	if (gzip) {
		free(body);
		body = (char *)packed;
		len = plen;
	}
	r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ACCEPT_ENCODING);
	if (gzip)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
	ret = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

static char *text(const char *s, size_t *len)
{
	*len = strlen(s);
	return strdup(s);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_len, void **con_cls)
{
	struct vt_http_server *s = cls;
	struct vt_http_reply reply = { 0 };
	const char *accept;
	size_t len;

	(void)version;
	(void)upload;
	/* the first call only announces the request; answer on the second */
	if (!*con_cls) {
		*con_cls = s;
		return MHD_YES;
	}
	if (*upload_len) {
		*upload_len = 0; /* a GET has no body: drop whatever came */
		return MHD_YES;
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD)) {
		char *body = text("only GET\n", &len);

		return body ? queue(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", body, len) : MHD_NO;
	}
	accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	s->handler(s->ctx, url, accept ? accept : "", &reply);
	if (!reply.body)
		return MHD_NO; /* out of memory: drop the connection */
	return queue(c, reply.status, reply.content_type, reply.body, reply.len);
}

/* ---- the gate ---- */

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

/* 1: b starts a request line (METHOD SP, the method 1-16 capitals); 0: too
 * few bytes to say; -1: not HTTP. */
static int starts_request(const char *b, size_t n)
{
	size_t i = 0;

	while (i < n && i < 16 && b[i] >= 'A' && b[i] <= 'Z')
		i++;
	if (i == n && i < 16)
		return 0;
	return i > 0 && i < n && b[i] == ' ' ? 1 : -1;
}

/* A 400 to what is not HTTP, then close. What it sent is read first, so
 * the close is no reset that could take the answer with it. */
static void refuse(int fd)
{
	static const char bad[] = "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n"
				  "Content-Length: 12\r\nConnection: close\r\n\r\nbad request\n";
	char sink[4096];

	for (int i = 0; i < 16 && recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; i++)
		;
	(void)send(fd, bad, sizeof(bad) - 1, MSG_DONTWAIT | MSG_NOSIGNAL); /* gone: nothing to tell */
	shutdown(fd, SHUT_WR);
	close(fd);
}

static bool same_address(const struct pending *a, const struct sockaddr_storage *b)
{
	if (a->addr.ss_family != b->ss_family)
		return false;
	if (b->ss_family == AF_INET)
		return ((const struct sockaddr_in *)&a->addr)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (b->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)&a->addr)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr));
	return true;
}

static void drop_pending(struct vt_http_server *s, size_t i)
{
	s->pend[i] = s->pend[--s->npend];
}

/* Take every connection waiting on the listening socket, within the
 * bounds; one past them is closed at once. */
static void gate_accept(struct vt_http_server *s)
{
	for (;;) {
		struct pending p = { .addrlen = sizeof(p.addr), .until_ms = now_ms() + CONNECTION_TIMEOUT_S * 1000 };
		size_t same = 0;

		p.fd = accept4(s->listen_fd, (struct sockaddr *)&p.addr, &p.addrlen,
			       SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (p.fd < 0)
			return;
		for (size_t i = 0; i < s->npend; i++)
			same += same_address(&s->pend[i], &p.addr);
		if (s->npend == MAX_CONNECTIONS || same >= MAX_PER_ADDRESS) {
			close(p.fd);
			continue;
		}
		s->pend[s->npend++] = p;
	}
}

/* What a held connection's first bytes say: handed on, refused, still
 * held, or closed (gone, or silent past the timeout). */
static void gate_judge(struct vt_http_server *s, size_t i, bool readable, long long now)
{
	struct pending *p = &s->pend[i];
	char first[GATE_PEEK];
	ssize_t n;
	int v;

	if (!readable && !p->partial) {
		if (now >= p->until_ms) {
			close(p->fd);
			drop_pending(s, i);
		}
		return;
	}
	n = recv(p->fd, first, sizeof(first), MSG_PEEK | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		close(p->fd);
		drop_pending(s, i);
		return;
	}
	v = starts_request(first, (size_t)n);
	if (v == 0 && now < p->until_ms) {
		p->partial = true;
		return;
	}
	if (v > 0)
		/* libmicrohttpd owns it now, and closes it if it cannot take it */
		MHD_add_connection(s->d, p->fd, (const struct sockaddr *)&p->addr, p->addrlen);
	else
		refuse(p->fd);
	drop_pending(s, i);
}

static void *gate_run(void *arg)
{
	struct vt_http_server *s = arg;
	struct pollfd *pfd = calloc(MAX_CONNECTIONS + 2, sizeof(*pfd));

	while (pfd) {
		long long now = now_ms();
		int timeout = -1;
		size_t n = s->npend;

		pfd[0] = (struct pollfd){ .fd = s->wake[0], .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = s->listen_fd, .events = POLLIN };
		for (size_t i = 0; i < n; i++) {
			long long left = s->pend[i].until_ms - now;

			if (s->pend[i].partial && left > GATE_RECHECK_MS)
				left = GATE_RECHECK_MS;
			pfd[2 + i] = (struct pollfd){ .fd = s->pend[i].fd,
						      .events = s->pend[i].partial ? 0 : POLLIN };
			if (timeout < 0 || left < timeout)
				timeout = left > 0 ? (int)left : 0;
		}
		if (poll(pfd, 2 + n, timeout) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents)
			break;
		now = now_ms();
		/* from the last: a dropped one takes the place of one already judged */
		for (size_t i = n; i-- > 0;)
			gate_judge(s, i, pfd[2 + i].revents != 0, now);
		if (pfd[1].revents & POLLIN)
			gate_accept(s);
	}
	free(pfd);
	for (size_t i = 0; i < s->npend; i++)
		close(s->pend[i].fd);
	s->npend = 0;
	return NULL;
}

/* The listening socket, bound to ai: the descriptor, or -errno. */
static int listen_on(const struct addrinfo *ai)
{
	int one = 1, fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 128)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static uint16_t bound_port(int fd)
{
	struct sockaddr_storage a;
	socklen_t len = sizeof(a);

	if (getsockname(fd, (struct sockaddr *)&a, &len))
		return 0;
	if (a.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&a)->sin6_port);
	return ntohs(((struct sockaddr_in *)&a)->sin_port);
}

int vt_http_start(struct vt_http_server **out, const char *listen, vt_http_handler *handler,
		  void *ctx, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	struct vt_http_server *s;
	char host[256];
	const char *colon, *h = listen, *port;
	size_t hlen;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
	int r;

	*out = NULL;
	colon = strrchr(listen, ':');
	if (!colon || colon == listen || !colon[1]) {
		snprintf(err, errlen, "--listen: '%s' is not ADDR:PORT (e.g. 127.0.0.1:9464)", listen);
		return -EINVAL;
	}
	port = colon + 1;
	hlen = (size_t)(colon - listen);
	if (h[0] == '[' && hlen >= 2 && h[hlen - 1] == ']') { /* [::1]:9464 */
		h++;
		hlen -= 2;
	}
	if (hlen >= sizeof(host)) {
		snprintf(err, errlen, "--listen: address too long");
		return -EINVAL;
	}
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	for (const char *p = port; *p; p++) {
		if (*p < '0' || *p > '9' || p - port > 5) {
			snprintf(err, errlen, "--listen: '%s' is not a port number", port);
			return -EINVAL;
		}
	}
	if (atoi(port) > 65535) {
		snprintf(err, errlen, "--listen: '%s' is not a port number", port);
		return -EINVAL;
	}
	r = getaddrinfo(host, port, &hints, &ai);
	if (r) {
		snprintf(err, errlen, "--listen: cannot resolve '%s': %s", host, gai_strerror(r));
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s || !(s->pend = calloc(MAX_CONNECTIONS, sizeof(*s->pend)))) {
		free(s);
		freeaddrinfo(ai);
		return -ENOMEM;
	}
	s->handler = handler;
	s->ctx = ctx;
	s->wake[0] = s->wake[1] = -1;
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	s->listen_fd = listen_on(ai);
	freeaddrinfo(ai);
	if (s->listen_fd < 0) {
		r = -s->listen_fd;
		snprintf(err, errlen, "--listen: cannot listen on %s: %s", listen, strerror(r));
		free(s->pend);
		free(s);
		return -r;
	}
	/* the gate accepts; libmicrohttpd serves what it hands on */
	s->d = MHD_start_daemon(flags | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC, 0, NULL, NULL,
				on_request, s,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)MAX_CONNECTIONS,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)MAX_PER_ADDRESS,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONNECTION_TIMEOUT_S,
				MHD_OPTION_END);
	if (!s->d)
		r = errno ? errno : ENOMEM;
	else if (pipe2(s->wake, O_CLOEXEC))
		r = errno;
	else
		r = pthread_create(&s->gate, NULL, gate_run, s);
	if (r) {
		snprintf(err, errlen, "--listen: cannot serve on %s: %s", listen, strerror(r));
		vt_http_stop(s);
		return -r;
	}
	s->gate_running = true;
	s->port = bound_port(s->listen_fd);
	*out = s;
	return 0;
}

uint16_t vt_http_port(const struct vt_http_server *s)
{
	return s->port;
}

void vt_http_stop(struct vt_http_server *s)
{
	if (!s)
		return;
	if (s->gate_running) {
		if (write(s->wake[1], "x", 1) < 0)
			(void)0; /* a full pipe wakes it as well */
		pthread_join(s->gate, NULL);
	}
	for (int i = 0; i < 2; i++)
		if (s->wake[i] >= 0)
			close(s->wake[i]);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->d)
		MHD_stop_daemon(s->d);
	free(s->pend);
	free(s);
}
