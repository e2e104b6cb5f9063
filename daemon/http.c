/*
 * HTTP/1.1 transport (see http.h): loopback by default, keep-alive and
 * pipelining, requests parsed by Debian's http-parser.  This file is a
 * connection's life: reading, driving the parser over what was read (its
 * callbacks are http_parse.c's), dispatching a whole request to its route,
 * the responses and closing; the deferred answers are http_answer.c's,
 * the listener, the route table and the server's start and stop are
 * http_server.c's (http_impl.h between them).
 *
 * One request is handled at a time per connection: when a message is
 * complete the parser is paused and reading stops until the response is
 * written, so pipelined requests are answered in order.  A streamed body
 * (gw_http_body_ops) reaches its route as it arrives; other bodies are kept
 * (at most BODY_KEEP bytes) for the route.  Thread-pool queries run after
 * the server's barrier (everything queued so far committed) and get only
 * the request and the read-only database path, never loop-owned state.
 *
 * Limits: header time, body time and body size (413 before reading a
 * too-large body when Content-Length says so), the time a client takes to
 * read an answer (the body deadline again), keep-alive idle time, and
 * limits.max_connections.  HEAD is answered as GET without the body.
 *
 * Answering later (gw_http_defer, gw_http_answer_after_commit, in
 * http_answer.c) is one path for every route: the connection's one commit waiter first waits for
 * the barrier, then (after the read on the pool) for the commit of what
 * the route queued; conn_close cancels it, and waits for a running read,
 * so a route never hears of a connection that went away.  The test hook
 * GRADWATCH_FAULT_HOLD_READS (lib/fault.h, only in a build with
 * -Dfault_hooks=true) holds each read until a test lets it go, to force
 * what happens between a read and its route's decision.
 */
#include "http_impl.h"

#include "config.h"
#include "fault.h"
#include "log.h"
#include "util.h"

#include "gw_config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct wreq {
	uv_write_t req;
	struct gw_http_conn *c;
	bool close_after;
	bool then_continue;
	char *owned;               /* a body sent in place (freed once written), or NULL */
	size_t owned_len, owned_sent;   /* ... its length, and how much was handed to uv_write */
	char buf[];
};

/* A body sent in place goes out SEND_CHUNK bytes a write: uv_write copies
 * what the socket takes at once, and 16 answers of 3 MB finishing in one
 * loop iteration held the loop for tens of ms (bench/read_stall.py). */
#define SEND_CHUNK (256 * 1024)


static void conn_continue(struct gw_http_conn *c);
static void on_drain_timer(uv_timer_t *t);
static void on_send_timer(uv_timer_t *t);

/* ---- responses -------------------------------------------------------------------- */

static const char *reason_phrase(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 304: return "Not Modified";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 413: return "Content Too Large";
	case 415: return "Unsupported Media Type";
	case 422: return "Unprocessable Content";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 507: return "Insufficient Storage";
	default: return "Status";
	}
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	free(req);
}

static void on_written(uv_write_t *req, int status)
{
	struct wreq *w = gw_container_of(req, struct wreq, req);
	struct gw_http_conn *c = w->c;
	if (status >= 0 && w->owned && w->owned_sent < w->owned_len && !c->closing) {
		/* the next piece of the body, in a later loop iteration */
		size_t n = GW_MIN(SEND_CHUNK, w->owned_len - w->owned_sent);
		uv_buf_t b = uv_buf_init(w->owned + w->owned_sent, (unsigned)n);
		w->owned_sent += n;
		if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_written) == 0)
			return;
		status = UV_EPIPE;
	}
	bool close_after = w->close_after || status < 0 || (w->owned && w->owned_sent < w->owned_len);
	bool cont = w->then_continue;
	free(w->owned);
	free(w);
	if (close_after && c->draining && status >= 0 && !c->closing) {
		/* the client may still be sending the body we refused: let it
		 * finish (and read our answer) instead of resetting it; the
		 * body timer bounds how long */
		uv_shutdown_t *sd = malloc(sizeof(*sd));
		if (sd && uv_shutdown(sd, (uv_stream_t *)&c->tcp, on_shutdown) < 0)
			free(sd);
		gw__http_start_reading(c);
		uv_timer_start(&c->timer, on_drain_timer, c->srv->o.cfg->http_body_timeout_ms, 0);
		return;
	}
	if (close_after) {
		gw__http_conn_close(c);
		return;
	}
	if (cont)
		conn_continue(c);
}

/* Send head and body; a body in `owned` (heap, taken over) is written in
 * place, not copied: an answer of tens of MB costs the loop no memcpy. */
static void send_parts(struct gw_http_conn *c, const char *head, size_t hlen, const char *body,
                       size_t blen, char *owned, bool close_after, bool then_continue)
{
	size_t copy = owned ? 0 : blen;
	struct wreq *w = malloc(sizeof(*w) + hlen + copy);
	if (!w) {
		free(owned);
		gw__http_conn_close(c);
		return;
	}
	w->c = c;
	w->close_after = close_after;
	w->then_continue = then_continue;
	w->owned = owned;
	w->owned_len = owned ? blen : 0;
	w->owned_sent = owned ? GW_MIN(blen, (size_t)SEND_CHUNK) : 0;
	memcpy(w->buf, head, hlen);
	if (copy)
		memcpy(w->buf + hlen, body, copy);
	uv_buf_t b[2] = {uv_buf_init(w->buf, (unsigned)(hlen + copy)),
	                 uv_buf_init(owned, (unsigned)w->owned_sent)};
	if (uv_write(&w->req, (uv_stream_t *)&c->tcp, b, owned && blen ? 2 : 1, on_written) < 0) {
		free(w->owned);
		free(w);
		gw__http_conn_close(c);
	}
}

void gw__http_send_raw(struct gw_http_conn *c, const char *head, size_t hlen, const char *body,
                     size_t blen, bool close_after, bool then_continue)
{
	send_parts(c, head, hlen, body, blen, NULL, close_after, then_continue);
}

/* Send a complete response. */
/* `headers`: extra header lines, each ending in CRLF ("" for none). */
static void respond_hx(struct gw_http_conn *c, int status, const char *ctype,
                       const char *headers, const char *body, size_t blen, char *owned,
                       bool force_close)
{
	bool close_after = force_close || !c->keep_alive || !c->srv->on;
	char head[1536];
	int hlen = snprintf(head, sizeof(head),
	                    "HTTP/1.1 %d %s\r\n"
	                    "Content-Type: %s\r\n"
	                    "Content-Length: %zu\r\n"
	                    "Cache-Control: no-store\r\n"
	                    "X-Content-Type-Options: nosniff\r\n"
	                    "Server: gradwatchd/" GW_VERSION "\r\n"
	                    "%s%s%s%s%s%s"
	                    "\r\n",
	                    status, reason_phrase(status), ctype, blen, headers,
	                    status == 405 ? "Allow: " : "", status == 405 ? c->allow : "",
	                    status == 405 ? "\r\n" : "",
	                    status == 401 ? "WWW-Authenticate: Bearer realm=\"gradwatch\"\r\n"
	                    : status == 503 ? "Retry-After: 1\r\n" : "",
	                    close_after ? "Connection: close\r\n" : "");
	GW_REQUIRE(hlen > 0 && (size_t)hlen < sizeof(head));
	c->state = H_CLOSING;
	/* the client has http_body_timeout_ms to take the answer: one that
	 * never reads would hold the connection for good */
	c->armed = -1;
	uv_timer_start(&c->timer, on_send_timer, c->srv->o.cfg->http_body_timeout_ms, 0);
	/* HEAD: the headers GET would have, Content-Length included, and no
	 * body (RFC 9110 9.3.2) */
	if (c->head) {
		free(owned);
		owned = NULL;
		blen = 0;
	}
	send_parts(c, head, (size_t)hlen, body, blen, owned, close_after, !close_after);
}

static void respond_h(struct gw_http_conn *c, int status, const char *ctype, const char *headers,
                      const char *body, size_t blen, bool force_close)
{
	respond_hx(c, status, ctype, headers, body, blen, NULL, force_close);
}

void gw__http_respond_owned(struct gw_http_conn *c, int status, char *json, size_t len)
{
	char etag[40] = "";
	if (c->etag[0] && (status == 200 || status == 304))
		snprintf(etag, sizeof(etag), "ETag: %s\r\n", c->etag);
	respond_hx(c, status, "application/json", etag, json, len, json, false);
}

static void respond(struct gw_http_conn *c, int status, const char *ctype, const char *body,
                    size_t blen, bool force_close)
{
	respond_h(c, status, ctype, "", body, blen, force_close);
}

void gw_http_respond_page(struct gw_http_conn *c, int status, const char *ctype,
                          const char *headers, const char *body, size_t len)
{
	respond_h(c, status, ctype, headers, body, len, false);
}

static void respond_json_str(struct gw_http_conn *c, int status, char *s, bool force_close)
{
	if (!s) {
		static const char oom[] = "{\"error\":\"out of memory\"}\n";
		respond(c, 500, "application/json", oom, sizeof(oom) - 1, true);
		return;
	}
	size_t n = strlen(s);
	char *t = realloc(s, n + 2);
	if (t) {
		s = t;
		s[n++] = '\n';
	}
	respond(c, status, "application/json", s, n, force_close);
	free(s);
}

void gw_http_respond_json(struct gw_http_conn *c, int status, json_t *j)
{
	char *s = j ? json_dumps(j, ANSWER_JSON_FLAGS) : NULL;
	json_decref(j);
	respond_json_str(c, status, s, false);
}

void gw_http_respond_text(struct gw_http_conn *c, int status, const char *ctype,
                          const char *body, size_t len)
{
	respond(c, status, ctype, body, len, false);
}

json_t *gw_http_error_json(const char *msg)
{
	/* the message may quote the request (its path, a parameter): bytes
	 * that are not UTF-8 would make jansson refuse it */
	char clean[2048];
	gw_utf8_clean(clean, sizeof(clean), msg, strlen(msg));
	return json_pack("{s:s}", "error", clean);
}

static void respond_verror(struct gw_http_conn *c, int status, bool force_close,
                           const char *fmt, va_list ap)
{
	char msg[512];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	json_t *j = gw_http_error_json(msg);
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	respond_json_str(c, status, s, force_close);
}

void gw_http_respond_error(struct gw_http_conn *c, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	respond_verror(c, status, false, fmt, ap);
	va_end(ap);
}

void gw__http_respond_fatal(struct gw_http_conn *c, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	respond_verror(c, status, true, fmt, ap);
	va_end(ap);
}

void *gw_http_conn_state(const struct gw_http_conn *c)
{
	return c->rstate;
}

void gw_http_conn_set_state(struct gw_http_conn *c, void *state)
{
	c->rstate = state;
}

void gw_http_conn_close_after(struct gw_http_conn *c)
{
	c->keep_alive = false;
}

/* ---- answering later: barrier, thread-pool read, commit ------------------------------ */

/* The request is done (answered, or its connection closing with no read
 * running): release what the deferred path held for it. */
/* A deferred read is over (answered, refused, or its connection gone). */
void gw__http_read_release(struct gw_http_conn *c)
{
	if (c->read_counted) {
		c->read_counted = false;
		c->srv->reads--;
	}
}

static void end_request(struct gw_http_conn *c)
{
	gw__http_read_release(c);
	free(c->qtext);
	c->qtext = NULL;
	if (c->state_free && c->req.state)
		c->state_free(c->req.state);
	c->req.state = NULL;
	c->state_free = NULL;
	json_decref(c->answer);
	c->answer = NULL;
}

/* A whole (non-streamed) request is in: answer it. */
static void dispatch(struct gw_http_conn *c)
{
	if (c->streaming) {
		c->route->body->end(c);
		return;
	}
	const struct gw_http_route *r = c->route;
	c->req.body = c->body.p ? c->body.p : "";
	c->req.body_len = c->body.len;
	c->req.body_over = c->body_over;
	if (r->handler) {
		/* a query route's is gw__http_answer_query (gw_http_route) */
		r->handler(c, &c->req);
	} else {
		gw_http_respond_error(c, 500, "no handler");
	}
}


void gw__http_end_stream(struct gw_http_conn *c, bool complete)
{
	if (!c->streaming)
		return;
	c->streaming = false;
	c->route->body->free(c, complete);
	c->rstate = NULL;
}

/* ---- connection ------------------------------------------------------------------- */

static void on_timer(uv_timer_t *t);

static void on_drain_timer(uv_timer_t *t)
{
	gw__http_conn_close(t->data);
}

static void on_send_timer(uv_timer_t *t)
{
	struct gw_http_conn *c = t->data;
	gw_log_debug("http: the client did not take its answer within %u ms "
	            "(limits.http_body_timeout_ms); closing the connection",
	            c->srv->o.cfg->http_body_timeout_ms);
	gw__http_conn_close(c);
}

/* Each state has one deadline from when it began (a request's headers,
 * its body, an idle keep-alive): bytes trickling in do not extend it. */
void gw__http_arm_timer(struct gw_http_conn *c)
{
	const struct gw_cfg *cfg = c->srv->o.cfg;
	if (c->armed == (int)c->state)
		return;
	c->armed = (int)c->state;
	unsigned ms = 0;
	switch (c->state) {
	case H_IDLE: ms = cfg->http_idle_timeout_ms; break;
	case H_HEADERS: ms = cfg->http_header_timeout_ms; break;
	case H_BODY: ms = cfg->http_body_timeout_ms; break;
	default: break;
	}
	if (ms)
		uv_timer_start(&c->timer, on_timer, ms, 0);
	else
		uv_timer_stop(&c->timer);
}

static void on_timer(uv_timer_t *t)
{
	struct gw_http_conn *c = t->data;
	c->armed = -1;
	if (c->state == H_IDLE) {
		gw__http_conn_close(c);
		return;
	}
	if (c->state == H_HEADERS || c->state == H_BODY) {
		const char *what = c->state == H_HEADERS ? "headers" : "body";
		gw_log_debug("http: %s timeout, closing", what);
		/* a streamed body keeps what arrived; its partial last line is lost */
		gw__http_end_stream(c, false);
		if (c->reading) {
			uv_read_stop((uv_stream_t *)&c->tcp);
			c->reading = false;
		}
		gw__http_respond_fatal(c, 408, "the request %s did not arrive in time", what);
	}
}

static void process(struct gw_http_conn *c, const char *data, size_t len)
{
	size_t n = http_parser_execute(&c->parser, &c->srv->settings, data, len);
	enum http_errno e = HTTP_PARSER_ERRNO(&c->parser);
	if (c->state == H_CLOSING || c->rejected_early)
		return;
	if (e == HPE_PAUSED) {
		/* a whole message: keep what follows it for later */
		if (n < len) {
			char *r = malloc(len - n);
			if (!r) {
				gw__http_conn_close(c);
				return;
			}
			memcpy(r, data + n, len - n);
			free(c->rest);
			c->rest = r;
			c->rest_len = len - n;
		}
		if (c->reading) {
			uv_read_stop((uv_stream_t *)&c->tcp);
			c->reading = false;
		}
		dispatch(c);
		return;
	}
	if (e != HPE_OK) {
		bool in_body = c->streaming;
		gw__http_end_stream(c, false);
		gw__http_respond_fatal(c, 400, "malformed HTTP request%s: %s", in_body ? " body" : "",
		              http_errno_description(e));
		return;
	}
	gw__http_arm_timer(c);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct gw_http_conn *c = s->data;
	if (c->draining) {
		if (nread < 0)
			gw__http_conn_close(c);
		return;
	}
	if (nread < 0) {
		if (c->state == H_BODY || c->state == H_HEADERS)
			gw_log_debug("http: client went away mid-request");
		gw__http_conn_close(c);
		return;
	}
	if (nread == 0)
		return;
	if (c->state == H_IDLE)
		c->state = H_HEADERS;
	process(c, buf->base, (size_t)nread);
}

void gw__http_start_reading(struct gw_http_conn *c)
{
	if (c->reading || c->closing)
		return;
	c->reading = true;
	uv_read_start((uv_stream_t *)&c->tcp, gw_ingest_alloc_slab, on_read);
}

/* The response is out: take the next pipelined request or wait for one. */
static void conn_continue(struct gw_http_conn *c)
{
	if (c->closing)
		return;
	gw__http_end_stream(c, true);
	end_request(c);
	c->state = H_IDLE;
	c->head = false;   /* a refusal of what follows (bytes that are no request) has its body */
	http_parser_pause(&c->parser, 0);
	gw__http_arm_timer(c);
	if (c->rest) {
		char *r = c->rest;
		size_t n = c->rest_len;
		c->rest = NULL;
		c->rest_len = 0;
		c->state = H_HEADERS;
		process(c, r, n);
		free(r);
		if (c->closing || c->state == H_RESPOND || c->state == H_CLOSING)
			return;
	}
	gw__http_start_reading(c);
}

static void on_close_handle(uv_handle_t *h)
{
	struct gw_http_conn *c = h->data;
	if (--c->handles_open == 0) {
		end_request(c);
		free(c->rest);
		gw_buf_free(&c->body);
		free(c);
	}
}

void gw__http_conn_close(struct gw_http_conn *c)
{
	if (!c->closing) {
		c->closing = true;
		gw__http_end_stream(c, c->state == H_CLOSING || c->state == H_RESPOND);
		gw_ingest_cancel_wait(c->srv->o.ingest, &c->waiter);
		c->prev->next = c->next;
		c->next->prev = c->prev;
		c->srv->nconns--;
	}
	if (c->work_busy)
		return; /* work_done calls us again */
	if (uv_is_closing((uv_handle_t *)&c->tcp))
		return;
	uv_close((uv_handle_t *)&c->timer, on_close_handle);
	uv_close((uv_handle_t *)&c->tcp, on_close_handle);
}

