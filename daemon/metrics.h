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

struct gw_cfg;
struct gw_http;
struct gw_ingest;
struct gw_outbox;
struct gw_store;

/* What a scrape reads (borrowed; the struct itself too: it must outlive
 * the HTTP server). */
struct gw_metrics_opts {
	const struct gw_cfg *cfg;        /* the database's path (file sizes) */
	struct gw_ingest *ingest;        /* counters, runs */
	struct gw_store *store;          /* commits, queue */
	const struct gw_outbox *outbox;  /* open alerts, sinks */
	double started;                  /* wall clock of the start */
	struct gw_fleet *fleet;          /* shipping to PostgreSQL, or NULL */
};

/* Register GET /metrics on h (after gw_http_start).  Returns 0 or -ENOSPC
 * (route table full, message in err). */
int gw_metrics_start(struct gw_http *h, const struct gw_metrics_opts *o, char *err,
                     size_t errlen);

/* Write s as an escaped label value (backslash, double quote, newline). */
void gw_metrics_label(FILE *f, const char *s);

#endif
