/*
 * http_server.c: GET-only HTTP on libmicrohttpd (http_server.h).
 */
#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

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

struct vt_http_server {
	struct MHD_Daemon *d;
	vt_http_handler *handler;
	void *ctx;
	uint16_t port;
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

int vt_http_start(struct vt_http_server **out, const char *listen, vt_http_handler *handler,
		  void *ctx, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	struct vt_http_server *s;
	const union MHD_DaemonInfo *info;
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
	if (!s) {
		freeaddrinfo(ai);
		return -ENOMEM;
	}
	s->handler = handler;
	s->ctx = ctx;
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	s->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s,
				MHD_OPTION_SOCK_ADDR, ai->ai_addr,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)MAX_CONNECTIONS,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)MAX_PER_ADDRESS,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONNECTION_TIMEOUT_S,
				MHD_OPTION_END);
	r = errno;
	freeaddrinfo(ai);
	if (!s->d) {
		snprintf(err, errlen, "--listen: cannot listen on %s: %s", listen,
			 strerror(r ? r : EADDRINUSE));
		free(s);
		return -(r ? r : EADDRINUSE);
	}
	info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info ? info->port : 0;
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
	MHD_stop_daemon(s->d);
	free(s);
}
