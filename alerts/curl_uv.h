/*
 * curl_uv: HTTP POSTs through libcurl's multi interface, driven by a libuv
 * loop (the multi_socket API): libcurl says which sockets to watch through
 * its socket callback (one uv_poll_t per socket) and when to call it back
 * through its timer callback (one uv_timer_t); the loop calls
 * curl_multi_socket_action() and reaps finished transfers after every
 * action, timeouts included.  No thread per request and nothing that
 * blocks: name resolution is libcurl's threaded resolver.
 *
 * Everything here runs on the loop thread.  Requests are owned by the
 * caller (embed a struct gw_alert_req), must stay alive until their `done`
 * callback ran or gw_alert_http_stop() aborted it, and `done` is called
 * exactly once per successful gw_alert_http_post() (never if it failed).
 */
#ifndef GW_CURL_UV_H
#define GW_CURL_UV_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

struct gw_alert_http_result {
	int rc;                 /* 0: a response came (any status); else -ETIMEDOUT,
	                         * -ECONNREFUSED, -ECONNRESET, -EHOSTUNREACH, -EPROTO
	                         * (TLS), -EIO */
	long status;            /* HTTP status, 0 if none */
	long retry_after_s;     /* Retry-After in seconds, -1 if absent */
	const char *error;      /* libcurl's message when rc < 0 (no URL path in it) */
	const char *body;       /* the first bytes of the response body */
	size_t body_len;
	double seconds;         /* total time */
};

struct gw_alert_req;
typedef void (*gw_alert_req_cb)(struct gw_alert_req *r, const struct gw_alert_http_result *res);

struct gw_alert_req {
	void *data;             /* the caller's */
	/* private */
	struct gw_alert_http *h;
	CURL *easy;
	struct curl_slist *headers;
	char *body;
	gw_alert_req_cb done;
	char resp[512];
	size_t resp_len;
	char errbuf[CURL_ERROR_SIZE];
	struct gw_alert_req *next, *prev;
};

struct gw_alert_post {
	const char *url;
	struct curl_slist *headers;  /* taken over (freed when done or on failure) */
	char *body;                  /* taken over (freed when done or on failure) */
	size_t len;
	long connect_timeout_ms, timeout_ms;
	bool tls_verify;
	const char *ca_file;         /* NULL: the system's */
};

struct gw_alert_http {
	void *data;
	uv_loop_t *loop;
	CURLM *multi;
	uv_timer_t timer;
	struct gw_alert_req reqs;    /* list head of transfers in flight */
	struct gw__alert_sock *socks;      /* sockets being watched */
	unsigned closing_handles;
	bool timer_on;               /* timer initialised (closed by stop) */
	bool closing;
	void (*on_closed)(struct gw_alert_http *h);
};

/* Lifecycle (docs/architecture.md, "Starting and stopping"):
 * gw_alert_http_start, gw_alert_http_stop; h is the caller's memory (no
 * free), which it may release once stop's on_closed ran. */

/* Set up h on loop (curl_global_init must have been called).  Returns 0,
 * or -ENOMEM, -ENOTSUP (libcurl refused the callbacks) or a libuv error;
 * after a failure gw_alert_http_stop is still safe and needed. */
int gw_alert_http_start(struct gw_alert_http *h, uv_loop_t *loop);

/* Start a POST.  Returns 0 (r->done will be called) or a negative errno
 * (it will not; headers and body are freed). */
int gw_alert_http_post(struct gw_alert_http *h, struct gw_alert_req *r,
                       const struct gw_alert_post *p, gw_alert_req_cb done);

/* Abort every transfer (no done callbacks), close the handles; on_closed
 * (may be NULL) runs once the last close callback ran, after which h may be
 * freed.  Idempotent; safe after a failed start (on_closed then runs at
 * once when no handle was opened). */
void gw_alert_http_stop(struct gw_alert_http *h, void (*on_closed)(struct gw_alert_http *h));

#endif
