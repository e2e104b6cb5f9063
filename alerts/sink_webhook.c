/*
 * webhook: generic, signed JSON (docs/alerts.md, "webhook", schema
 * "gradwatch.alert.v2").
 *
 * The body is {"schema", "delivery_id", "event", "timestamp", "sent_at",
 * "alert": {...}, "url", "run_url", "host"}: url is the alert's page in
 * gradwatchd (the run's charts at the alert), run_url the run's page.  The outbox adds the headers: X-Gradwatch-Delivery (the
 * same delivery id on every retry of one event, so a receiver that saw it
 * can tell), X-Gradwatch-Event, X-Gradwatch-Timestamp (== "timestamp") and,
 * with a secret, X-Gradwatch-Signature-256: sha256=<hex HMAC-SHA256 of the
 * body>.  Because the delivery id and the timestamp are also inside the
 * signed body, a receiver can refuse replays without trusting the headers.
 */
#include "sink.h"

#include "engine.h"

#include <math.h>

#define SCHEMA GW_ALERT_SCHEMA

static int webhook_format(const struct gw_sink_cfg *s, const struct gw_sink_msg *m, char **body,
                          size_t *len)
{
	char sent[32];
	gw_sink_rfc3339(m->now, sent);
	json_t *root = json_pack("{s:s, s:s, s:s, s:I, s:I, s:s, s:O}",
	                         "schema", SCHEMA,
	                         "delivery_id", m->delivery_id,
	                         "event", m->event,
	                         "version", (json_int_t)m->version,
	                         "timestamp", (json_int_t)floor(m->now),
	                         "sent_at", sent,
	                         "alert", m->alert);
	(void)s;
	/* links to the alert's page and its run's, and the machine it is on */
	char url[1200];
	if (root && gw__sink_alert_url(m, m->alert, url, sizeof(url)) == 0) {
		json_object_set_new(root, "url", json_string(url));
		gw__sink_run_url(m, m->alert, url, sizeof(url));
		json_object_set_new(root, "run_url", json_string(url));
	}
	if (root && *gw__sink_host())
		json_object_set_new(root, "host", json_string(gw__sink_host()));
	return gw__sink_dump(root, JSON_REAL_PRECISION(17), body, len);
}

const struct gw_sink_type gw_sink_webhook = {
	.name = "webhook",
	.format = webhook_format,
	.default_group_wait_ms = 0,
	.default_repeat_ms = 0,
	.may_sign = true,
};
