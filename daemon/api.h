/*
 * api: the /v1 routes of gradwatchd (api.c, docs/api.md): ingest, stats,
 * runs, alerts, the resume check.
 */
#ifndef GW_API_H
#define GW_API_H

#include <stddef.h>

struct gw_cfg;
struct gw_http;
struct gw_idem;
struct gw_ingest;
struct gw_store;

/* What the routes need (borrowed; the struct itself too: it must outlive
 * the HTTP server). */
struct gw_api_opts {
	const struct gw_cfg *cfg;     /* limits.max_body_bytes */
	struct gw_ingest *ingest;     /* the record path every ingest body goes through */
	struct gw_store *store;       /* its commits and counters */
	struct gw_idem *idem;         /* idempotency keys of POST /v1/ingest */
	struct gw_fleet *fleet;       /* shipping to PostgreSQL (GET /v1/stats), or NULL */
};

/* Register the routes on h (after gw_http_start).  Returns 0 or a negative
 * errno with a message in err. */
int gw_api_start(struct gw_http *h, const struct gw_api_opts *o, char *err, size_t errlen);

#endif
