/*
 * metrics: GET /metrics in the Prometheus text exposition format (0.0.4),
 * so the Prometheus and Alertmanager a cluster already runs can watch a
 * fleet of sidecars (see metrics.c for the metric names).
 */
#ifndef GW_METRICS_H
#define GW_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct gw_daemon;

/* Register GET /metrics on the daemon's HTTP server (after gw_http_start).
 * Returns 0 or -ENOSPC (route table full, message in err). */
int gw_metrics_start(struct gw_daemon *d, char *err, size_t errlen);

/* Write s as an escaped label value (backslash, double quote, newline). */
void gw_metrics_label(FILE *f, const char *s);

#endif
