/*
 * HTTP/1.1 API on loopback (docs/api.md): POST /v1/ingest, GET /healthz,
 * GET /v1/runs, GET /v1/runs/{run}, GET /v1/runs/{run}/alerts, and the
 * routes other modules register with gw_http_route().
 *
 * Requests are parsed by Debian's http-parser.  One request is handled at a
 * time per connection: when a message is complete the parser is paused and
 * reading stops until the response is written, so pipelined requests are
 * answered in order.  An ingest body is split into lines as it streams in
 * and every line goes through gw_ingest_line at once; the response waits
 * (without blocking the loop) until the store has committed the body's last
 * line.  Database reads run on the libuv thread pool.  Limits: header time,
 * body time and body size (413 before reading a too-large body when
 * Content-Length says so), and keep-alive idle time.
 */
#include "daemon.h"
#include "http.h"

#include "kern.h"
#include "resume_check.h"
#include "lines.h"
#include "log.h"
#include "util.h"

#include "gw_config.h"

#include <errno.h>
#include <http_parser.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define URL_MAX 4096
#define MAX_REPORTED_ERRORS 20
#define BODY_KEEP (1024 * 1024)

enum hstate {
	H_IDLE,      /* between requests (keep-alive) */
	H_HEADERS,
	H_BODY,
	H_RESPOND,   /* message complete, response being produced */
	H_CLOSING,
};

struct hconn {
	uv_tcp_t tcp;
	uv_timer_t timer;
	struct gw_daemon *d;
	struct gw_http *srv;
	http_parser parser;
	enum hstate state;
	bool reading;
	bool keep_alive;
	bool closing;
	bool draining;         /* answered early: read and drop the rest, then close */
	int handles_open;

	char url[URL_MAX + 1];
	size_t url_len;
	bool url_too_long;
	char hfield[32];
	size_t hfield_len;
	bool hfield_expect;
	bool expect_continue;
	bool rejected_early;   /* a response was sent before the body was read */

	/* ingest body */
	bool ingest;
	char default_run[GW_WIRE_RUN_MAX + 1];
	struct gw_lines lines;
	uint64_t body_bytes;
	uint64_t accepted, rejected, last_seq;
	json_t *errors;
	bool too_large;
	struct gw_commit_waiter waiter;

	/* body of a non-ingest request (at most BODY_KEEP bytes) */
	char *body;
	size_t body_len;

	/* data read past the end of the current message */
	char *rest;
	size_t rest_len;

	/* a thread-pool query */
	uv_work_t work;
	bool work_busy;
	const struct gw_http_route *route;
	char arg[GW_WIRE_RUN_MAX * 3 + 1];
	int qstatus;
	json_t *qresult;

	struct hconn *next, *prev;
};

struct gw_http {
	uv_tcp_t srv;
	bool on;
	struct hconn conns;
	size_t nconns;
	http_parser_settings settings;
	struct gw_http_route extra[16];
	size_t nextra;
};

struct wreq {
	uv_write_t req;
	struct hconn *c;
	bool close_after;
	bool then_continue;
	char buf[];
};

static void hconn_close(struct hconn *c);
static void hconn_continue(struct hconn *c);
static void start_reading(struct hconn *c);
static void on_drain_timer(uv_timer_t *t);

/* ---- responses -------------------------------------------------------------------- */

static const char *reason_phrase(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 413: return "Content Too Large";
	case 422: return "Unprocessable Content";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
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
	struct hconn *c = w->c;
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
		uv_timer_start(&c->timer, on_drain_timer, c->d->cfg->http_body_timeout_ms, 0);
		return;
	}
	if (close_after) {
		hconn_close(c);
		return;
	}
	if (cont)
		hconn_continue(c);
}

static void send_raw(struct hconn *c, const char *head, size_t hlen, const char *body,
                     size_t blen, bool close_after, bool then_continue)
{
	struct wreq *w = malloc(sizeof(*w) + hlen + blen);
	if (!w) {
		hconn_close(c);
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
		hconn_close(c);
	}
}

/* Send a complete response.  `body` is sent as is with content type ctype;
 * `headers` are extra header lines, each ending in CRLF (may be ""). */
static void respond_h(struct hconn *c, int status, const char *ctype, const char *headers,
                      const char *body, size_t blen, bool force_close)
{
	bool close_after = force_close || !c->keep_alive || c->d->stopping;
	char head[1536];
	int hlen = snprintf(head, sizeof(head),
	                    "HTTP/1.1 %d %s\r\n"
	                    "Content-Type: %s\r\n"
	                    "Content-Length: %zu\r\n"
	                    "Cache-Control: no-store\r\n"
	                    "X-Content-Type-Options: nosniff\r\n"
	                    "Server: gradwatchd/" GW_VERSION "\r\n"
	                    "%s%s"
	                    "\r\n",
	                    status, reason_phrase(status), ctype, blen, headers,
	                    close_after ? "Connection: close\r\n" : "");
	if (hlen < 0 || (size_t)hlen >= sizeof(head)) {
		hconn_close(c);
		return;
	}
	c->state = H_CLOSING;
	send_raw(c, head, (size_t)hlen, body, blen, close_after, !close_after);
}

static void respond(struct hconn *c, int status, const char *ctype, const char *body,
                    size_t blen, bool force_close)
{
	respond_h(c, status, ctype, "", body, blen, force_close);
}

void gw_http_respond_page(struct hconn *c, int status, const char *ctype, const char *headers,
                          const char *body, size_t len)
{
	respond_h(c, status, ctype, headers, body, len, false);
}

void gw_http_respond_json(struct hconn *c, int status, json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(12));
	json_decref(j);
	if (!s) {
		respond(c, 500, "application/json", "{\"error\":\"out of memory\"}", 25, true);
		return;
	}
	size_t n = strlen(s);
	s = realloc(s, n + 2);
	s[n++] = '\n';
	respond(c, status, "application/json", s, n, false);
	free(s);
}

void gw_http_respond_text(struct hconn *c, int status, const char *ctype, const char *body,
                          size_t len)
{
	respond(c, status, ctype, body, len, false);
}

static void respond_error(struct hconn *c, int status, bool force_close, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void respond_error(struct hconn *c, int status, bool force_close, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_t *j = json_pack("{s:s}", "error", msg);
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	size_t n = s ? strlen(s) : 0;
	if (s) {
		s = realloc(s, n + 2);
		s[n++] = '\n';
	}
	respond(c, status, "application/json", s ? s : "", n, force_close);
	free(s);
}

const char *gw_http_body(struct hconn *c, size_t *len)
{
	*len = c->body_len;
	return c->body ? c->body : "";
}

struct gw_daemon *gw_http_daemon(struct hconn *c)
{
	return c->d;
}

/* ---- thread-pool queries ------------------------------------------------------------ */

static void work_run(uv_work_t *req)
{
	struct hconn *c = gw_container_of(req, struct hconn, work);
	c->qresult = NULL;
	if (c->route->query_qs) {
		/* the URL stays as it is until the next request begins */
		const char *q = strchr(c->url, '?');
		c->qstatus = c->route->query_qs(c->d, c->arg[0] ? c->arg : NULL, q ? q + 1 : "",
		                                q ? strlen(q + 1) : 0, &c->qresult);
		return;
	}
	c->qstatus = c->route->query(c->d, c->arg[0] ? c->arg : NULL, c->body ? c->body : "",
	                             c->body_len, &c->qresult);
}

static void work_done(uv_work_t *req, int status)
{
	struct hconn *c = gw_container_of(req, struct hconn, work);
	c->work_busy = false;
	if (c->closing) {
		json_decref(c->qresult);
		c->qresult = NULL;
		hconn_close(c); /* finish the close that waited for us */
		return;
	}
	json_t *r = c->qresult;
	c->qresult = NULL;
	if (status < 0 || !r)
		respond_error(c, 500, false, "query failed");
	else
		gw_http_respond_json(c, c->qstatus, r);
}

static void query_after_commit(struct gw_commit_waiter *w)
{
	struct hconn *c = gw_container_of(w, struct hconn, waiter);
	c->work_busy = true;
	if (uv_queue_work(c->d->loop, &c->work, work_run, work_done) < 0) {
		c->work_busy = false;
		respond_error(c, 500, false, "cannot queue the query");
	}
}

/* ---- routes ----------------------------------------------------------------------------- */

static int q_runs(struct gw_daemon *d, const char *arg, const char *body, size_t blen,
                  json_t **out)
{
	char err[256];
	json_t *runs;
	if (gw_store_read_runs(d->cfg->db_path, &runs, err, sizeof(err)) < 0) {
		*out = json_pack("{s:s}", "error", err);
		return 500;
	}
	*out = json_pack("{s:o}", "runs", runs);
	return 200;
}

static int q_run(struct gw_daemon *d, const char *arg, const char *body, size_t blen,
                 json_t **out)
{
	char err[256];
	json_t *run;
	int rc = gw_store_read_run(d->cfg->db_path, arg, &run, err, sizeof(err));
	if (rc < 0) {
		*out = json_pack("{s:s}", "error", err);
		return rc == -ENOENT ? 404 : 500;
	}
	*out = run;
	return 200;
}

static int q_alerts(struct gw_daemon *d, const char *arg, const char *body, size_t blen,
                    json_t **out)
{
	char err[256];
	json_t *alerts;
	if (gw_store_read_alerts(d->cfg->db_path, arg, 1000, &alerts, err, sizeof(err)) < 0) {
		*out = json_pack("{s:s}", "error", err);
		return 500;
	}
	*out = json_pack("{s:s?, s:o}", "run", arg, "alerts", alerts);
	return 200;
}

/* The resume gate: is this live manifest what the run's last checkpoint
 * saved?  The same comparison the resume_mismatch detector makes. */
static int q_resume_check(struct gw_daemon *d, const char *arg, const char *body, size_t blen,
                          json_t **out)
{
	json_error_t je;
	json_t *live = json_loadb(body, blen, 0, &je);
	if (!json_is_object(live)) {
		*out = json_pack("{s:s}", "error", live ? "the body must be a JSON object (the resume manifest)"
		                                         : je.text);
		json_decref(live);
		return 400;
	}
	char err[256];
	json_t *ckpt = NULL;
	int64_t step = -1;
	int rc = gw_store_read_last_event(d->cfg->db_path, arg, "checkpoint_saved", &ckpt, &step,
	                                  err, sizeof(err));
	if (rc < 0 && rc != -ENOENT) {
		json_decref(live);
		*out = json_pack("{s:s}", "error", err);
		return 500;
	}
	json_t *diffs = gw_resume_diff(ckpt, live);
	bool ok = json_array_size(diffs) == 0;
	json_t *first = json_array_get(diffs, 0);
	const char *kind = json_string_value(json_object_get(first, "kind"));
	*out = json_pack("{s:s, s:b, s:o, s:o}", "run", arg, "ok", ok,
	                 "checkpoint_step", step >= 0 ? json_integer((json_int_t)step) : json_null(),
	                 "differences", diffs);
	if (!ckpt)
		json_object_set_new(*out, "note", json_string("the run has no checkpoint_saved event to compare with; "
		                                              "only the manifest itself was checked"));
	if (!ok) {
		json_object_set_new(*out, "cause", json_string(gw_resume_cause(kind)));
		json_object_set_new(*out, "action", json_string(gw_resume_action(kind)));
	}
	json_decref(ckpt);
	json_decref(live);
	return 200;
}

static void h_healthz(struct hconn *c, const char *arg, const char *query, size_t qlen)
{
	struct gw_daemon *d = c->d;
	struct gw_store_stats st;
	gw_store_stats(d->store, &st);
	bool ok = st.last_error == 0;
	json_t *j = json_pack("{s:s, s:s, s:s, s:f, s:I, s:I, s:I, s:s}",
	                      "status", ok ? "ok" : "degraded",
	                      "version", GW_VERSION,
	                      "kernels", gw_kern_name(),
	                      "uptime_s", gw_wall_now() - d->started,
	                      "runs", (json_int_t)gw_engine_run_count(d->engine),
	                      "committed", (json_int_t)gw_store_committed(d->store),
	                      "pending_bytes", (json_int_t)st.pending_bytes,
	                      "store", ok ? "ok" : st.last_error_msg);
	gw_http_respond_json(c, ok ? 200 : 503, j);
}

/* Ingest counters: accepted, events and rejected lines by transport and
 * reason, bytes, segments, alerts by detector and severity. */
json_t *gw_http_stats_json(struct gw_daemon *d)
{
	json_t *tr = json_object();
	for (int t = 0; t < GW_NTRANSPORTS; t++) {
		json_t *rej = json_object();
		for (int r = 0; r < GW_REJ_NREASONS; r++)
			if (d->stats.rejected[t][r])
				json_object_set_new(rej, gw_wire_reason_name((enum gw_wire_reason)r),
				                    json_integer((json_int_t)d->stats.rejected[t][r]));
		json_object_set_new(tr, gw_transport_name((enum gw_transport)t),
		                    json_pack("{s:I, s:I, s:I, s:o}",
		                              "accepted", (json_int_t)d->stats.accepted[t],
		                              "events", (json_int_t)d->stats.events[t],
		                              "bytes", (json_int_t)d->stats.bytes[t],
		                              "rejected", rej));
	}
	json_t *al = json_object();
	for (size_t k = 0; gw_det_registry[k]; k++) {
		json_t *sev = json_object();
		for (int v = 0; v < 3; v++)
			json_object_set_new(sev, gw_severity_name((enum gw_severity)v),
			                    json_integer((json_int_t)d->stats.alerts[k][v]));
		json_object_set_new(al, gw_det_registry[k]->name, sev);
	}
	struct gw_store_stats st;
	gw_store_stats(d->store, &st);
	return json_pack("{s:o, s:o, s:I, s:I, s:I, s:{s:I, s:I, s:I, s:I, s:I, s:I}}",
	                 "transports", tr, "alerts", al,
	                 "segments", (json_int_t)d->stats.segments,
	                 "connections", (json_int_t)d->stats.connections,
	                 "udp_dropped", (json_int_t)d->stats.udp_dropped,
	                 "store", "committed_seq", (json_int_t)gw_store_committed(d->store),
	                 "commits", (json_int_t)st.commits, "records", (json_int_t)st.records,
	                 "events", (json_int_t)st.events, "alerts", (json_int_t)st.alerts,
	                 "pending_bytes", (json_int_t)st.pending_bytes);
}

static void h_stats(struct hconn *c, const char *arg, const char *query, size_t qlen)
{
	gw_http_respond_json(c, 200, gw_http_stats_json(c->d));
}

static const struct gw_http_route builtin_routes[] = {
	{"GET", "/healthz", false, NULL, h_healthz, NULL, NULL},
	{"GET", "/v1/stats", false, NULL, h_stats, NULL, NULL},
	{"GET", "/v1/runs", false, NULL, NULL, q_runs, NULL},
	{"GET", "/v1/alerts", false, NULL, NULL, q_alerts, NULL},
	{"POST", "/v1/ingest", false, NULL, NULL, NULL, NULL}, /* handled as the body streams */
	{"GET", "/v1/runs/", true, NULL, NULL, q_run, NULL},
	{"GET", "/v1/runs/", true, "/alerts", NULL, q_alerts, NULL},
	{"POST", "/v1/runs/", true, "/resume-check", NULL, q_resume_check, NULL},
};

int gw_http_route(struct gw_daemon *d, const struct gw_http_route *r)
{
	struct gw_http *h = d->http;
	if (!h || h->nextra >= GW_ARRAY_SIZE(h->extra))
		return -ENOSPC;
	h->extra[h->nextra++] = *r;
	return 0;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Percent-decode s[0..n) into out (size cap); -1 on bad escapes or overflow. */
static int pct_decode(const char *s, size_t n, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (ch == '%') {
			if (i + 2 >= n)
				return -1;
			int hi = hexval(s[i + 1]), lo = hexval(s[i + 2]);
			if (hi < 0 || lo < 0)
				return -1;
			ch = (char)(hi * 16 + lo);
			if (ch == '\0')
				return -1;
			i += 2;
		} else if (ch == '+') {
			ch = ' ';
		}
		if (o + 1 >= cap)
			return -1;
		out[o++] = ch;
	}
	out[o] = '\0';
	return (int)o;
}

/* Value of query parameter `name` (decoded) into out; 1 if present. */
int gw_http_query_param(const char *query, size_t qlen, const char *name, char *out,
                        size_t cap)
{
	size_t nl = strlen(name);
	const char *p = query, *end = query + qlen;
	while (p < end) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *e = amp ? amp : end;
		const char *eq = memchr(p, '=', (size_t)(e - p));
		if (eq && (size_t)(eq - p) == nl && memcmp(p, name, nl) == 0)
			return pct_decode(eq + 1, (size_t)(e - eq - 1), out, cap) < 0 ? -1 : 1;
		p = e + 1;
	}
	return 0;
}

static void dispatch_route(struct hconn *c)
{
	const char *method = http_method_str((enum http_method)c->parser.method);
	const char *url = c->url;
	const char *q = strchr(url, '?');
	size_t plen = q ? (size_t)(q - url) : c->url_len;
	const char *query = q ? q + 1 : "";
	size_t qlen = q ? c->url_len - plen - 1 : 0;
	bool path_found = false;

	const struct gw_http_route *tables[2] = {builtin_routes, c->srv->extra};
	size_t sizes[2] = {GW_ARRAY_SIZE(builtin_routes), c->srv->nextra};
	for (int t = 0; t < 2; t++) {
		for (size_t i = 0; i < sizes[t]; i++) {
			const struct gw_http_route *r = &tables[t][i];
			size_t rl = strlen(r->path);
			c->arg[0] = '\0';
			if (!r->prefix) {
				if (plen != rl || memcmp(url, r->path, rl) != 0)
					continue;
			} else {
				/* prefix + one percent-encoded run name (no raw '/'),
				 * then the route's suffix if it has one */
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
				if (pct_decode(a, al, c->arg, sizeof(c->arg)) <= 0) {
					respond_error(c, 400, false, "bad percent-encoding in the path");
					return;
				}
			}
			path_found = true;
			if (strcmp(method, r->method) != 0)
				continue;
			c->route = r;
			if (!r->handler && !r->query && !r->query_qs) {
				respond_error(c, 500, false, "no handler");
				return;
			}
			if (r->handler) {
				r->handler(c, c->arg[0] ? c->arg : NULL, query, qlen);
				return;
			}
			/* answer from the database once what came before is in it */
			c->waiter.seq = c->d->seq_seen;
			c->waiter.fn = query_after_commit;
			gw_store_flush(c->d->store);
			gw_daemon_wait_commit(c->d, &c->waiter);
			return;
		}
	}
	if (path_found)
		respond_error(c, 405, false, "method %s not allowed on %.*s", method, (int)plen, url);
	else
		respond_error(c, 404, false, "no such endpoint: %.*s", (int)plen, url);
}

/* ---- ingest ----------------------------------------------------------------------------- */

static int on_body_line(void *data, const char *line, size_t len, uint64_t lineno,
                        enum gw_line_status st)
{
	struct hconn *c = data;
	struct gw_ingest_result res;
	gw_ingest_framed(c->d, GW_TR_HTTP, line, len, lineno, st,
	                 c->default_run[0] ? c->default_run : NULL, true, &res);
	if (res.rc == 0) {
		c->accepted++;
		c->last_seq = res.seq;
	} else if (res.rc == -EINVAL) {
		c->rejected++;
		if (json_array_size(c->errors) < MAX_REPORTED_ERRORS)
			json_array_append_new(c->errors, gw_ingest_err_json(lineno, &res.err));
	}
	return 0;
}

static void ingest_committed(struct gw_commit_waiter *w)
{
	struct hconn *c = gw_container_of(w, struct hconn, waiter);
	json_t *j = json_pack("{s:I, s:I, s:b, s:O}", "accepted", (json_int_t)c->accepted,
	                      "rejected", (json_int_t)c->rejected, "committed", 1,
	                      "errors", c->errors);
	if (c->rejected > json_array_size(c->errors))
		json_object_set_new(j, "errors_truncated", json_true());
	if (c->too_large)
		json_object_set_new(j, "error", json_sprintf("the body is larger than %zu bytes (limits.max_body_bytes); lines after the limit were not read",
		                                             c->d->cfg->max_body));
	int status = c->too_large ? 413 : c->rejected ? 422 : 200;
	if (c->too_large)
		c->keep_alive = false;
	gw_http_respond_json(c, status, j);
}

static void finish_ingest(struct hconn *c)
{
	gw_lines_finish(&c->lines, on_body_line, c);
	c->waiter.seq = c->last_seq;
	c->waiter.fn = ingest_committed;
	if (c->last_seq)
		gw_store_flush(c->d->store);
	gw_daemon_wait_commit(c->d, &c->waiter);
}

/* ---- parser callbacks -------------------------------------------------------------------- */

static int cb_message_begin(http_parser *p)
{
	struct hconn *c = p->data;
	c->state = H_HEADERS;
	c->url_len = 0;
	c->url_too_long = false;
	c->hfield_len = 0;
	c->expect_continue = false;
	c->rejected_early = false;
	c->ingest = false;
	c->too_large = false;
	c->body_bytes = c->accepted = c->rejected = c->last_seq = 0;
	c->default_run[0] = '\0';
	free(c->body);
	c->body = NULL;
	c->body_len = 0;
	json_decref(c->errors);
	c->errors = json_array();
	return 0;
}

static int cb_url(http_parser *p, const char *at, size_t len)
{
	struct hconn *c = p->data;
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
	struct hconn *c = p->data;
	if (c->hfield_len == SIZE_MAX)
		c->hfield_len = 0;
	if (c->hfield_len + len < sizeof(c->hfield)) {
		memcpy(c->hfield + c->hfield_len, at, len);
		c->hfield_len += len;
		c->hfield[c->hfield_len] = '\0';
	}
	c->hfield_expect = strcasecmp(c->hfield, "expect") == 0;
	return 0;
}

static int cb_header_value(http_parser *p, const char *at, size_t len)
{
	struct hconn *c = p->data;
	if (c->hfield_expect && len >= 12 && strncasecmp(at, "100-continue", 12) == 0)
		c->expect_continue = true;
	c->hfield_len = SIZE_MAX; /* next field starts fresh */
	return 0;
}

static int cb_headers_complete(http_parser *p)
{
	struct hconn *c = p->data;
	c->keep_alive = http_should_keep_alive(p);
	if (c->url_too_long) {
		respond_error(c, 431, true, "the URL is longer than %d bytes", URL_MAX);
		c->rejected_early = c->draining = true;
		return -1;
	}
	const char *q = strchr(c->url, '?');
	size_t plen = q ? (size_t)(q - c->url) : c->url_len;
	c->ingest = p->method == HTTP_POST && plen == 10 && memcmp(c->url, "/v1/ingest", 10) == 0;
	if (c->ingest) {
		if (q) {
			int r = gw_http_query_param(q + 1, c->url_len - plen - 1, "run", c->default_run,
			                            sizeof(c->default_run));
			if (r < 0) {
				respond_error(c, 400, true, "bad ?run= parameter");
				c->rejected_early = c->draining = true;
				return -1;
			}
		}
		if (p->content_length != ULLONG_MAX && p->content_length > c->d->cfg->max_body) {
			respond_error(c, 413, true,
			              "the body has %llu bytes; limits.max_body_bytes is %zu",
			              (unsigned long long)p->content_length, c->d->cfg->max_body);
			c->rejected_early = c->draining = true;
			return -1;
		}
		gw_lines_free(&c->lines);
		gw_lines_init(&c->lines, c->d->cfg->max_line);
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
	struct hconn *c = p->data;
	if (!c->ingest) {
		if (c->body_len + len > BODY_KEEP) {
			respond_error(c, 413, true, "the body is larger than %d bytes", BODY_KEEP);
			c->rejected_early = c->draining = true;
			return -1;
		}
		char *nb = realloc(c->body, c->body_len + len + 1);
		if (!nb)
			return -1;
		memcpy(nb + c->body_len, at, len);
		c->body = nb;
		c->body_len += len;
		c->body[c->body_len] = '\0';
		return 0;
	}
	if (c->too_large)
		return 0;
	if (c->body_bytes + len > c->d->cfg->max_body) {
		len = c->d->cfg->max_body - c->body_bytes;
		c->too_large = true;
	}
	c->body_bytes += len;
	if (gw_lines_feed(&c->lines, at, len, on_body_line, c) == -ENOMEM)
		return -1;
	return 0;
}

static int cb_message_complete(http_parser *p)
{
	struct hconn *c = p->data;
	c->state = H_RESPOND;
	uv_timer_stop(&c->timer);
	http_parser_pause(p, 1);
	return 0;
}

/* ---- connection ------------------------------------------------------------------------- */

static void on_timer(uv_timer_t *t);

static void on_drain_timer(uv_timer_t *t)
{
	hconn_close(t->data);
}

static void arm_timer(struct hconn *c)
{
	unsigned ms = 0;
	switch (c->state) {
	case H_IDLE: ms = c->d->cfg->http_idle_timeout_ms; break;
	case H_HEADERS: ms = c->d->cfg->http_header_timeout_ms; break;
	case H_BODY: ms = c->d->cfg->http_body_timeout_ms; break;
	default: break;
	}
	if (ms)
		uv_timer_start(&c->timer, on_timer, ms, 0);
	else
		uv_timer_stop(&c->timer);
}

static void on_timer(uv_timer_t *t)
{
	struct hconn *c = t->data;
	if (c->state == H_IDLE) {
		hconn_close(c);
		return;
	}
	if (c->state == H_HEADERS || c->state == H_BODY) {
		const char *what = c->state == H_HEADERS ? "headers" : "body";
		gw_log_debug("http: %s timeout, closing", what);
		if (c->ingest && c->state == H_BODY) {
			/* keep what arrived; the partial last line is lost */
			if (c->lines.len) {
				gw_ingest_reject(c->d, GW_TR_HTTP, GW_REJ_TRUNCATED);
				c->lines.len = 0;
			}
		}
		if (c->reading) {
			uv_read_stop((uv_stream_t *)&c->tcp);
			c->reading = false;
		}
		respond_error(c, 408, true, "the request %s did not arrive in time", what);
	}
}

static void process(struct hconn *c, const char *data, size_t len)
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
				hconn_close(c);
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
		if (c->ingest)
			finish_ingest(c);
		else
			dispatch_route(c);
		return;
	}
	if (e != HPE_OK) {
		if (c->ingest && c->state == H_BODY)
			respond_error(c, 400, true, "malformed HTTP request body: %s", http_errno_description(e));
		else
			respond_error(c, 400, true, "malformed HTTP request: %s", http_errno_description(e));
		return;
	}
	arm_timer(c);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct hconn *c = s->data;
	if (c->draining) {
		if (nread < 0)
			hconn_close(c);
		return;
	}
	if (nread < 0) {
		if (c->ingest && c->state == H_BODY && c->lines.len)
			gw_ingest_reject(c->d, GW_TR_HTTP, GW_REJ_TRUNCATED);
		if (c->state == H_BODY || c->state == H_HEADERS)
			gw_log_debug("http: client went away mid-request");
		hconn_close(c);
		return;
	}
	if (nread == 0)
		return;
	c->d->stats.bytes[GW_TR_HTTP] += (uint64_t)nread;
	if (c->state == H_IDLE)
		c->state = H_HEADERS;
	process(c, buf->base, (size_t)nread);
}

static void start_reading(struct hconn *c)
{
	if (c->reading || c->closing)
		return;
	c->reading = true;
	uv_read_start((uv_stream_t *)&c->tcp, gw_daemon_alloc_slab, on_read);
}

/* The response is out: take the next pipelined request or wait for one. */
static void hconn_continue(struct hconn *c)
{
	if (c->closing)
		return;
	c->state = H_IDLE;
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
	struct hconn *c = h->data;
	if (--c->handles_open == 0) {
		gw_lines_free(&c->lines);
		json_decref(c->errors);
		free(c->rest);
		free(c->body);
		free(c);
	}
}

static void hconn_close(struct hconn *c)
{
	if (!c->closing) {
		c->closing = true;
		gw_daemon_cancel_wait(c->d, &c->waiter);
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
	struct gw_daemon *d = srv->data;
	struct gw_http *h = d->http;
	if (status < 0)
		return;
	struct hconn *c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->d = d;
	c->srv = h;
	uv_tcp_init(d->loop, &c->tcp);
	uv_timer_init(d->loop, &c->timer);
	c->tcp.data = c;
	c->timer.data = c;
	c->handles_open = 2;
	c->next = h->conns.next;
	c->prev = &h->conns;
	h->conns.next->prev = c;
	h->conns.next = c;
	h->nconns++;
	if (uv_accept(srv, (uv_stream_t *)&c->tcp) < 0 || h->nconns > d->cfg->max_connections) {
		hconn_close(c);
		return;
	}
	uv_tcp_nodelay(&c->tcp, 1);
	http_parser_init(&c->parser, HTTP_REQUEST);
	c->parser.data = c;
	c->state = H_IDLE;
	c->errors = json_array();
	gw_lines_init(&c->lines, d->cfg->max_line);
	c->state = H_HEADERS;
	arm_timer(c);
	start_reading(c);
}

int gw_http_start(struct gw_daemon *d, char *err, size_t errlen)
{
	struct gw_http *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	d->http = h;
	h->conns.next = h->conns.prev = &h->conns;
	h->settings.on_message_begin = cb_message_begin;
	h->settings.on_url = cb_url;
	h->settings.on_header_field = cb_header_field;
	h->settings.on_header_value = cb_header_value;
	h->settings.on_headers_complete = cb_headers_complete;
	h->settings.on_body = cb_body;
	h->settings.on_message_complete = cb_message_complete;
	if (!d->cfg->http.enabled)
		return 0;
	struct sockaddr_storage ss;
	int rc;
	const struct gw_listen *l = &d->cfg->http;
	uv_tcp_init(d->loop, &h->srv);
	h->srv.data = d;
	h->on = true;
	if (strchr(l->host, ':'))
		rc = uv_ip6_addr(l->host, l->port, (struct sockaddr_in6 *)&ss);
	else
		rc = uv_ip4_addr(l->host, l->port, (struct sockaddr_in *)&ss);
	if (rc < 0 || (rc = uv_tcp_bind(&h->srv, (struct sockaddr *)&ss, 0)) < 0 ||
	    (rc = uv_listen((uv_stream_t *)&h->srv, 256, on_connection)) < 0) {
		snprintf(err, errlen, "http %s:%d: %s", l->host, l->port, uv_strerror(rc));
		return rc;
	}
	gw_log_info("listening on http://%s:%d", l->host, l->port);
	return 0;
}

void gw_http_stop(struct gw_daemon *d)
{
	struct gw_http *h = d->http;
	if (!h)
		return;
	if (h->on && !uv_is_closing((uv_handle_t *)&h->srv))
		uv_close((uv_handle_t *)&h->srv, NULL);
	/* idle keep-alive connections go now; busy ones close after answering */
	struct hconn *c = h->conns.next;
	while (c != &h->conns) {
		struct hconn *next = c->next;
		if (c->state == H_IDLE || c->state == H_HEADERS)
			hconn_close(c);
		c = next;
	}
}

size_t gw_http_busy(struct gw_daemon *d)
{
	struct gw_http *h = d->http;
	size_t n = 0;
	if (!h)
		return 0;
	for (struct hconn *c = h->conns.next; c != &h->conns; c = c->next)
		n += c->state == H_RESPOND || c->state == H_CLOSING || c->state == H_BODY;
	return n;
}

void gw_http_close_all(struct gw_daemon *d)
{
	struct gw_http *h = d->http;
	if (!h)
		return;
	gw_http_stop(d);
	while (h->conns.next != &h->conns)
		hconn_close(h->conns.next);
}

void gw_http_free(struct gw_daemon *d)
{
	free(d->http);
	d->http = NULL;
}
