/*
 * libcurl's multi_socket API on a libuv loop (see curl_uv.h).
 *
 * The shape is that of curl's docs/examples/multi-uv.c, with its weak spots
 * fixed: contexts are reached through handle->data and curl_multi_assign(),
 * not casts of first members; every libcurl and libuv return code is
 * checked; finished transfers are reaped after timeouts as well as after
 * socket events; and the timer callback only (re)arms the uv timer, never
 * calls back into libcurl (a 0 ms timeout runs on the next loop turn).  A
 * new request is kicked off at once (see gw_alert_http_post) instead of
 * waiting for that turn.  A
 * socket's uv_poll_t is freed in its close callback, so libcurl reusing the
 * descriptor number at once is harmless: the old watcher is already
 * stopped when uv_close() returns.
 */
#include "curl_uv.h"

#include "log.h"

#include "gw_config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void on_poll_closed(uv_handle_t *hd);

struct gw__alert_sock {
	uv_poll_t poll;
	curl_socket_t fd;
	struct gw_alert_http *h;
	struct gw__alert_sock *next;   /* h->socks, until its close is requested */
};

static void sock_close(struct gw_alert_http *h, struct gw__alert_sock *c)
{
	for (struct gw__alert_sock **p = &h->socks; *p; p = &(*p)->next) {
		if (*p == c) {
			*p = c->next;
			break;
		}
	}
	uv_poll_stop(&c->poll);
	h->closing_handles++;
	uv_close((uv_handle_t *)&c->poll, on_poll_closed);
}

static void list_add(struct gw_alert_req *head, struct gw_alert_req *r)
{
	r->next = head->next;
	r->prev = head;
	head->next->prev = r;
	head->next = r;
}

static void list_del(struct gw_alert_req *r)
{
	r->prev->next = r->next;
	r->next->prev = r->prev;
	r->next = r->prev = r;
}

static void handle_closed(struct gw_alert_http *h)
{
	if (--h->closing_handles == 0 && h->closing && h->on_closed)
		h->on_closed(h);
}

static void on_poll_closed(uv_handle_t *hd)
{
	struct gw__alert_sock *c = hd->data;
	struct gw_alert_http *h = c->h;
	free(c);
	handle_closed(h);
}

static void on_timer_closed(uv_handle_t *hd)
{
	handle_closed(hd->data);
}

static int curl_errno(CURLcode c)
{
	switch (c) {
	case CURLE_OK: return 0;
	case CURLE_OPERATION_TIMEDOUT: return -ETIMEDOUT;
	case CURLE_COULDNT_CONNECT: return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY: return -EHOSTUNREACH;
	case CURLE_GOT_NOTHING:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_PARTIAL_FILE: return -ECONNRESET;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CACERT_BADFILE: return -EPROTO;
	case CURLE_OUT_OF_MEMORY: return -ENOMEM;
	default: return -EIO;
	}
}

static void req_free_parts(struct gw_alert_req *r)
{
	if (r->easy) {
		curl_multi_remove_handle(r->h->multi, r->easy);
		curl_easy_cleanup(r->easy);
		r->easy = NULL;
	}
	curl_slist_free_all(r->headers);
	r->headers = NULL;
	free(r->body);
	r->body = NULL;
}

/* Hand every finished transfer to its owner. */
static void reap(struct gw_alert_http *h)
{
	CURLMsg *msg;
	int left;
	while ((msg = curl_multi_info_read(h->multi, &left))) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		char *priv = NULL;
		CURLcode cc = msg->data.result;
		CURL *e = msg->easy_handle;
		if (curl_easy_getinfo(e, CURLINFO_PRIVATE, &priv) != CURLE_OK || !priv) {
			gw_log_err("alerts: a finished transfer has no owner");
			curl_multi_remove_handle(h->multi, e);
			curl_easy_cleanup(e);
			continue;
		}
		struct gw_alert_req *r = (struct gw_alert_req *)priv;
		struct gw_alert_http_result res = {.rc = curl_errno(cc), .retry_after_s = -1};
		curl_off_t ra = 0;
		double total = 0;
		if (cc == CURLE_OK) {
			curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &res.status);
			if (curl_easy_getinfo(e, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
				res.retry_after_s = (long)ra;
		}
		curl_easy_getinfo(e, CURLINFO_TOTAL_TIME, &total);
		res.seconds = total;
		res.error = cc == CURLE_OK ? NULL : r->errbuf[0] ? r->errbuf : curl_easy_strerror(cc);
		res.body = r->resp;
		res.body_len = r->resp_len;
		list_del(r);
		/* the message points into e: done with it before freeing */
		req_free_parts(r);
		r->done(r, &res);
		if (h->closing)
			return;
	}
}

static void on_poll(uv_poll_t *p, int status, int events)
{
	struct gw__alert_sock *c = p->data;
	struct gw_alert_http *h = c->h;
	int flags = 0, running = 0;
	if (status < 0)
		flags = CURL_CSELECT_ERR;
	else {
		if (events & UV_READABLE)
			flags |= CURL_CSELECT_IN;
		if (events & UV_WRITABLE)
			flags |= CURL_CSELECT_OUT;
	}
	CURLMcode mc = curl_multi_socket_action(h->multi, c->fd, flags, &running);
	if (mc != CURLM_OK)
		gw_log_err("alerts: curl_multi_socket_action: %s", curl_multi_strerror(mc));
	reap(h);
}

static void on_timeout(uv_timer_t *t)
{
	struct gw_alert_http *h = t->data;
	int running = 0;
	CURLMcode mc = curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	if (mc != CURLM_OK)
		gw_log_err("alerts: curl_multi_socket_action: %s", curl_multi_strerror(mc));
	reap(h);
}

/* CURLMOPT_TIMERFUNCTION: only arm or stop the uv timer. */
static int cb_timer(CURLM *multi, long timeout_ms, void *userp)
{
	struct gw_alert_http *h = userp;
	(void)multi;
	if (h->closing)
		return 0;
	if (timeout_ms < 0)
		return uv_timer_stop(&h->timer) == 0 ? 0 : -1;
	return uv_timer_start(&h->timer, on_timeout, (uint64_t)timeout_ms, 0) == 0 ? 0 : -1;
}

/* CURLMOPT_SOCKETFUNCTION: watch, re-watch or forget a socket. */
static int cb_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct gw_alert_http *h = userp;
	struct gw__alert_sock *c = socketp;
	(void)easy;
	if (what == CURL_POLL_REMOVE) {
		if (c) {
			if (!h->closing)
				curl_multi_assign(h->multi, s, NULL);
			sock_close(h, c);
		}
		return 0;
	}
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return -1;
		c->fd = s;
		c->h = h;
		int rc = uv_poll_init_socket(h->loop, &c->poll, s);
		if (rc < 0) {
			gw_log_err("alerts: cannot watch a socket: %s", uv_strerror(rc));
			free(c);
			return -1;
		}
		c->poll.data = c;
		c->next = h->socks;
		h->socks = c;
		if (curl_multi_assign(h->multi, s, c) != CURLM_OK) {
			sock_close(h, c);
			return -1;
		}
	}
	int ev = 0;
	if (what & CURL_POLL_IN)
		ev |= UV_READABLE;
	if (what & CURL_POLL_OUT)
		ev |= UV_WRITABLE;
	int rc = uv_poll_start(&c->poll, ev, on_poll);
	if (rc < 0) {
		gw_log_err("alerts: cannot watch a socket: %s", uv_strerror(rc));
		return -1;
	}
	return 0;
}

static size_t cb_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct gw_alert_req *r = userdata;
	size_t n = size * nmemb;
	size_t room = sizeof(r->resp) - 1 - r->resp_len;
	size_t take = n < room ? n : room;
	memcpy(r->resp + r->resp_len, ptr, take);
	r->resp_len += take;
	r->resp[r->resp_len] = '\0';
	return n;  /* the rest is read and dropped */
}

int gw_alert_http_start(struct gw_alert_http *h, uv_loop_t *loop)
{
	memset(h, 0, sizeof(*h));
	h->loop = loop;
	h->reqs.next = h->reqs.prev = &h->reqs;
	h->multi = curl_multi_init();
	if (!h->multi)
		return -ENOMEM;
	int rc = uv_timer_init(loop, &h->timer);
	if (rc < 0) {
		curl_multi_cleanup(h->multi);
		return rc;
	}
	h->timer.data = h;
	h->timer_on = true;
	if (curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, cb_socket) != CURLM_OK ||
	    curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h) != CURLM_OK ||
	    curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, cb_timer) != CURLM_OK ||
	    curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h) != CURLM_OK) {
		gw_log_crit("alerts: libcurl refused the multi_socket callbacks");
		return -ENOTSUP;  /* the caller stops h */
	}
	return 0;
}

#define SETOPT(e, opt, val) \
	do { \
		if (curl_easy_setopt(e, opt, val) != CURLE_OK) \
			goto fail; \
	} while (0)

int gw_alert_http_post(struct gw_alert_http *h, struct gw_alert_req *r,
                       const struct gw_alert_post *p, gw_alert_req_cb done)
{
	r->h = h;
	r->headers = p->headers;
	r->body = p->body;
	r->done = done;
	r->resp_len = 0;
	r->resp[0] = '\0';
	r->errbuf[0] = '\0';
	r->next = r->prev = r;
	if (h->closing) {
		req_free_parts(r);
		return -ECANCELED;
	}
	CURL *e = curl_easy_init();
	if (!e) {
		req_free_parts(r);
		return -ENOMEM;
	}
	r->easy = e;
	SETOPT(e, CURLOPT_URL, p->url);
	SETOPT(e, CURLOPT_PROTOCOLS_STR, "http,https");
	SETOPT(e, CURLOPT_NOSIGNAL, 1L);
	SETOPT(e, CURLOPT_POST, 1L);
	SETOPT(e, CURLOPT_POSTFIELDS, r->body);
	SETOPT(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)p->len);
	SETOPT(e, CURLOPT_HTTPHEADER, r->headers);
	SETOPT(e, CURLOPT_USERAGENT, "gradwatch/" GW_VERSION);
	SETOPT(e, CURLOPT_CONNECTTIMEOUT_MS, p->connect_timeout_ms);
	SETOPT(e, CURLOPT_TIMEOUT_MS, p->timeout_ms);
	SETOPT(e, CURLOPT_SSL_VERIFYPEER, p->tls_verify ? 1L : 0L);
	SETOPT(e, CURLOPT_SSL_VERIFYHOST, p->tls_verify ? 2L : 0L);
	if (p->ca_file)
		SETOPT(e, CURLOPT_CAINFO, p->ca_file);
	SETOPT(e, CURLOPT_FOLLOWLOCATION, 0L);
	SETOPT(e, CURLOPT_WRITEFUNCTION, cb_write);
	SETOPT(e, CURLOPT_WRITEDATA, r);
	SETOPT(e, CURLOPT_ERRORBUFFER, r->errbuf);
	SETOPT(e, CURLOPT_PRIVATE, (char *)r);
	if (curl_multi_add_handle(h->multi, e) != CURLM_OK)
		goto fail;
	list_add(&h->reqs, r);
	/* Start it now rather than on the next loop turn (after every pending
	 * read): on a kept-alive connection the request is written here.
	 * Finished transfers are not reaped here, so `done` never runs inside
	 * the caller; the 0 ms timer reaps them on the next turn. */
	int running = 0;
	CURLMcode mc = curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	if (mc != CURLM_OK)
		gw_log_err("alerts: curl_multi_socket_action: %s", curl_multi_strerror(mc));
	uv_timer_start(&h->timer, on_timeout, 0, 0);
	return 0;
fail:
	curl_easy_cleanup(e);
	r->easy = NULL;
	req_free_parts(r);
	return -EINVAL;
}

/* Abort a transfer in flight; its done callback is not called. */
static void gw_alert_http_cancel(struct gw_alert_req *r)
{
	if (r->next == r)
		return;
	list_del(r);
	req_free_parts(r);
}

void gw_alert_http_stop(struct gw_alert_http *h, void (*on_closed)(struct gw_alert_http *h))
{
	if (h->closing)
		return;
	h->closing = true;
	h->on_closed = on_closed;
	while (h->reqs.next != &h->reqs)
		gw_alert_http_cancel(h->reqs.next);
	/* libcurl closes its cached connections here and tells cb_socket to
	 * forget their sockets; then nothing of it is left on the loop */
	if (h->multi)
		curl_multi_cleanup(h->multi);
	h->multi = NULL;
	while (h->socks)
		sock_close(h, h->socks);
	if (h->timer_on) {
		h->closing_handles++;
		uv_close((uv_handle_t *)&h->timer, on_timer_closed);
	} else if (!h->closing_handles && on_closed) {
		on_closed(h);   /* a failed start: nothing was opened */
	}
}
