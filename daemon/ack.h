/*
 * ack: POST and DELETE /v1/alerts/{id}/ack, the on-call acknowledging an
 * open alert and withdrawing it (ack.c; docs/alerts.md "Acknowledging").
 */
#ifndef GW_ACK_H
#define GW_ACK_H

#include <stddef.h>

struct gw_http;
struct gw_ingest;
struct gw_outbox;

/* What the routes need (borrowed; the struct itself too: it must outlive
 * the HTTP server). */
struct gw_ack_opts {
	struct gw_ingest *ingest;     /* whether the alert's run still exists */
	struct gw_outbox *outbox;     /* the alerts' state, which decides and queues */
};

/* Register the two routes on h.  Returns 0 or a negative errno with a
 * message in err. */
int gw_ack_start(struct gw_http *h, const struct gw_ack_opts *o, char *err, size_t errlen);

#endif
