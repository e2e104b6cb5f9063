/*
 * alerting: gradwatchd's glue to the alert delivery module (alerts/,
 * docs/alerts.md): validates the "sinks" configuration (also for
 * --check-config), exports the outbox depth to /metrics and serves
 * GET /v1/sinks with each sink's queue and counters; the acknowledgement
 * routes are in ack.c.  The outbox itself is
 * owned by the record path (ingest.c), which feeds it every alert and every
 * commit.
 */
#include "daemon.h"
#include "http.h"

#include "outbox.h"
#include "sink.h"

#include <stdio.h>
#include <string.h>

int gw_alerting_check(const struct gw_cfg *cfg, char *err, size_t errlen)
{
	struct gw_sink_cfg *sinks;
	size_t n;
	int rc = gw_sink_parse(cfg->sinks, &sinks, &n, err, errlen);
	if (rc < 0)
		return rc;
	gw_sink_free_all(sinks, n);
	return 0;
}

static void h_sinks(struct gw_http_conn *c, const struct gw_http_req *r)
{
	struct gw_daemon *d = r->data;
	/* no sinks configured: an empty list, not "no such endpoint" */
	json_t *stats = d->ingest.outbox ? gw_outbox_stats(d->ingest.outbox) : json_array();
	gw_http_respond_json(c, 200, json_pack("{s:o}", "sinks", stats));
}

int gw_alerting_start(struct gw_daemon *d, char *err, size_t errlen)
{
	const struct gw_http_route r = {.method = "GET", .path = "/v1/sinks", .handler = h_sinks, .data = d};
	int rc = gw_http_route(d->http, &r);
	if (rc < 0) {
		snprintf(err, errlen, "cannot register GET /v1/sinks");
		return rc;
	}
	return gw_ack_start(d, err, errlen);
}
