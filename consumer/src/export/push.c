/*
 * push.c: the interval sender (push.h). One thread owns one curl handle and
 * takes intervals off a bounded FIFO; the recorder only ever appends.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "export/push.h"

struct item {
	uint8_t *buf;
	size_t len;
	char *labels;
	uint64_t from_s, until_s;
	struct item *next;
};

struct vt_pusher {
	struct vt_push_opts o;
	char *url;                   /* base + "/ingest" */
	char *name;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;         /* an item arrived, or stop */
	struct item *head, *tail;
	size_t queued;
	bool stopping;
	struct vt_push_stats stats;
};

static void item_free(struct item *it)
{
	if (!it)
		return;
	free(it->buf);
	free(it->labels);
	free(it);
}

static size_t discard_body(char *p, size_t size, size_t n, void *u)
{
	(void)p;
	(void)u;
	return size * n;
}

enum outcome { SENT, RETRY, REFUSED };

/* What each sample type of our pprof is, for Pyroscope: every interval's
 * values are its own (deltas, never cumulative); live ones are levels,
 * averaged rather than summed across intervals. */
#define SAMPLE_TYPE_CONFIG                                                                      \
	"{\"alloc_objects\":{\"units\":\"objects\",\"aggregation\":\"sum\",\"cumulative\":false},"        \
	"\"alloc_space\":{\"units\":\"bytes\",\"aggregation\":\"sum\",\"cumulative\":false},"            \
	"\"inuse_objects\":{\"units\":\"objects\",\"aggregation\":\"average\",\"cumulative\":false},"    \
	"\"inuse_space\":{\"units\":\"bytes\",\"aggregation\":\"average\",\"cumulative\":false},"        \
	"\"calls\":{\"units\":\"samples\",\"aggregation\":\"sum\",\"cumulative\":false}}"

static enum outcome send_once(struct vt_pusher *p, CURL *c, const struct item *it)
{
	char *name_q, query[512], *url;
	curl_mime *mime;
	curl_mimepart *part;
	long status = 0;
	CURLcode rc;
	size_t urllen;

	/* name{labels}, escaped as one query value */
	snprintf(query, sizeof(query), "%s{%s}", p->name, it->labels);
	name_q = curl_easy_escape(c, query, 0);
	if (!name_q)
		return RETRY;
	urllen = strlen(p->url) + strlen(name_q) + 160;
	url = malloc(urllen);
	if (!url) {
		curl_free(name_q);
		return RETRY;
	}
	snprintf(url, urllen, "%s?name=%s&from=%llu&until=%llu&format=pprof&spyName=vmtrace",
		 p->url, name_q, (unsigned long long)it->from_s, (unsigned long long)it->until_s);
	curl_free(name_q);

	mime = curl_mime_init(c);
	part = curl_mime_addpart(mime);
	curl_mime_name(part, "profile");
	curl_mime_filename(part, "profile.pb.gz");
	curl_mime_type(part, "application/octet-stream");
	curl_mime_data(part, (const char *)it->buf, it->len);
	part = curl_mime_addpart(mime);
	curl_mime_name(part, "sample_type_config");
	curl_mime_filename(part, "sample_type_config.json");
	curl_mime_type(part, "application/json");
	curl_mime_data(part, SAMPLE_TYPE_CONFIG, CURL_ZERO_TERMINATED);

	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_MIMEPOST, mime);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)p->o.timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)p->o.timeout_ms);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard_body);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "vmtrace");
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_mime_free(mime);
	free(url);
	if (rc != CURLE_OK)
		return RETRY;                    /* refused connection, timeout, reset */
	if (status >= 200 && status < 300)
		return SENT;
	if (status == 429 || status >= 500)
		return RETRY;                    /* busy or broken for now */
	return REFUSED;                          /* the server will never take it */
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void *sender(void *arg)
{
	struct vt_pusher *p = arg;
	CURL *c = curl_easy_init();

	for (;;) {
		struct item *it;
		enum outcome r = RETRY;
		unsigned backoff = p->o.backoff_ms;

		pthread_mutex_lock(&p->lock);
		while (!p->head && !p->stopping)
			pthread_cond_wait(&p->cond, &p->lock);
		it = p->head;
		if (it) {
			p->head = it->next;
			if (!p->head)
				p->tail = NULL;
			p->queued--;
		}
		pthread_mutex_unlock(&p->lock);
		if (!it)
			break; /* stopping and drained */

		for (unsigned t = 0; c && t < p->o.tries; t++) {
			if (t) {
				pthread_mutex_lock(&p->lock);
				p->stats.retried++;
				pthread_mutex_unlock(&p->lock);
				sleep_ms(backoff);
				backoff *= 2;
			}
			r = send_once(p, c, it);
			if (r != RETRY)
				break;
		}
		pthread_mutex_lock(&p->lock);
		if (r == SENT)
			p->stats.sent++;
		else
			p->stats.failed++;
		pthread_mutex_unlock(&p->lock);
		item_free(it);
	}
	if (c)
		curl_easy_cleanup(c);
	return NULL;
}

int vt_push_check(const struct vt_push_opts *o, char *err, size_t errlen)
{
	if (strncmp(o->url, "http://", 7) && strncmp(o->url, "https://", 8)) {
		snprintf(err, errlen, "--push: '%s' is not an http:// or https:// URL", o->url);
		return -EINVAL;
	}
	if (!o->name || !*o->name || strpbrk(o->name, "{},= ")) {
		snprintf(err, errlen, "--push-name: '%s' is empty or holds one of {},= or a space",
			 o->name ? o->name : "");
		return -EINVAL;
	}
	return 0;
}

int vt_pusher_start(struct vt_pusher **out, const struct vt_push_opts *o, char *err, size_t errlen)
{
	struct vt_pusher *p;
	size_t len;
	int r;

	*out = NULL;
	r = vt_push_check(o, err, errlen);
	if (r)
		return r;
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		snprintf(err, errlen, "--push: libcurl would not start");
		return -ENOMEM;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->o = *o;
	if (p->o.queue_max < 1)
		p->o.queue_max = 1;
	if (p->o.tries < 1)
		p->o.tries = 1;
	len = strlen(o->url);
	while (len && o->url[len - 1] == '/')
		len--; /* "http://h:4040/" and "http://h:4040" alike */
	p->url = malloc(len + sizeof("/ingest"));
	p->name = strdup(o->name);
	if (!p->url || !p->name) {
		free(p->url);
		free(p->name);
		free(p);
		return -ENOMEM;
	}
	memcpy(p->url, o->url, len);
	memcpy(p->url + len, "/ingest", sizeof("/ingest"));
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	r = pthread_create(&p->thread, NULL, sender, p);
	if (r) {
		snprintf(err, errlen, "--push: cannot start the sender thread: %s", strerror(r));
		free(p->url);
		free(p->name);
		free(p);
		return -r;
	}
	*out = p;
	return 0;
}

int vt_pusher_enqueue(struct vt_pusher *p, uint8_t *buf, size_t len, const char *labels,
		      uint64_t from_s, uint64_t until_s)
{
	struct item *it = calloc(1, sizeof(*it)), *old = NULL;

	if (!it || !(it->labels = strdup(labels ? labels : ""))) {
		free(it);
		free(buf);
		return -ENOMEM;
	}
	it->buf = buf;
	it->len = len;
	it->from_s = from_s;
	it->until_s = until_s;
	pthread_mutex_lock(&p->lock);
	if (p->queued == p->o.queue_max) {
		/* the oldest goes: the newest says most about now */
		old = p->head;
		p->head = old->next;
		if (!p->head)
			p->tail = NULL;
		p->queued--;
		p->stats.dropped++;
	}
	if (p->tail)
		p->tail->next = it;
	else
		p->head = it;
	p->tail = it;
	p->queued++;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	item_free(old);
	return 0;
}

void vt_pusher_stats(struct vt_pusher *p, struct vt_push_stats *out)
{
	pthread_mutex_lock(&p->lock);
	*out = p->stats;
	pthread_mutex_unlock(&p->lock);
}

void vt_pusher_stop(struct vt_pusher *p, struct vt_push_stats *final)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	if (final)
		*final = p->stats;
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p->url);
	free(p->name);
	free(p);
	curl_global_cleanup();
}
