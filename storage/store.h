/*
 * store: durable SQLite storage of records, events, segments and alerts.
 *
 * Writes never happen on the caller's thread.  gw_store_put_* append an item
 * to an in-memory queue (a mutex-protected arena) and return its sequence
 * number at once; one writer thread takes the whole queue and writes it in
 * a single transaction when it holds commit_max_records items, when the
 * oldest item is commit_interval_ms old, when gw_store_flush() asks, or at
 * close.  After each commit the writer publishes the last committed sequence
 * number (gw_store_committed) and calls opts.notify from the writer thread
 * (the daemon passes uv_async_send there).  So "acknowledged" means
 * gw_store_committed() >= the item's sequence number.
 *
 * The database is in WAL mode; the schema is versioned with PRAGMA
 * user_version and migrated forward at open (docs/architecture.md lists the
 * tables).  Readers (the HTTP API, `gradwatch runs/alerts`) use their own
 * read-only connections through the gw_store_read_* functions, from any
 * thread except the event loop.
 *
 * A NaN metric is stored as NULL with its bit set in the record's
 * `nonfinite` column (SQLite cannot store NaN); +-Inf are stored as is.
 * Extra metrics are a JSON object in `extra`, where non-finite values are
 * the strings "NaN", "Infinity", "-Infinity" (valid JSON for json_extract).
 */
#ifndef GW_STORE_H
#define GW_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "wire.h"

#define GW_STORE_SCHEMA_VERSION 3 /* see migrations[] in store.c */

struct gw_store_opts {
	const char *path;
	bool sync_full;                /* PRAGMA synchronous=FULL, else NORMAL */
	unsigned commit_interval_ms;
	unsigned commit_max_records;
	size_t max_pending_bytes;      /* gw_store_congested() above this */
	void (*notify)(void *data);    /* called from the writer thread after a commit */
	void *notify_data;
};

struct gw_store;

/* Open (create, migrate) the database and start the writer thread.
 * Returns 0 or a negative errno with a message in err. */
int gw_store_open(const struct gw_store_opts *o, struct gw_store **out,
                  char *err, size_t errlen);

/* Commit everything queued, stop the writer, close.  Returns 0 or the
 * negative errno of the last failed commit. */
int gw_store_close(struct gw_store *s);

/* Queue items.  Each returns the item's sequence number (> 0), or 0 when
 * out of memory.  The arguments are copied. */
uint64_t gw_store_put_record(struct gw_store *s, const struct gw_rec *rec,
                             int64_t seg, uint64_t line, double recv);
uint64_t gw_store_put_event(struct gw_store *s, const struct gw_rec *rec,
                            int64_t seg, uint64_t line, double recv);
uint64_t gw_store_put_segment(struct gw_store *s, const struct gw_segment_info *si,
                              double wall);
uint64_t gw_store_put_alert(struct gw_store *s, const struct gw_alert *a);
/* A small key/value fact kept in the `meta` table (e.g. a followed file's
 * position), written in order with the records it describes. */
uint64_t gw_store_put_meta(struct gw_store *s, const char *key, const char *value);

/* ---- alert delivery outbox (alerts/outbox.c, docs/alerts.md) ---------------- */

/* One alert event (the alert JSON as it was at that event) to deliver. */
uint64_t gw_store_put_outbox(struct gw_store *s, const char *alert_id, int64_t version,
                             const char *kind, const char *run, const char *alert_json,
                             double created);

/* The delivery state of one event at one sink (insert or replace). */
struct gw_store_delivery {
	const char *alert_id;
	int64_t version;
	const char *sink;
	const char *state;         /* "pending", "delivered", "superseded", "failed" */
	int64_t attempts;
	int64_t last_status;       /* HTTP status of the last attempt, 0 if none */
	const char *last_error;    /* NULL or "" if none */
	double updated, delivered; /* wall clock; delivered NaN until then */
};
uint64_t gw_store_put_delivery(struct gw_store *s, const struct gw_store_delivery *dv);
/* Group the items queued between gw_store_hold() and gw_store_release()
 * into one transaction: the writer does not take the queue while it is
 * held (it waits; hold only around a bounded amount of work on the caller's
 * thread).  A followed file's records and the position that covers them are
 * queued this way, so a crash can never commit one without the other.
 * Holds nest. */
void gw_store_hold(struct gw_store *s);
void gw_store_release(struct gw_store *s);

/* Ask the writer to commit now rather than at the interval. */
void gw_store_flush(struct gw_store *s);

/* Sequence number of the last committed item (thread-safe). */
uint64_t gw_store_committed(const struct gw_store *s);

/* Sequence number of the last queued item. */
uint64_t gw_store_queued(const struct gw_store *s);

/* True while the queue holds more than max_pending_bytes (stop reading). */
bool gw_store_congested(const struct gw_store *s);

/* Bytes queued, commits done, last commit error (0 if the last one worked). */
struct gw_store_stats {
	size_t pending_bytes;
	uint64_t commits;
	uint64_t records, events, segments, alerts;
	int last_error;
	char last_error_msg[160];
};
void gw_store_stats(const struct gw_store *s, struct gw_store_stats *out);

/* ---- readers (own connection; any thread but the loop) ---------------------- */

/* Runs as [{run, segment, last_step, last_ts, records, first_seen, last_seen}]. */
int gw_store_read_runs(const char *path, json_t **out, char *err, size_t errlen);

/* One run: {run, segments:[...], last_step, last_values, records, events};
 * -ENOENT if unknown. */
int gw_store_read_run(const char *path, const char *run, json_t **out,
                      char *err, size_t errlen);

/* Alerts, newest first, of one run or all runs (run NULL), at most limit. */
int gw_store_read_alerts(const char *path, const char *run, size_t limit,
                         json_t **out, char *err, size_t errlen);

/* One alert by id (the columns of gw_store_read_alerts); -ENOENT if none. */
int gw_store_read_alert(const char *path, const char *id, json_t **out, char *err, size_t errlen);

/* Every run's last segment, step and ts, to seed the engine after a daemon
 * restart: fn is called once per run. */
int gw_store_read_run_positions(const char *path,
                                void (*fn)(void *data, const char *run, int64_t seg,
                                           int64_t last_step, double last_ts),
                                void *data, char *err, size_t errlen);

/* Attributes and step of a run's last event named `name` (new reference in
 * *attrs); -ENOENT when the run has none. */
int gw_store_read_last_event(const char *path, const char *run, const char *name,
                             json_t **attrs, int64_t *step, char *err, size_t errlen);

/* Value of a meta key (heap string in *out, NULL if absent). */
int gw_store_read_meta(const char *path, const char *key, char **out);

/* ---- alert delivery outbox, start-up reads (read.c) ---------------------------- */

/* Called once before the loop runs.  gw_store_read_outbox calls fn for
 * every pending delivery, oldest event first.  gw_store_read_alert_versions
 * calls fn for every alert that can still change (open, or in its run's
 * last segment) with its version and, when open, the JSON of its last
 * open/update event that went through the outbox (NULL if none). */
int gw_store_read_outbox(const char *path,
                         void (*fn)(void *data, const char *sink, const char *alert_id,
                                    int64_t version, const char *kind, const char *run,
                                    double created, const char *alert_json, int64_t attempts),
                         void *data, char *err, size_t errlen);
int gw_store_read_alert_versions(const char *path,
                                 void (*fn)(void *data, const char *alert_id, int64_t version,
                                            bool open, const char *alert_json),
                                 void *data, char *err, size_t errlen);

#endif
