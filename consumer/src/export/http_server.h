/*
 * http_server.h: a small HTTP/1.1 server on libmicrohttpd for `vmtrace
 * serve`: GET requests only, answered by one callback on the server's own
 * thread, with bounded connections and timeouts; what does not start like
 * an HTTP request (binary, a TLS hello, a line that is no request) gets a
 * 400 and a close at once.
 */
#ifndef VMTRACE_HTTP_SERVER_H
#define VMTRACE_HTTP_SERVER_H

#include <stddef.h>
#include <stdint.h>

struct vt_http_server;

struct vt_http_reply {
	int status;                /* 200, 404, ... */
	const char *content_type;  /* a static string */
	char *body;                /* malloc'd; the server frees it */
	size_t len;
};

/* Answers GET path (query cut off) with accept = the Accept header or "".
 * Runs on the server's thread. */
typedef void vt_http_handler(void *ctx, const char *path, const char *accept,
			     struct vt_http_reply *reply);

/* Listens on "ADDR:PORT" ("127.0.0.1:9464", "[::1]:9464", "localhost:0";
 * port 0 picks a free one) and serves through handler. 0, or -EINVAL /
 * -errno with a one-line reason in err. */
int vt_http_start(struct vt_http_server **out, const char *listen, vt_http_handler *handler,
		  void *ctx, char *err, size_t errlen);
/* The port it listens on (the one picked, for port 0). */
uint16_t vt_http_port(const struct vt_http_server *s);
/* Stops listening, ends connections, frees. Accepts NULL. */
void vt_http_stop(struct vt_http_server *s);

#endif /* VMTRACE_HTTP_SERVER_H */
