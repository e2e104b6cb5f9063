/*
 * alert_row: an alert's row in the alerts table (the store's own table,
 * storage/store.h GW_STORE_ALERT_*): building the row of each event the
 * engine reports (open, update, resolve) and of each acknowledgement,
 * reading the open alerts of some detectors back, and turning a stored row
 * into the one alert object (docs/alert-schema.md) the API, the CLI and
 * the web view show.  The outbox (outbox.h) queues the rows together with
 * the alert's deliveries; the API's reads (core/query.c) decode them.
 */
#ifndef GW_ALERT_ROW_H
#define GW_ALERT_ROW_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

struct gw_store;

/* Queue the row of event a: an open inserts (or reopens) the alert, an
 * update rewrites what it says, a resolve closes it (a->wall NaN: now).
 * Returns the row's sequence number, 0 when out of memory. */
uint64_t gw_alert_row_put(struct gw_store *st, const struct gw_alert *a);

/* Queue an acknowledgement (ack) of open alert id, or its withdrawal, at
 * wall clock at; by and note may be NULL (a withdrawal keeps neither).
 * Returns the row's sequence number, 0 when out of memory. */
uint64_t gw_alert_row_ack(struct gw_store *st, const char *id, bool ack, double at,
                          const char *by, const char *note);

/* Every open alert of the detectors named in det[0..n) in the database at
 * db_path (read-only, its own connection; blocking: at start-up): fn gets
 * each as the resolve that would close it (kind GW_ALERT_RESOLVE, its
 * run, segment, step, line, detector and severity; summary NULL; ts and
 * wall NaN; valid during the call).  0, or a negative errno with a message
 * in err. */
int gw_alert_rows_open(const char *db_path, const char *const *det, size_t n,
                       void (*fn)(void *ctx, const struct gw_alert *a), void *ctx, char *err,
                       size_t errlen);

/* A stored alert (a row of storage/read.c's alert queries: id, run,
 * segment, step, line, detector, severity, state, summary, cause, action,
 * evidence, ts, created, updated, resolved, last_step, last_line, version,
 * kind, acked_*) as the alert object of its latest event.  New reference,
 * or NULL. */
json_t *gw_alert_row_json(const json_t *row);

#endif
