/*
 * HTTP/1.1 transport (see http.h): loopback by default, keep-alive and
 * pipelining, requests parsed by Debian's http-parser.
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
 * limits.max_connections.  HEAD is answered as GET without the body; a
 * 405 lists the path's methods in Allow; a body coding the daemon does not
 * apply (Content-Encoding, a transfer coding but chunked) is refused.
 *
 * Answering later (gw_http_defer, gw_http_answer_after_commit) is one
 * path for every route: the connection's one commit waiter first waits for
 * the barrier, then (after the read on the pool) for the commit of what
 * the route queued; conn_close cancels it, and waits for a running read,
 * so a route never hears of a connection that went away.  The test hook
 * GRADWATCH_FAULT_HOLD_READS (lib/fault.h, only in a build with
 * -Dfault_hooks=true) holds each read until a test lets it go, to force
 * what happens between a read and its route's decision.
 *
 * (About 1,200 lines, on purpose: the parser callbacks, the connection
 * lifecycle with its limits and timers, the deferred answers and the
 * responses are one state machine over struct gw_http_conn; the routes are
 * api.c's, the pages web.c's, URL decoding http_url.c's.  Cutting the
 * transport further would move that struct and its state rules into an
 * internal header that every piece then changes.)
 */
#include "http.h"
#include "http_url.h"

#include "buf.h"
#include "config.h"
#include "fault.h"
#include "ingest.h"
#include "log.h"
#include "util.h"

#include "gw_config.h"

#include <errno.h>
#include <http_parser.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define URL_MAX 4096
#define BODY_KEEP (1024 * 1024)
#define MAX_ROUTES 32
#define IDEM_MAX 128

enum { H_OTHER, H_EXPECT, H_AUTH, H_IDEM, H_CODING };

enum hstate {
	H_IDLE,      /* between requests (keep-alive) */
	H_HEADERS,
	H_BODY,
	H_RESPOND,   /* message complete, response being produced */
	H_CLOSING,
};

struct gw_http_conn {
	uv_tcp_t tcp;
	uv_timer_t timer;
	struct gw_http *srv;
	http_parser parser;
	enum hstate state;
	bool reading;
	bool keep_alive;
	bool closing;
	bool draining;         /* answered early: read and drop the rest, then close */
	bool reserve;          /* over max_connections: /healthz and /metrics only */
	int armed;             /* the state whose deadline the timer holds, -1 none */
	int handles_open;

	char url[URL_MAX + 1];
	size_t url_len;
	bool url_too_long;
	char hfield[32];
	size_t hfield_len;
	int hwant;             /* the header being read is one we keep (H_AUTH, H_IDEM) */
	bool expect_continue;
	char authz[GW_AUTH_TOKEN_MAX + 16];
	size_t authz_len;
	char idem[IDEM_MAX + 1];
	size_t idem_len;
	bool idem_seen;        /* the request has an Idempotency-Key header */
	char cenc[64], tenc[64]; /* Content-Encoding, Transfer-Encoding values (joined by ,) */
	size_t cenc_len, tenc_len;
	bool hvalue_new;       /* the next header value piece starts a new header */
	const char *dup_header; /* a header that must come once came twice */
	char coding[48];       /* a coding the body would need that we do not apply */
	const char *coding_hdr; /* its header ("Content-Encoding", "Transfer-Encoding") */
	bool header_too_long;
	bool ws_header;        /* a header name with whitespace in it (or before its colon) */
	char ws_name[32];      /* that name, for the 400 */
	bool rejected_early;   /* a response was sent before the body was read */
	bool head;             /* HEAD: answered as GET, without the body */
	char allow[64];        /* the methods of the path, for a 405's Allow */
	char arg_why[160];     /* why the path's {run} part was refused (400) */
	const char *arg_name;  /* what that part is ("run name", "alert id") */

	const struct gw_http_route *route;
	struct gw_http_req req;
	char arg[GW_WIRE_RUN_MAX * 3 + 1];

	/* a streamed body: the route's state */
	bool streaming;
	void *rstate;

	/* body of a non-streamed request (at most BODY_KEEP bytes, or the
	 * route's body_max: body_over when it had more) */
	struct gw_buf body;
	bool body_over;

	/* data read past the end of the current message */
	char *rest;
	size_t rest_len;

	/* a deferred answer (gw_http_defer, gw_http_answer_after_commit): one
	 * waiter, for the barrier and then for the commit */
	uv_work_t work;
	bool work_busy;
	struct gw_commit_waiter waiter;
	gw_http_read_fn read;
	gw_http_then_fn then;
	void (*state_free)(void *state);   /* of req.state */
	int qstatus;
	json_t *qresult;
	json_t *answer;                    /* to send once committed */
	int answer_status;
	const char *not_yet;

	struct gw_http_conn *next, *prev;
};

struct gw_http {
	struct gw_http_opts o;
	uv_tcp_t srv;
	bool on;
	struct gw_http_conn conns;   /* list head */
	size_t nconns;
	http_parser_settings settings;
	struct gw_http_route routes[MAX_ROUTES];
	size_t nroutes;
	const char *hold_reads;      /* the test hook (gw_fault_hold_reads), or NULL */
};

struct wreq {
	uv_write_t req;
	struct gw_http_conn *c;
	bool close_after;
	bool then_continue;
	char buf[];
};

static void conn_close(struct gw_http_conn *c);
static void conn_continue(struct gw_http_conn *c);
static void start_reading(struct gw_http_conn *c);
static void on_drain_timer(uv_timer_t *t);
static void on_send_timer(uv_timer_t *t);

/* ---- responses -------------------------------------------------------------------- */

static const char *reason_phrase(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
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
	bool close_after = w->close_after || status < 0;
	bool cont = w->then_continue;
	free(w);
	if (close_after && c->draining && status >= 0 && !c->closing) {
		/* the client may still be sending the body we refused: let it
		 * finish (and read our answer) instead of resetting it; the
		 * body timer bounds how long */
		uv_shutdown_t *sd = malloc(sizeof(*sd));
		if (sd && uv_shutdown(sd, (uv_stream_t *)&c->tcp, on_shutdown) < 0)
			free(sd);
		start_reading(c);
		uv_timer_start(&c->timer, on_drain_timer, c->srv->o.cfg->http_body_timeout_ms, 0);
		return;
	}
	if (close_after) {
		conn_close(c);
		return;
	}
	if (cont)
		conn_continue(c);
}

static void send_raw(struct gw_http_conn *c, const char *head, size_t hlen, const char *body,
                     size_t blen, bool close_after, bool then_continue)
{
	struct wreq *w = malloc(sizeof(*w) + hlen + blen);
	if (!w) {
		conn_close(c);
		return;
	}
	w->c = c;
	w->close_after = close_after;
	w->then_continue = then_continue;
	memcpy(w->buf, head, hlen);
	if (blen)
		memcpy(w->buf + hlen, body, blen);
	uv_buf_t b = uv_buf_init(w->buf, (unsigned)(hlen + blen));
	if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_written) < 0) {
		free(w);
		conn_close(c);
	}
}

/* Send a complete response. */
/* `headers`: extra header lines, each ending in CRLF ("" for none). */
static void respond_h(struct gw_http_conn *c, int status, const char *ctype, const char *headers,
                      const char *body, size_t blen, bool force_close)
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
	send_raw(c, head, (size_t)hlen, body, c->head ? 0 : blen, close_after, !close_after);
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
	char *s = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(12)) : NULL;
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

/* An error that ends the connection (the request could not be read). */
static void respond_fatal(struct gw_http_conn *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void respond_fatal(struct gw_http_conn *c, int status, const char *fmt, ...)
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
static void end_request(struct gw_http_conn *c)
{
	if (c->state_free && c->req.state)
		c->state_free(c->req.state);
	c->req.state = NULL;
	c->state_free = NULL;
	json_decref(c->answer);
	c->answer = NULL;
}

static void work_run(uv_work_t *req)
{
	struct gw_http_conn *c = gw_container_of(req, struct gw_http_conn, work);
	c->qresult = NULL;
	c->qstatus = c->read(&c->req, &c->qresult);
	if (c->srv->hold_reads)
		gw_fault_hold_read(c->srv->hold_reads, c->req.query, c->req.query_len);
}

static void work_done(uv_work_t *req, int status)
{
	struct gw_http_conn *c = gw_container_of(req, struct gw_http_conn, work);
	c->work_busy = false;
	json_t *r = c->qresult;
	c->qresult = NULL;
	if (c->closing) {
		json_decref(r);
		conn_close(c); /* finish the close that waited for us */
		return;
	}
	if (status < 0 || !r) {
		json_decref(r);
		gw_http_respond_error(c, 500, "query failed");
	} else if (c->then) {
		c->then(c, &c->req, c->qstatus, r);
	} else {
		gw_http_respond_json(c, c->qstatus, r);
	}
}

static void read_after_barrier(struct gw_commit_waiter *w)
{
	struct gw_http_conn *c = gw_container_of(w, struct gw_http_conn, waiter);
	if (w->error) {
		/* a read must see what came before it, and that cannot be written */
		gw_http_respond_error(c, 503, "the database cannot be written (%s); reads wait for "
		                      "what was received before them, so retry later", w->why);
		return;
	}
	c->work_busy = true;
	if (uv_queue_work(c->srv->o.loop, &c->work, work_run, work_done) < 0) {
		c->work_busy = false;
		gw_http_respond_error(c, 500, "cannot queue the query");
	}
}

void gw_http_defer(struct gw_http_conn *c, gw_http_read_fn read, gw_http_then_fn then,
                   void *state, void (*state_free)(void *state))
{
	c->req.state = state;
	c->state_free = state_free;
	c->read = read;
	c->then = then;
	c->waiter.fn = read_after_barrier;
	gw_ingest_barrier(c->srv->o.ingest, &c->waiter);
}

static void answer_committed(struct gw_commit_waiter *w)
{
	struct gw_http_conn *c = gw_container_of(w, struct gw_http_conn, waiter);
	if (w->error) {
		gw_http_respond_error(c, 503, "%s: the database cannot be written (%s)", c->not_yet,
		                      w->why);
		return;
	}
	json_t *a = c->answer;
	c->answer = NULL;
	gw_http_respond_json(c, c->answer_status, a);
}

void gw_http_answer_after_commit(struct gw_http_conn *c, uint64_t seq, int status,
                                 json_t *answer, const char *not_yet)
{
	json_decref(c->answer);
	c->answer = answer;
	c->answer_status = status;
	c->not_yet = not_yet;
	c->waiter.seq = seq;
	c->waiter.fn = answer_committed;
	gw_ingest_wait_commit(c->srv->o.ingest, &c->waiter);
}

/* ---- routing ------------------------------------------------------------------------ */

int gw_http_route(struct gw_http *h, const struct gw_http_route *r)
{
	if (!h || h->nroutes >= MAX_ROUTES)
		return -ENOSPC;
	h->routes[h->nroutes++] = *r;
	return 0;
}

/* Add a route's method to c->allow (once; HEAD after GET). */
static void allow_add(struct gw_http_conn *c, const char *method)
{
	size_t n = strlen(c->allow), ml = strlen(method);
	for (const char *p = c->allow; (p = strstr(p, method)) != NULL; p += ml)
		if ((p == c->allow || p[-1] == ' ') && (p[ml] == ',' || p[ml] == '\0'))
			return;
	snprintf(c->allow + n, sizeof(c->allow) - n, "%s%s%s", n ? ", " : "", method,
	         strcmp(method, "GET") == 0 ? ", HEAD" : "");
}

/* Find the route of the request in c->url; fills c->route and c->req.
 * HEAD takes the GET routes (c->head: the answer has no body).
 * Returns 0, or the status to answer (400 bad path with c->arg_why, 404,
 * 405 with c->allow). */
static int find_route(struct gw_http_conn *c)
{
	const char *method = http_method_str((enum http_method)c->parser.method);
	const char *url = c->url;
	c->head = c->parser.method == HTTP_HEAD;
	c->allow[0] = '\0';
	const char *q = strchr(url, '?');
	size_t plen = q ? (size_t)(q - url) : c->url_len;
	bool path_found = false;
	c->req = (struct gw_http_req){
		.method = method,
		.path = url,
		.path_len = plen,
		.query = q ? q + 1 : "",
		.query_len = q ? c->url_len - plen - 1 : 0,
		.body = "",
		.db_path = c->srv->o.cfg->db_path,
	};
	for (size_t i = 0; i < c->srv->nroutes; i++) {
		const struct gw_http_route *r = &c->srv->routes[i];
		size_t rl = strlen(r->path);
		c->arg[0] = '\0';
		if (!r->prefix) {
			if (plen != rl || memcmp(url, r->path, rl) != 0)
				continue;
		} else {
			/* prefix + one percent-encoded run name (no raw '/'), then
			 * the route's suffix if it has one */
			if (plen <= rl || memcmp(url, r->path, rl) != 0)
				continue;
			const char *a = url + rl;
			size_t al = plen - rl;
			size_t sl = r->suffix ? strlen(r->suffix) : 0;
			if (sl && (al <= sl || memcmp(a + al - sl, r->suffix, sl) != 0))
				continue;
			al -= sl;
			if (memchr(a, '/', al))
				continue;
			/* the argument is a run name (or an id): the same rule as
			 * in the wire format */
			c->arg_name = r->arg_name ? r->arg_name : "run name";
			int an = gw_http_pct_decode(a, al, c->arg, sizeof(c->arg), false);
			if (an < 0) {
				snprintf(c->arg_why, sizeof(c->arg_why), "bad percent-encoding (a %%XX "
				         "that is not two hex digits, or %%00) or longer than %d bytes",
				         GW_WIRE_RUN_MAX);
				return 400;
			}
			if (gw_wire_check_run(c->arg, (size_t)an, c->arg_why, sizeof(c->arg_why)) < 0)
				return 400;
		}
		path_found = true;
		allow_add(c, r->method);
		if (strcmp(method, r->method) != 0 && !(c->head && strcmp(r->method, "GET") == 0))
			continue;
		c->route = r;
		c->req.arg = c->arg[0] ? c->arg : NULL;
		c->req.data = r->data;
		return 0;
	}
	return path_found ? 405 : 404;
}

/* The request has no route: answer (and close, its body is not read). */
static void route_error(struct gw_http_conn *c, int status)
{
	const struct gw_http_req *r = &c->req;
	if (status == 400)
		respond_fatal(c, 400, "bad %s in the path (percent-encoded UTF-8 of 1 to %d bytes "
		              "without control characters): %s", c->arg_name, GW_WIRE_RUN_MAX,
		              c->arg_why);
	else if (status == 405)
		respond_fatal(c, 405, "method %s not allowed on %.*s", r->method, (int)r->path_len, r->path);
	else
		respond_fatal(c, 404, "no such endpoint: %.*s", (int)r->path_len, r->path);
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
		r->handler(c, &c->req);
	} else if (r->query) {
		/* answer from the database once what came before is in it */
		gw_http_defer(c, r->query, NULL, NULL, NULL);
	} else {
		gw_http_respond_error(c, 500, "no handler");
	}
}

/* ---- parser callbacks -------------------------------------------------------------- */

static void end_stream(struct gw_http_conn *c, bool complete)
{
	if (!c->streaming)
		return;
	c->streaming = false;
	c->route->body->free(c, complete);
	c->rstate = NULL;
}

static int cb_message_begin(http_parser *p)
{
	struct gw_http_conn *c = p->data;
	c->state = H_HEADERS;
	c->url_len = 0;
	c->url_too_long = false;
	c->hfield_len = 0;
	c->expect_continue = false;
	c->authz_len = c->idem_len = 0;
	c->idem_seen = false;
	c->authz[0] = c->idem[0] = '\0';
	c->coding[0] = '\0';
	c->cenc_len = c->tenc_len = 0;
	c->dup_header = NULL;
	c->header_too_long = false;
	c->ws_header = false;
	c->ws_name[0] = '\0';
	c->rejected_early = false;
	c->head = false;
	c->route = NULL;
	c->body_over = false;
	gw_buf_free(&c->body);
	return 0;
}

static int cb_url(http_parser *p, const char *at, size_t len)
{
	struct gw_http_conn *c = p->data;
	if (c->url_len + len > URL_MAX) {
		c->url_too_long = true;
		return 0;
	}
	memcpy(c->url + c->url_len, at, len);
	c->url_len += len;
	c->url[c->url_len] = '\0';
	return 0;
}

static int cb_header_field(http_parser *p, const char *at, size_t len)
{
	struct gw_http_conn *c = p->data;
	if (c->hfield_len == SIZE_MAX)
		c->hfield_len = 0;
	c->hvalue_new = true;
	/* http-parser takes spaces in a name ("Content-Length : 5" as the
	 * length); RFC 9112 5.1 says refuse it with 400 (a proxy in front may
	 * have read the header otherwise) */
	if (!c->ws_header && (memchr(at, ' ', len) || memchr(at, '\t', len)))
		c->ws_header = true;
	if (c->hfield_len + len < sizeof(c->hfield)) {
		memcpy(c->hfield + c->hfield_len, at, len);
		c->hfield_len += len;
		c->hfield[c->hfield_len] = '\0';
	} else {
		/* a long name in pieces is none of ours: its first piece alone
		 * ("Authorization" of "Authorization-Something-Long") must not
		 * match */
		c->hfield[0] = '\0';
		c->hfield_len = sizeof(c->hfield);
	}
	c->hwant = strcasecmp(c->hfield, "expect") == 0 ? H_EXPECT
	         : strcasecmp(c->hfield, "authorization") == 0 ? H_AUTH
	         : strcasecmp(c->hfield, "idempotency-key") == 0 ? H_IDEM
	         : strcasecmp(c->hfield, "content-encoding") == 0 ||
	           strcasecmp(c->hfield, "transfer-encoding") == 0 ? H_CODING : H_OTHER;
	return 0;
}

/* The codings of a Content-Encoding or Transfer-Encoding value (its
 * headers joined by commas): remember the first one the body would need
 * and the daemon does not apply (anything but identity, and chunked for
 * Transfer-Encoding, which the parser handles). */
static void note_coding(struct gw_http_conn *c, const char *at, size_t len, bool te)
{
	for (size_t i = 0; i < len && !c->coding[0];) {
		while (i < len && (at[i] == ' ' || at[i] == '\t' || at[i] == ','))
			i++;
		size_t b = i;
		while (i < len && at[i] != ',' && at[i] != ' ' && at[i] != '\t' && at[i] != ';')
			i++;
		size_t n = i - b;
		while (i < len && at[i] != ',')   /* parameters */
			i++;
		if (!n || (n == 8 && !strncasecmp(at + b, "identity", 8)) ||
		    (te && n == 7 && !strncasecmp(at + b, "chunked", 7)))
			continue;
		snprintf(c->coding, sizeof(c->coding), "%.*s", (int)GW_MIN(n, sizeof(c->coding) - 1),
		         at + b);
		c->coding_hdr = te ? "Transfer-Encoding" : "Content-Encoding";
	}
}

/* Collect a coding header's value (it may come in pieces); one too long
 * for the buffer is a coding we do not apply either. */
static void keep_coding(struct gw_http_conn *c, const char *at, size_t len)
{
	bool te = c->hfield[0] == 't' || c->hfield[0] == 'T';
	char *buf = te ? c->tenc : c->cenc;
	size_t *n = te ? &c->tenc_len : &c->cenc_len;
	size_t cap = te ? sizeof(c->tenc) : sizeof(c->cenc);
	if (c->hvalue_new && *n && *n + 1 < cap)
		buf[(*n)++] = ',';
	c->hvalue_new = false;
	if (*n + len >= cap) {
		gw_strlcpy(c->coding, "(a value too long to read)", sizeof(c->coding));
		c->coding_hdr = te ? "Transfer-Encoding" : "Content-Encoding";
		return;
	}
	memcpy(buf + *n, at, len);
	*n += len;
}

/* Append a header value (it may come in pieces) to a kept header. */
static void keep(struct gw_http_conn *c, char *buf, size_t cap, size_t *len, const char *at,
                 size_t n)
{
	if (*len + n >= cap) {
		c->header_too_long = true;
		return;
	}
	memcpy(buf + *len, at, n);
	*len += n;
	buf[*len] = '\0';
}

static int cb_header_value(http_parser *p, const char *at, size_t len)
{
	struct gw_http_conn *c = p->data;
	if (c->ws_header && !c->ws_name[0])
		gw_strlcpy(c->ws_name, c->hfield, sizeof(c->ws_name));
	if (c->hwant == H_EXPECT && len >= 12 && strncasecmp(at, "100-continue", 12) == 0)
		c->expect_continue = true;
	else if ((c->hwant == H_AUTH || c->hwant == H_IDEM) && c->hvalue_new &&
	         (c->hwant == H_AUTH ? c->authz_len > 0 : c->idem_seen))
		c->dup_header = c->hwant == H_AUTH ? "Authorization" : "Idempotency-Key";
	else if (c->hwant == H_AUTH)
		keep(c, c->authz, sizeof(c->authz), &c->authz_len, at, len);
	else if (c->hwant == H_IDEM) {
		c->idem_seen = true;
		keep(c, c->idem, sizeof(c->idem), &c->idem_len, at, len);
	} else if (c->hwant == H_CODING) {
		keep_coding(c, at, len);
	}
	c->hvalue_new = false;
	c->hfield_len = SIZE_MAX; /* next field starts fresh */
	return 0;
}

/* The caller's token for the route's scope: fills c->req.token, or answers
 * 401/403 and returns -1. */
static int authorize(struct gw_http_conn *c)
{
	const char *tok = NULL;
	size_t len = 0;
	if (c->authz_len > 7 && strncasecmp(c->authz, "Bearer ", 7) == 0) {
		tok = c->authz + 7;
		len = c->authz_len - 7;
		while (len && (*tok == ' '))
			tok++, len--;
	}
	int status;
	c->req.token = gw_auth_check(c->srv->o.auth, tok, len, c->route->scope, &status);
	if (c->req.token)
		return 0;
	if (status == 401 && tok && len)
		respond_fatal(c, 401, "the bearer token is not a known token (it is compared whole, "
		              "with nothing after it)");
	else if (status == 401)
		respond_fatal(c, 401, "a bearer token is required (Authorization: Bearer TOKEN)");
	else
		respond_fatal(c, 403, "this token may not %s", c->route->scope == GW_SCOPE_INGEST
		                                              ? "write" : "read");
	return -1;
}

/* Valid Idempotency-Key: 1 to IDEM_MAX printable ASCII characters. */
static bool idem_ok(const char *k, size_t n)
{
	if (!n || n > IDEM_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (k[i] < 0x21 || k[i] > 0x7e)
			return false;
	return true;
}

/* Refuse the request before its body: answer, then read and drop the body
 * the client may still send, and close. */
static int refuse_early(struct gw_http_conn *c)
{
	c->rejected_early = c->draining = true;
	return -1;
}

static int cb_headers_complete(http_parser *p)
{
	struct gw_http_conn *c = p->data;
	const struct gw_cfg *cfg = c->srv->o.cfg;
	c->keep_alive = http_should_keep_alive(p);
	c->head = p->method == HTTP_HEAD;   /* every answer to it, refusals too, has no body */
	if (c->url_too_long) {
		respond_fatal(c, 431, "the URL is longer than %d bytes", URL_MAX);
		return refuse_early(c);
	}
	if (c->header_too_long) {
		respond_fatal(c, 431, "the Authorization or Idempotency-Key header is too long");
		return refuse_early(c);
	}
	if (c->ws_header) {
		respond_fatal(c, 400, "whitespace in a header name or before its colon%s%s%s "
		              "(RFC 9112 5.1)", c->ws_name[0] ? " ('" : "", c->ws_name,
		              c->ws_name[0] ? "')" : "");
		return refuse_early(c);
	}
	if (c->dup_header) {
		respond_fatal(c, 400, "the %s header appears twice (it is read once)", c->dup_header);
		return refuse_early(c);
	}
	int st = find_route(c);
	if (st) {
		route_error(c, st);
		return refuse_early(c);
	}
	if (c->reserve && !(strcmp(c->route->method, "GET") == 0 &&
	                    ((c->req.path_len == 8 && !memcmp(c->req.path, "/healthz", 8)) ||
	                     (c->req.path_len == 8 && !memcmp(c->req.path, "/metrics", 8))))) {
		respond_fatal(c, 503, "too many HTTP connections (limits.max_connections = %zu); "
		              "retry later", c->srv->o.cfg->max_connections);
		return refuse_early(c);
	}
	if (authorize(c) < 0)
		return refuse_early(c);
	note_coding(c, c->tenc, c->tenc_len, true);
	note_coding(c, c->cenc, c->cenc_len, false);
	if (c->coding[0]) {
		/* read as it is, a compressed body is only malformed lines */
		bool te = c->coding_hdr[0] == 'T';
		respond_fatal(c, te ? 501 : 415, "%s %s is not supported: send the body as it is%s",
		              c->coding_hdr, c->coding, te ? " (chunked is fine)" : " (identity)");
		return refuse_early(c);
	}
	if (c->idem_seen && !idem_ok(c->idem, c->idem_len)) {
		respond_fatal(c, 400, "Idempotency-Key is 1 to %d printable ASCII characters", IDEM_MAX);
		return refuse_early(c);
	}
	c->req.idempotency_key = c->idem_len ? c->idem : NULL;
	/* a body read to its end (streamed, or dropped past body_max) is
	 * refused before it when Content-Length says it is too large */
	if ((c->route->body || c->route->body_max) && p->content_length != ULLONG_MAX &&
	    p->content_length > cfg->max_body) {
		respond_fatal(c, 413, "the body has %llu bytes; limits.max_body_bytes is %zu",
		              (unsigned long long)p->content_length, cfg->max_body);
		return refuse_early(c);
	}
	if (c->route->body) {
		/* begin refuses by answering: then the body is not read and
		 * the connection closes after that answer */
		bool keep = c->keep_alive;
		c->keep_alive = false;
		c->streaming = true;
		if (c->route->body->begin(c, &c->req) < 0) {
			end_stream(c, false);
			return refuse_early(c);
		}
		c->keep_alive = keep;
	}
	if (c->expect_continue) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		send_raw(c, cont, sizeof(cont) - 1, NULL, 0, false, false);
	}
	c->state = H_BODY;
	return 0;
}

static int cb_body(http_parser *p, const char *at, size_t len)
{
	struct gw_http_conn *c = p->data;
	if (c->streaming)
		return c->route->body->data(c, at, len) < 0 ? -1 : 0;
	if (c->body_over)
		return 0;
	if (c->route->body_max && c->body.len + len > c->route->body_max) {
		c->body_over = true;   /* read to its end and dropped; the handler answers */
		return 0;
	}
	if (c->body.len + len > BODY_KEEP) {
		respond_fatal(c, 413, "the body is larger than %d bytes", BODY_KEEP);
		return refuse_early(c);
	}
	return gw_buf_add(&c->body, at, len) < 0 ? -1 : 0;
}

static int cb_message_complete(http_parser *p)
{
	struct gw_http_conn *c = p->data;
	c->state = H_RESPOND;
	c->armed = -1;
	uv_timer_stop(&c->timer);
	http_parser_pause(p, 1);
	return 0;
}

/* ---- connection ------------------------------------------------------------------- */

static void on_timer(uv_timer_t *t);

static void on_drain_timer(uv_timer_t *t)
{
	conn_close(t->data);
}

static void on_send_timer(uv_timer_t *t)
{
	struct gw_http_conn *c = t->data;
	gw_log_debug("http: the client did not take its answer within %u ms "
	            "(limits.http_body_timeout_ms); closing the connection",
	            c->srv->o.cfg->http_body_timeout_ms);
	conn_close(c);
}

/* Each state has one deadline from when it began (a request's headers,
 * its body, an idle keep-alive): bytes trickling in do not extend it. */
static void arm_timer(struct gw_http_conn *c)
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
		conn_close(c);
		return;
	}
	if (c->state == H_HEADERS || c->state == H_BODY) {
		const char *what = c->state == H_HEADERS ? "headers" : "body";
		gw_log_debug("http: %s timeout, closing", what);
		/* a streamed body keeps what arrived; its partial last line is lost */
		end_stream(c, false);
		if (c->reading) {
			uv_read_stop((uv_stream_t *)&c->tcp);
			c->reading = false;
		}
		respond_fatal(c, 408, "the request %s did not arrive in time", what);
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
				conn_close(c);
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
		end_stream(c, false);
		respond_fatal(c, 400, "malformed HTTP request%s: %s", in_body ? " body" : "",
		              http_errno_description(e));
		return;
	}
	arm_timer(c);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct gw_http_conn *c = s->data;
	if (c->draining) {
		if (nread < 0)
			conn_close(c);
		return;
	}
	if (nread < 0) {
		if (c->state == H_BODY || c->state == H_HEADERS)
			gw_log_debug("http: client went away mid-request");
		conn_close(c);
		return;
	}
	if (nread == 0)
		return;
	if (c->state == H_IDLE)
		c->state = H_HEADERS;
	process(c, buf->base, (size_t)nread);
}

static void start_reading(struct gw_http_conn *c)
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
	end_stream(c, true);
	end_request(c);
	c->state = H_IDLE;
	c->head = false;   /* a refusal of what follows (bytes that are no request) has its body */
	http_parser_pause(&c->parser, 0);
	arm_timer(c);
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
	start_reading(c);
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

static void conn_close(struct gw_http_conn *c)
{
	if (!c->closing) {
		c->closing = true;
		end_stream(c, c->state == H_CLOSING || c->state == H_RESPOND);
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

static void on_connection(uv_stream_t *srv, int status)
{
	struct gw_http *h = srv->data;
	if (status < 0)
		return;
	struct gw_http_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->srv = h;
	uv_tcp_init(h->o.loop, &c->tcp);
	uv_timer_init(h->o.loop, &c->timer);
	c->tcp.data = c;
	c->timer.data = c;
	c->handles_open = 2;
	c->next = h->conns.next;
	c->prev = &h->conns;
	h->conns.next->prev = c;
	h->conns.next = c;
	h->nconns++;
	c->armed = -1;
	if (uv_accept(srv, (uv_stream_t *)&c->tcp) < 0) {
		conn_close(c);
		return;
	}
	const struct gw_cfg *cfg = h->o.cfg;
	if (h->nconns > cfg->max_connections + cfg->http_reserved_connections) {
		/* refused loudly: the client reads why instead of a reset */
		static const char body[] = "{\"error\":\"too many HTTP connections; retry later\"}\n";
		char head[256];
		int n = snprintf(head, sizeof(head), "HTTP/1.1 503 Service Unavailable\r\n"
		                 "Content-Type: application/json\r\nRetry-After: 1\r\n"
		                 "Connection: close\r\nContent-Length: %zu\r\n\r\n", sizeof(body) - 1);
		gw_log_peer(GW_LOG_WARN, "http: %zu connections (limits.max_connections %zu + %zu reserved); refusing one",
		            h->nconns - 1, cfg->max_connections, cfg->http_reserved_connections);
		c->state = H_CLOSING;
		send_raw(c, head, (size_t)n, body, sizeof(body) - 1, true, false);
		return;
	}
	c->reserve = h->nconns > cfg->max_connections;
	uv_tcp_nodelay(&c->tcp, 1);
	http_parser_init(&c->parser, HTTP_REQUEST);
	c->parser.data = c;
	c->state = H_HEADERS;
	arm_timer(c);
	start_reading(c);
}

int gw_http_start(const struct gw_http_opts *o, struct gw_http **out, char *err, size_t errlen)
{
	struct gw_http *h = calloc(1, sizeof(*h));
	*out = h;
	if (!h)
		return gw_errf(err, errlen, -ENOMEM, "out of memory");
	h->o = *o;
	h->conns.next = h->conns.prev = &h->conns;
	h->hold_reads = gw_fault_hold_reads();
	h->settings.on_message_begin = cb_message_begin;
	h->settings.on_url = cb_url;
	h->settings.on_header_field = cb_header_field;
	h->settings.on_header_value = cb_header_value;
	h->settings.on_headers_complete = cb_headers_complete;
	h->settings.on_body = cb_body;
	h->settings.on_message_complete = cb_message_complete;
	const struct gw_listen *l = &o->cfg->http;
	if (!l->enabled)
		return 0;
	struct sockaddr_storage ss;
	int rc;
	uv_tcp_init(o->loop, &h->srv);
	h->srv.data = h;
	h->on = true;
	if ((rc = gw_cfg_sockaddr(l, &ss)) < 0 ||
	    (rc = uv_tcp_bind(&h->srv, (struct sockaddr *)&ss, 0)) < 0 ||
	    (rc = uv_listen((uv_stream_t *)&h->srv, 256, on_connection)) < 0) {
		char hint[200];
		return gw_errf(err, errlen, rc, "http %s:%d: %s%s", l->host, l->port, uv_strerror(rc),
		               gw_cfg_listen_hint(rc, "--http", hint, sizeof(hint)));
	}
	gw_log_info("listening on http://%s:%d", l->host, l->port);
	return 0;
}

void gw_http_drain(struct gw_http *h)
{
	if (!h)
		return;
	if (h->on && !uv_is_closing((uv_handle_t *)&h->srv))
		uv_close((uv_handle_t *)&h->srv, NULL);
	h->on = false;
	/* idle keep-alive connections go now; busy ones close after answering */
	struct gw_http_conn *c = h->conns.next;
	while (c != &h->conns) {
		struct gw_http_conn *next = c->next;
		if (c->state == H_IDLE || c->state == H_HEADERS)
			conn_close(c);
		c = next;
	}
}

size_t gw_http_busy(const struct gw_http *h)
{
	size_t n = 0;
	if (!h)
		return 0;
	for (const struct gw_http_conn *c = h->conns.next; c != &h->conns; c = c->next)
		n += c->state == H_RESPOND || c->state == H_CLOSING || c->state == H_BODY;
	return n;
}

void gw_http_stop(struct gw_http *h)
{
	if (!h)
		return;
	gw_http_drain(h);
	while (h->conns.next != &h->conns)
		conn_close(h->conns.next);
}

void gw_http_free(struct gw_http *h)
{
	free(h);
}
