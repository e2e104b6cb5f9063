/*
 * http_impl: what the HTTP transport's parts share (internal; users see
 * http.h): the connection and the server.  http.c is the connection's life
 * (reading, the parser driven over what is read, responses, the deferred
 * answers, closing); http_parse.c the parser's callbacks (headers, limits,
 * tokens, finding the route); http_server.c the listener, the route table,
 * and starting and stopping.  http.c calls neither of the others: the
 * parser reaches http_parse.c through the server's callbacks
 * (http_parser_settings), which http_server.c fills.
 */
#ifndef GW_HTTP_IMPL_H
#define GW_HTTP_IMPL_H

#include "http.h"

#include "buf.h"
#include "ingest.h"

#include <http_parser.h>
#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#define URL_MAX 4096
#define BODY_KEEP (1024 * 1024)
#define MAX_ROUTES 32
#define IDEM_MAX 128

enum { H_OTHER, H_EXPECT, H_AUTH, H_IDEM, H_CODING, H_INM };

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
	char inm[256];         /* If-None-Match (joined by ,); one longer matches nothing */
	size_t inm_len;
	char etag[24];         /* a read's answer's ETag, "" without one */
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
	json_t *qresult;                   /* a read's result for `then` ... */
	char *qtext;                       /* ... or, without `then`, as written on the pool */
	size_t qlen;
	bool read_counted;                 /* counted in gw_http.reads */
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
	size_t reads;                /* deferred reads waiting or running (max_reads_in_flight) */
};

/* ---- http.c: the connection ------------------------------------------------------- */

/* Send a complete response, or raw bytes (a 100 Continue); close_after:
 * the connection closes once written, then_continue: it takes the next
 * request then. */
void gw__http_send_raw(struct gw_http_conn *c, const char *head, size_t hlen, const char *body,
                       size_t blen, bool close_after, bool then_continue);
/* How a JSON answer is written, on the loop or on the pool. */
#define ANSWER_JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(12))
/* Answer with JSON text already written (heap, taken over: sent in place). */
void gw__http_respond_owned(struct gw_http_conn *c, int status, char *json, size_t len);
/* A deferred read is over: it no longer counts in gw_http.reads. */
void gw__http_read_release(struct gw_http_conn *c);

/* A query route's handler (set by gw_http_route): the route's query on the
 * pool once what came before it is committed (gw_http_defer). */
void gw__http_answer_query(struct gw_http_conn *c, const struct gw_http_req *r);

/* An error that ends the connection (the request could not be read). */
void gw__http_respond_fatal(struct gw_http_conn *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A streamed body's route state is released (complete: the body was read
 * whole). */
void gw__http_end_stream(struct gw_http_conn *c, bool complete);
/* Arm the deadline of the connection's state; start reading. */
void gw__http_arm_timer(struct gw_http_conn *c);
void gw__http_start_reading(struct gw_http_conn *c);
/* Close the connection (its handles, its request: once a running read
 * finished); idempotent. */
void gw__http_conn_close(struct gw_http_conn *c);

/* ---- http_parse.c: the parser's callbacks ------------------------------------------- */

/* Fill the callbacks http.c drives the parser with. */
void gw__http_parser_settings(http_parser_settings *s);

#endif
