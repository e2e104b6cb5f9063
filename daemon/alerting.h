/*
 * alerting: gradwatchd's glue to the alert delivery module (alerts/,
 * docs/alerts.md): the "sinks" configuration checked and the outbox
 * started from it, and GET /v1/sinks.  The acknowledgement routes are
 * ack.c's (ack.h).
 */
#ifndef GW_ALERTING_H
#define GW_ALERTING_H

#include <stddef.h>
#include <uv.h>

struct gw_cfg;
struct gw_http;
struct gw_outbox;
struct gw_store;

/* Validate the "sinks" configuration (also for --check-config): 0, or a
 * negative errno with a message in err. */
int gw_alerting_check(const struct gw_cfg *cfg, char *err, size_t errlen);

/* Start the outbox (alerts/outbox.h) with the configured sinks and the
 * API's address for links: it reads what is still undelivered (a blocking
 * read: before uv_run).  0, or a negative errno with a message in err; on
 * failure *out may be set: gw_outbox_stop and gw_outbox_free it anyway. */
int gw_alerting_outbox(uv_loop_t *loop, const struct gw_cfg *cfg, struct gw_store *store,
                       struct gw_outbox **out, char *err, size_t errlen);

/* Add GET /v1/sinks (each sink's queue and counters; an empty list without
 * sinks) to h.  ob is borrowed and must outlive h. */
int gw_alerting_start(struct gw_http *h, const struct gw_outbox *ob, char *err, size_t errlen);

#endif
