/*
 * outbox: durable, ordered, rate-limited delivery of alerts to the sinks
 * (docs/alerts.md, "Delivery").
 *
 * Life of an alert event (open, update or resolve of one alert id):
 *   1. the engine hook stores the alert (its row in the alerts table) and
 *      then calls gw_outbox_alert(), which gives the event the alert's next
 *      version, queues one `outbox` row and one `deliveries` row per
 *      matching sink through the store's writer (outbox_db.c), and asks the
 *      writer to commit now; the hook holds the store around both, so the
 *      alert and its outbox rows are committed in one transaction;
 *   2. nothing is sent before gw_store_committed() covers those rows (the
 *      daemon forwards every commit with gw_outbox_committed()), so an
 *      alert is in SQLite before any receiver hears of it;
 *   3. each sink sends its queue in order, at most one event per run at a
 *      time (per-run order), several runs in parallel (max_in_flight),
 *      after the group wait, within the rate limit;
 *   4. every outcome (delivered, retry with its attempt count, failed,
 *      superseded) goes back to SQLite through the same writer queue; the
 *      loop never touches SQLite;
 *   5. at start-up gw_outbox_start() reads what is still pending (a
 *      synchronous read, before the loop runs) and sends it first.
 *
 * Delivery is at least once, and idempotent by id: an event keeps its
 * delivery id ("<alert id>-v<version>") on every retry and after a restart,
 * so a receiver that saw the id can tell it is a repeat.
 *
 * Everything here runs on the loop thread; ingest never waits for it.
 */
#ifndef GW_OUTBOX_H
#define GW_OUTBOX_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "engine.h"
#include "sink.h"
#include "store.h"

struct gw_outbox_opts {
	uv_loop_t *loop;
	struct gw_store *store;
	const char *db_path;          /* for the start-up read */
	struct gw_sink_cfg *sinks;    /* taken over (gw_sink_parse); freed by gw_outbox_free */
	size_t n_sinks;
	const char *api_base;         /* "http://127.0.0.1:7471" for links, or NULL */
};

struct gw_outbox;

/* Load pending deliveries and alert versions, set up the sinks' timers and
 * the HTTP client on the loop.  With no sinks the outbox keeps only the
 * table of known alerts (open, acknowledged: gw_outbox_open_alerts, acks
 * from the API) and sends nothing: no handle, no libcurl.  Blocks on a
 * database read: call before uv_run.
 * Returns 0 or a negative errno with a message in err; on failure *out may
 * be set: gw_outbox_stop and gw_outbox_free it as after a start. */
int gw_outbox_start(const struct gw_outbox_opts *o, struct gw_outbox **out, char *err,
                   size_t errlen);

/* An alert event from the engine (loop thread), right after it was queued
 * to the store.  Copies what it keeps. */
void gw_outbox_alert(struct gw_outbox *ob, const struct gw_alert *a);

/* Acknowledge (ack true) or withdraw the acknowledgement of an open alert
 * (loop thread; docs/alerts.md "Acknowledging"): the event "ack" or
 * "unack" gets the alert's next version and goes to the sinks that take
 * the alert, through the outbox like any event; the caller holds the store
 * around this and its own alerts-table row (GW_STORE_ALERT_ACK/UNACK) so
 * both commit together.  While acknowledged, the alert is not repeated to
 * Slack and webhook sinks; Alertmanager's resends go on, carrying the
 * acknowledgement.  by and note may be NULL; row is the alert as stored
 * (gw_alert_row_json), the snapshot to start from when no event of it went
 * through the outbox yet.  Returns 0 with *seq the last
 * queued row (0 when no sink takes the alert, or ob is NULL: nothing to
 * send), -ENOENT when the outbox has the alert as resolved or unknown,
 * -EALREADY when it already is in that state (nothing queued), -ENOMEM. */
int gw_outbox_ack(struct gw_outbox *ob, const char *id, bool ack, double at, const char *by,
                  const char *note, const json_t *row, uint64_t *seq);

/* Whether the outbox has open alert `id` as acknowledged: 1 or 0 (its
 * state after every ack/unack queued so far, committed or not), -ENOENT
 * when it has the alert as resolved or unknown (or ob is NULL).  Loop
 * thread. */
int gw_outbox_acked(const struct gw_outbox *ob, const char *id);

/* Make alert object a the ack (or unack) event of version `version` at
 * `at`: kind, version, raised_at, and acked_at/acked_by/ack_note (an ack)
 * or unacked_by (an unack) set or removed.  by and note may be NULL.  The
 * outbox's event and the API's answer are the same object by this. */
void gw_outbox_ack_event(json_t *a, bool ack, int64_t version, double at, const char *by,
                         const char *note);

/* Run `run` was deleted (retention, DELETE /v1/runs/{run}; its alerts
 * and the outbox rows already delivered go with it in the store): forget
 * its alerts -- no longer open, no repeats.  An event of them still queued
 * is sent all the same (at least once).  Loop thread; walks the known
 * alerts and the sinks' queues; no I/O. */
void gw_outbox_forget_run(struct gw_outbox *ob, const char *run);

/* The store committed everything up to seq (loop thread). */
void gw_outbox_committed(struct gw_outbox *ob, uint64_t seq);

/* Per-sink counters and queue lengths, for the API and tests. */
json_t *gw_outbox_stats(const struct gw_outbox *ob);

/* Open alerts, and how many of them are acknowledged (loop thread; walks
 * the alerts that can still change), with or without sinks.  Zero when ob
 * is NULL. */
void gw_outbox_open_alerts(const struct gw_outbox *ob, size_t *open, size_t *acked);

/* How many sinks it sends to (0: none configured, or ob NULL). */
size_t gw_outbox_sinks(const struct gw_outbox *ob);

/* Deliveries queued or in flight over all sinks (the outbox depth). */
uint64_t gw_outbox_depth(const struct gw_outbox *ob);

/* One sink's delivery counters since the start (GET /metrics).  name and
 * type are the configuration's, valid while ob is. */
struct gw_outbox_counts {
	const char *name, *type;
	uint64_t pending;       /* queued or in flight */
	uint64_t delivered, failed, retries;
};

/* Fill *out for sink i (in configuration order); false past the last one
 * (or when ob is NULL).  Loop thread. */
bool gw_outbox_sink_counts(const struct gw_outbox *ob, size_t i, struct gw_outbox_counts *out);

/* Sink i's alert events that failed at least once and are still not
 * delivered (repeats of open alerts aside): how many, and the wall clock at
 * which the oldest of them was raised (NaN when none).  Walks the sink's
 * queue (loop thread; no I/O).  False past the last sink. */
bool gw_outbox_sink_failing(const struct gw_outbox *ob, size_t i, size_t *n, double *oldest,
                            const char **last_error);

/* Lifecycle (docs/architecture.md, "Starting and stopping"):
 * gw_outbox_start, gw_outbox_stop, gw_outbox_free after the loop ran.
 * Stop: abort requests in flight (they stay pending in the database and are
 * sent again after a restart) and close every handle (idempotent; ob may be
 * NULL).  The loop must run once more for the close callbacks; then call
 * gw_outbox_free. */
void gw_outbox_stop(struct gw_outbox *ob);
void gw_outbox_free(struct gw_outbox *ob);

#endif
