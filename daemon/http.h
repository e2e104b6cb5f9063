/*
 * http: the HTTP/1.1 transport of gradwatchd (see http.c): connections,
 * request parsing, limits, the route table, responses.  What the routes do
 * lives with their owners (api.c for the /v1 API, metrics.c, alerting.c),
 * which register them with gw_http_route().
 *
 * A route answers in one of three ways:
 *   handler  on the loop thread, right away (it must call one
 *            gw_http_respond_*; or keep the connection and respond later);
 *   query    on the libuv thread pool, after everything ingested so far is
 *            committed (the server's barrier): it gets the read-only
 *            database path and the request, returns an HTTP status and a
 *            JSON body, and the loop sends it;
 *   body     the request body is streamed to the route as it arrives
 *            (POST /v1/ingest): begin / data / end callbacks on the loop.
 *
 * A handler may also answer later through the transport's one deferred
 * path, the same one `query` routes take: gw_http_defer (barrier, a read on
 * the thread pool with only the request, then back on the loop) and
 * gw_http_answer_after_commit (the answer waits for the commit of what the
 * route queued).  The connection going away at any point of that is the
 * transport's business: the waits are cancelled, a running read finishes
 * and its result is dropped, the request's state is freed, and the route
 * hears nothing more.  (POST/DELETE /v1/alerts/{id}/ack, DELETE
 * /v1/runs/{run} and POST /v1/prune are such handlers.)
 */
#ifndef GW_HTTP_H
#define GW_HTTP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "auth.h"

struct gw_cfg;
struct gw_ingest;
struct gw_http;
struct gw_http_conn;

/* What a handler or a query sees of the request. */
struct gw_http_req {
	const char *method;
	const char *path;          /* without the query */
	size_t path_len;
	const char *arg;           /* decoded {run} of a prefix route, or NULL */
	const char *query;         /* after '?', not decoded ("" if none) */
	size_t query_len;
	const char *body;          /* the body of a non-streamed request ("" if none) */
	size_t body_len;
	bool body_over;            /* it was longer than the route's body_max: what is
	                              kept is cut (the handler answers 413) */
	const char *db_path;       /* queries: the read-only database to read */
	const struct gw_token *token; /* who asked (auth.h); never NULL */
	const char *idempotency_key;  /* the Idempotency-Key header, or NULL */
	void *data;                /* the route's data */
	void *state;               /* gw_http_defer's state, or NULL */
};

/* A read on the thread pool (a query route's, or gw_http_defer's): only
 * r->db_path (read-only), the request's fields and r->state may be used;
 * never loop-owned state.  Returns an HTTP status and sets *out (a new
 * reference; NULL answers 500). */
typedef int (*gw_http_read_fn)(const struct gw_http_req *r, json_t **out);
/* Back on the loop after such a read: `out` (owned by the callee) is what
 * the read returned; the callee answers (now, or with
 * gw_http_answer_after_commit). */
typedef void (*gw_http_then_fn)(struct gw_http_conn *c, const struct gw_http_req *r,
                                int status, json_t *out);

/* A streamed body (POST /v1/ingest).  The connection's route state
 * (gw_http_conn_state) is the route's own between begin and free. */
struct gw_http_body_ops {
	/* Headers are in: set up (return a negative value after responding
	 * with an error to refuse the request). */
	int (*begin)(struct gw_http_conn *c, const struct gw_http_req *r);
	/* The next bytes of the body. */
	int (*data)(struct gw_http_conn *c, const char *p, size_t n);
	/* The whole body is in: respond (now or later). */
	void (*end)(struct gw_http_conn *c);
	/* The connection goes away (after end, or instead of it): release the
	 * route state; `complete` is false when the body was cut off. */
	void (*free)(struct gw_http_conn *c, bool complete);
};

struct gw_http_route {
	const char *method;        /* "GET", "POST", "DELETE" */
	const char *path;          /* exact path, or prefix when `prefix` */
	bool prefix;               /* path + "{run}" (percent-encoded, no '/') */
	const char *suffix;        /* ... + this ("/alerts"), or NULL */
	void (*handler)(struct gw_http_conn *c, const struct gw_http_req *r);
	gw_http_read_fn query;
	const struct gw_http_body_ops *body;
	void *data;                /* handed to handler/query/body as r->data */
	enum gw_scope scope;       /* the token it takes (default: a read token) */
	const char *arg_name;      /* what {run} is, for errors ("alert id"); NULL: "run name" */
	size_t body_max;           /* handler/query: a longer body is read to its end and
	                              dropped, r->body_over set (0: 1 MiB, beyond which
	                              the transport answers 413 and closes); a
	                              Content-Length over limits.max_body_bytes is
	                              refused (413) before the body, as for `body` */
};

struct gw_http_opts {
	uv_loop_t *loop;
	const struct gw_cfg *cfg;  /* address, limits, database path (borrowed) */
	/* The record path whose commits reads wait for (the barrier:
	 * everything queued before a read, lines and writes, is committed
	 * first) and answers
	 * after a write wait for (gw_http_answer_after_commit). */
	struct gw_ingest *ingest;
	const struct gw_auth *auth;   /* tokens (NULL: auth off) */
};

/* Lifecycle (docs/architecture.md, "Starting and stopping"): gw_http_start,
 * gw_http_stop closes every handle, gw_http_free once the loop has run
 * their close callbacks; gw_http_drain is the shutdown's grace period
 * before gw_http_stop. */

/* Listen (when the configuration enables HTTP).  Returns 0 or a negative
 * errno with a message in err; on failure call gw_http_stop and, after the
 * loop ran, gw_http_free anyway. */
int gw_http_start(const struct gw_http_opts *o, struct gw_http **out, char *err, size_t errlen);

/* Register a route; -ENOSPC when the table is full. */
int gw_http_route(struct gw_http *h, const struct gw_http_route *r);

/* Stop accepting; idle connections close now, busy ones after answering
 * (the start of the shutdown's grace period). */
void gw_http_drain(struct gw_http *h);
/* Connections in the middle of a request or response. */
size_t gw_http_busy(const struct gw_http *h);
/* Close the listener and every connection, busy or not; idempotent, h may
 * be NULL.  The loop must run for the close callbacks. */
void gw_http_stop(struct gw_http *h);
/* Free the server once the loop ran the close callbacks (h may be NULL). */
void gw_http_free(struct gw_http *h);

/* ---- answering --------------------------------------------------------------- */

/* Respond with a JSON body (steals j; j NULL answers 500). */
void gw_http_respond_json(struct gw_http_conn *c, int status, json_t *j);
/* Respond with {"error": message}. */
void gw_http_respond_error(struct gw_http_conn *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void gw_http_respond_text(struct gw_http_conn *c, int status, const char *ctype,
                          const char *body, size_t len);
/* The same with extra header lines (each ending in "\r\n", at most 1 KiB
 * in all: a constant such as a Content-Security-Policy).  The body is
 * copied. */
void gw_http_respond_page(struct gw_http_conn *c, int status, const char *ctype,
                          const char *headers, const char *body, size_t len);

/* The route state of a streamed body (see gw_http_body_ops). */
void *gw_http_conn_state(const struct gw_http_conn *c);
void gw_http_conn_set_state(struct gw_http_conn *c, void *state);
/* ---- answering later (a handler's) ----------------------------------------- */

/* Once everything queued before this request is committed (lines, and
 * writes such as another request's acknowledgement), run `read`
 * on the thread pool (it sees r->state = state), then, on the loop, `then`
 * with its status and result (then NULL: answer them as they are).  The
 * handler returns right after; state_free(state) (may be NULL) runs when
 * the request is done, answered or cut off.  If the barrier fails the
 * answer is 503 and `then` is not called; if the connection goes away,
 * neither is.  Call at most once per request. */
void gw_http_defer(struct gw_http_conn *c, gw_http_read_fn read, gw_http_then_fn then,
                   void *state, void (*state_free)(void *state));
/* Answer `status` with `answer` (stolen) once the store committed `seq`
 * (what the route queued for this request: what was answered is on disk).
 * If that commit fails: 503 "<not_yet>: the database cannot be written
 * (why)"; not_yet is a constant ("not deleted yet").  Call instead of a
 * gw_http_respond_*. */
void gw_http_answer_after_commit(struct gw_http_conn *c, uint64_t seq, int status,
                                 json_t *answer, const char *not_yet);

/* Do not keep the connection alive after the response. */
void gw_http_conn_close_after(struct gw_http_conn *c);

/* {"error": msg} for a query's answer (new reference, NULL when out of
 * memory).  Bytes of msg that are not UTF-8 (a message may quote the
 * request: a parameter's value, a path) are written \xNN, so the error
 * still reaches the client. */
json_t *gw_http_error_json(const char *msg);

#endif
