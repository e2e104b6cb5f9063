/*
 * health: GET /healthz, "ok" or "degraded" with the reasons (health.c,
 * docs/api.md "Health"); from memory and one cached statvfs, never waits.
 */
#ifndef GW_HEALTH_H
#define GW_HEALTH_H

#include <stddef.h>

struct gw_cfg;
struct gw_http;
struct gw_ingest;
struct gw_outbox;
struct gw_store;

/* What /healthz reads (borrowed; the struct itself too: it must outlive
 * the HTTP server). */
struct gw_health_opts {
	const struct gw_cfg *cfg;        /* the health.* limits, the database's path */
	struct gw_ingest *ingest;        /* active runs */
	struct gw_store *store;          /* commits, their errors, the queue's age */
	const struct gw_outbox *outbox;  /* the sinks' undelivered events */
	double started;                  /* wall clock of the start */
};

/* Register GET /healthz on h (open to all: no token).  Returns 0 or a
 * negative errno with a message in err. */
int gw_health_start(struct gw_http *h, const struct gw_health_opts *o, char *err, size_t errlen);

#endif
