/*
 * outbox: durable, ordered, rate-limited delivery of alerts to the sinks
 * (docs/alerts.md, "Delivery").
 *
 * The outbox is the alert's home on the daemon, from its row to its
 * delivery: it keeps the alerts that can still change (their versions and
 * states: the authority an acknowledgement decides on), queues their rows
 * (alert_row.c) and their deliveries (outbox_db.c), and sends them
 * (outbox_send.c).
 *
 * Life of an alert event (open, update or resolve of one alert id):
 *   1. the engine hook calls gw_outbox_alert(), which queues the alert's
 *      row in the alerts table, gives the event the alert's next version,
 *      queues one `outbox` row and one `deliveries` row per matching sink
 *      through the store's writer (outbox_db.c), and asks the writer to
 *      commit now; all of them under one store hold, so the alert and its
 *      outbox rows are committed in one transaction;
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
 *      synchronous read, before the loop runs) and sends it first, and
 *      resolves the alerts of wall-clock detectors (a stall) that the
 *      daemon before left open: their watcher, the run's live state, is
 *      gone.
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
 * the HTTP client on the loop, resolve the stalls the daemon before left
 * open.  With no sinks the outbox keeps only the
 * table of known alerts (open, acknowledged: gw_outbox_open_alerts, acks
 * from the API) and sends nothing: no handle, no libcurl.  Blocks on a
 * database read: call before uv_run.
 * Returns 0 or a negative errno with a message in err; on failure *out may
 * be set: gw_outbox_stop and gw_outbox_free it as after a start. */
int gw_outbox_start(const struct gw_outbox_opts *o, struct gw_outbox **out, char *err,
                   size_t errlen);

/* An alert event from the engine (loop thread): its row in the alerts
 * table (gw_alert_row_put; also while the outbox is stopping) and its
 * deliveries, under one store hold.  Copies what it keeps. */
void gw_outbox_alert(struct gw_outbox *ob, const struct gw_alert *a);

/* Acknowledge (ack true) or withdraw the acknowledgement of open alert id
 * (loop thread; docs/alerts.md "Acknowledging"), deciding on the outbox's
 * table, which has every change decided so far, committed or not.  The
 * event "ack" or "unack" gets the alert's next version: its row in the
 * alerts table (gw_alert_row_ack) and its deliveries to the sinks that
 * take the alert are queued under one store hold.  While acknowledged, the
 * alert is not repeated to Slack and webhook sinks; Alertmanager's resends
 * go on, carrying the acknowledgement.  by and note may be NULL.  row is
 * the alert as read (gw_alert_row_json) after everything queued before the
 * request was committed; a change decided after that read is the table's:
 * *answer is row with the table's latest state (version, kind,
 * acknowledgement) over it.  Returns 0 (done), or -EALREADY (it already is
 * so: nothing queued), each with *answer (new reference) and *seq, the
 * store sequence that answer is committed at (answer once it is; 0: it is
 * already); -ENOENT when the table has the alert resolved or does not have
 * it; -ESHUTDOWN while the outbox stops; -ENOMEM. */
int gw_outbox_ack(struct gw_outbox *ob, const char *id, bool ack, double at, const char *by,
                  const char *note, const json_t *row, json_t **answer, uint64_t *seq);

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
