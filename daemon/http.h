/*
 * The HTTP API's extension points: other modules (metrics, resume check)
 * register routes and answer through these helpers (see http.c).
 */
#ifndef GW_HTTP_H
#define GW_HTTP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct gw_daemon;
struct hconn;

struct gw_http_route {
	const char *method;        /* "GET", "POST" */
	const char *path;          /* exact path, or prefix when `prefix` */
	bool prefix;               /* path + "{run}" (percent-encoded, no '/') */
	const char *suffix;        /* ... + this ("/alerts"), or NULL */
	/* Answer on the loop thread (must call one gw_http_respond_*)... */
	void (*handler)(struct hconn *c, const char *arg, const char *query, size_t qlen);
	/* ... or compute on the thread pool, after everything ingested so far
	 * is committed: return the HTTP status and a JSON body in *out (the
	 * loop sends it).  arg is the decoded {run} or NULL; body/blen the
	 * request body (empty for GET). */
	int (*query)(struct gw_daemon *d, const char *arg, const char *body, size_t blen,
	             json_t **out);
	/* ... or the same with the request's query string (not decoded; read
	 * it with gw_http_query_param) instead of the body (GET routes). */
	int (*query_qs)(struct gw_daemon *d, const char *arg, const char *query, size_t qlen,
	                json_t **out);
};

/* Register a route (before or after start); -ENOSPC when the table is full. */
int gw_http_route(struct gw_daemon *d, const struct gw_http_route *r);

/* Respond with a JSON body (steals j). */
void gw_http_respond_json(struct hconn *c, int status, json_t *j);
void gw_http_respond_text(struct hconn *c, int status, const char *ctype, const char *body,
                          size_t len);
/* The same with extra header lines (each ending in "\r\n"), e.g. a
 * Content-Security-Policy.  The body is copied. */
void gw_http_respond_page(struct hconn *c, int status, const char *ctype, const char *headers,
                          const char *body, size_t len);

/* The body of a POST for handler routes that read one (raw bytes so far are
 * not kept for non-ingest routes; see gw_http_body). */
const char *gw_http_body(struct hconn *c, size_t *len);

struct gw_daemon *gw_http_daemon(struct hconn *c);

/* The ingest counters as JSON (GET /v1/stats). */
json_t *gw_http_stats_json(struct gw_daemon *d);

/* Decoded value of query parameter `name` into out: 1 present, 0 absent, -1 bad. */
int gw_http_query_param(const char *query, size_t qlen, const char *name, char *out,
                        size_t cap);

/* Connections in the middle of a request or response. */
size_t gw_http_busy(struct gw_daemon *d);
/* Close every connection (shutdown). */
void gw_http_close_all(struct gw_daemon *d);
void gw_http_free(struct gw_daemon *d);

#endif
