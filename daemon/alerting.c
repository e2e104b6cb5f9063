/*
 * alerting: gradwatchd's glue to the alert delivery module (alerts/,
 * docs/alerts.md).  Validates the "sinks" configuration (also for
 * --check-config), opens the outbox after the store (it reads what is
 * still undelivered, before the loop runs) and serves GET /v1/sinks with
 * each sink's queue and counters.  The engine hook, the commit
 * notification and shutdown call the outbox directly from main.c.
 */
#include "daemon.h"
#include "metrics.h"
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

static void h_sinks(struct hconn *c, const char *arg, const char *query, size_t qlen)
{
	struct gw_daemon *d = gw_http_daemon(c);
	gw_http_respond_json(c, 200, json_pack("{s:o}", "sinks", gw_outbox_stats(d->outbox)));
}

static uint64_t outbox_depth(void *data)
{
	return gw_outbox_depth(data);
}

int gw_alerting_start(struct gw_daemon *d, char *err, size_t errlen)
{
	struct gw_sink_cfg *sinks;
	size_t n;
	int rc = gw_sink_parse(d->cfg->sinks, &sinks, &n, err, errlen);
	if (rc < 0)
		return rc;
	char api[128] = "";
	const struct gw_listen *l = &d->cfg->http;
	if (l->enabled) {
		bool v6 = strchr(l->host, ':') != NULL;
		snprintf(api, sizeof(api), "http://%s%s%s:%d", v6 ? "[" : "", l->host, v6 ? "]" : "",
		         l->port);
	}
	struct gw_outbox_opts o = {
		.loop = d->loop,
		.store = d->store,
		.db_path = d->cfg->db_path,
		.sinks = sinks,
		.n_sinks = n,
		.api_base = api[0] ? api : NULL,
	};
	rc = gw_outbox_open(&o, &d->outbox, err, errlen);
	if (rc == 0 && d->outbox)
		gw_metrics_set_outbox_depth(outbox_depth, d->outbox);
	return rc;
}

int gw_alerting_routes(struct gw_daemon *d)
{
	static const struct gw_http_route r = {"GET", "/v1/sinks", false, NULL, h_sinks, NULL, NULL};
	return gw_http_route(d, &r);
}
