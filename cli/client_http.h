/*
 * client_http: what the gradwatch subcommands that talk to gradwatchd share
 * (client.c, client_send.c, client_ack.c, export.c, prune.c): one blocking libcurl request with a timeout, a bearer token
 * and an optional Idempotency-Key, whose outcome is either the daemon's
 * status and body or a negative errno saying why there is none; the
 * daemon's address ($GRADWATCH_URL or the configuration) and token
 * ($GRADWATCH_TOKEN); and parsing option values.
 */
#ifndef GW_CLIENT_HTTP_H
#define GW_CLIENT_HTTP_H

#include "buf.h"
#include "config.h"

#include <stdbool.h>
#include <stddef.h>

#define GW__CLIENT_TIMEOUT_MS 30000L       /* --timeout's default */

/* How every request is made. */
struct gw__http_opts {
	const char *token;        /* sent as "Authorization: Bearer", or NULL */
	long timeout_ms;          /* the whole request, connecting included */
	const char *method;       /* "DELETE", "POST" without a body...; NULL: GET, or POST
	                             when there is a body */
};

struct gw__http_answer {
	long status;              /* the HTTP status, or a negative errno: no answer */
	long retry_after_s;       /* its Retry-After (capped at 60), or -1 */
	struct gw_buf body;       /* the caller frees it (gw_buf_free) */
	char err[512];            /* why there is no answer */
};

/* One HTTP request: a POST of body (blen bytes, NDJSON) when body is not
 * NULL, with idem_key as its Idempotency-Key if not NULL; else a GET.
 * Blocks for at most o->timeout_ms.  a->status is the HTTP status, or
 * -ETIMEDOUT (no answer in time), -ECONNREFUSED (could not connect or
 * resolve), -EIO (the connection broke), -EINVAL (a bad URL), -ENOMEM,
 * with a->err saying what. */
void gw__http_request(const struct gw__http_opts *o, const char *url, const char *body,
                      size_t blen, const char *idem_key, struct gw__http_answer *a);

/* The daemon's "error" from an answer's JSON (j may be NULL), else its
 * body, else "(no body)". */
const char *gw__http_error_text(json_t *j, const struct gw_buf *body);

/* One request (gw__http_request; a POST of body when not NULL) whose
 * answer must be 200 with JSON: 0 and *out that JSON (the caller's), or 2
 * after printing why on stderr as "prog: ...": down_hint follows a
 * connection refused (" (is gradwatchd running?)"), and a 401/403 says
 * what to set $GRADWATCH_TOKEN to (need: "" or " to an ingest token").
 * Blocks for at most o->timeout_ms. */
int gw__http_json(const char *prog, const struct gw__http_opts *o, const char *url,
                  const char *body, const char *need, const char *down_hint, json_t **out);

/* The HTTP API's base URL, without a trailing '/': $GRADWATCH_URL, else
 * the configuration's "http" address. */
void gw__client_default_url(const struct gw_cfg *cfg, char *out, size_t n);

/* Check a --url / $GRADWATCH_URL given to command prog ("gradwatch send"):
 * http:// or https://, the daemon's base URL rather than an endpoint of it
 * (".../v1/ingest"); trailing '/' are dropped in place.  Returns 0, or
 * GW_EXIT_USAGE after printing the usage error. */
int gw__client_check_url(const char *prog, char *base);

/* $GRADWATCH_TOKEN, or NULL when unset or empty. */
const char *gw__client_token(void);

/* Parse a number of seconds (0 < s <= 86400) into milliseconds, or a count
 * from 0 to max; 0 or -EINVAL. */
int gw__client_parse_seconds(const char *s, long *ms);
int gw__client_parse_count(const char *s, unsigned long max, unsigned long *out);

#endif
