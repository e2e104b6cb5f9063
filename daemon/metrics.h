/*
 * metrics: GET /metrics in the Prometheus text exposition format (0.0.4),
 * so the Prometheus and Alertmanager a cluster already runs can watch a
 * fleet of sidecars (see metrics.c for the metric names).
 */
#ifndef GW_METRICS_H
#define GW_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct gw_daemon;

/* Register GET /metrics on the daemon's HTTP server (after gw_http_start).
 * Returns 0 or -ENOSPC (route table full, message in err). */
int gw_metrics_start(struct gw_daemon *d, char *err, size_t errlen);

/* One alert sink's delivery counters, as the outbox gives them. */
struct gw_metrics_sink {
	const char *name, *type;
	uint64_t pending, delivered, failed, retries;
};

/* HOOK for the alert outbox: once registered, `sink(data, i, out)` fills
 * *out for sink i and returns false past the last one; every scrape
 * exports gradwatch_outbox_depth (deliveries queued or in flight over all
 * sinks) and per sink gradwatch_alert_deliveries_total{sink,type,result},
 * gradwatch_alert_delivery_retries_total{sink,type} and
 * gradwatch_alert_deliveries_pending{sink,type}.  Until it is registered
 * (no sinks) none of these is exported.  Loop thread only. */
void gw_metrics_set_outbox(bool (*sink)(void *data, size_t i, struct gw_metrics_sink *out),
                           void *data);

/* Write s as an escaped label value (backslash, double quote, newline). */
void gw_metrics_label(FILE *f, const char *s);

#endif
