/*
 * alerting: gradwatchd's glue to the alert delivery module (see
 * alerting.h): validates the "sinks" configuration, starts the outbox from
 * it, and serves GET /v1/sinks with each sink's queue and counters.  The
 * outbox is fed by the record path (every alert, every commit) and by the
 * acknowledgement routes (ack.c).
 */
#include "alerting.h"

#include "config.h"
#include "http.h"
#include "outbox.h"
#include "sink.h"
#include "util.h"

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

int gw_alerting_outbox(uv_loop_t *loop, const struct gw_cfg *cfg, struct gw_store *store,
                       struct gw_outbox **out, char *err, size_t errlen)
{
	struct gw_sink_cfg *sinks;
	size_t n;
	*out = NULL;
	int rc = gw_sink_parse(cfg->sinks, &sinks, &n, err, errlen);
	if (rc < 0)
		return rc;
	char api[256];
	gw_cfg_link_base(cfg, api, sizeof(api));
	struct gw_outbox_opts o = {
		.loop = loop,
		.store = store,
		.db_path = cfg->db_path,
		.sinks = sinks,
		.n_sinks = n,
		.api_base = api[0] ? api : NULL,
	};
	return gw_outbox_start(&o, out, err, errlen);
}

static void h_sinks(struct gw_http_conn *c, const struct gw_http_req *r)
{
	/* no sinks configured: an empty list, not "no such endpoint" */
	gw_http_respond_json(c, 200, json_pack("{s:o}", "sinks", gw_outbox_stats(r->data)));
}

int gw_alerting_start(struct gw_http *h, const struct gw_outbox *ob, char *err, size_t errlen)
{
	const struct gw_http_route r = {.method = "GET", .path = "/v1/sinks", .handler = h_sinks,
	                                .data = (void *)ob};
	int rc = gw_http_route(h, &r);
	if (rc < 0)
		return gw_errf(err, errlen, rc, "cannot register GET /v1/sinks");
	return 0;
}
