/*
 * store: durable SQLite storage of records, events, segments and alerts.
 *
 * Writes never happen on the caller's thread.  gw_store_put_* append an item
 * to an in-memory queue (a mutex-protected arena) and return its sequence
 * number at once; one writer thread writes the queue in a transaction it
 * opens with the first item, taking what was queued every few milliseconds,
 * and commits it when it holds commit_max_records items, when the oldest
 * item is commit_interval_ms old, when gw_store_flush() asks, or at close.  After each commit the writer publishes the last committed sequence
 * number (gw_store_committed) and calls opts.notify from the writer thread
 * (the daemon passes uv_async_send there).  So "acknowledged" means
 * gw_store_committed() >= the item's sequence number.
 *
 * The database is in WAL mode; the schema is versioned with PRAGMA
 * user_version and migrated forward at open (docs/storage.md lists the
 * tables).  Readers (the HTTP API, `gradwatch runs/alerts`) use their own
 * read-only connections through the gw_store_read_* functions, from any
 * thread except the event loop, but for start-up reads before it runs and
 * one bounded exception: a dormant run's rebuild (gw_store_read_tail_on,
 * at most GW_RUNS_REFEED records by an index; core/runs.h says why it
 * cannot wait for a thread).
 *
 * A NaN metric is stored as NULL with its bit set in the record's
 * `nonfinite` column (SQLite cannot store NaN); +-Inf are stored as is.
 * Extra metrics are a JSON object in `extra`, where non-finite values are
 * the strings "NaN", "Infinity", "-Infinity" (valid JSON for json_extract).
 *
 * Rows are typed: a row is one SQL statement of a schema with its values
 * (struct gw_sv: integer, real, text, NULL, or a run name that the writer
 * turns into the run's runs.id, creating the run).  The store's own schema
 * is the telemetry: runs, segments, records, events, the alerts (incident)
 * table and meta; other modules bring their own tables (struct
 * gw_store_schema: migrations and statements, e.g. the alert delivery
 * outbox in alerts/), so storage knows nothing of detectors or delivery.
 */
#ifndef GW_STORE_H
#define GW_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

/* What the WAL file is trimmed to when it starts over after a burst
 * (PRAGMA journal_size_limit): above the WAL of a steady load, so it is not
 * regrown on every restart. */
#define GW_STORE_WAL_KEEP_BYTES (64 << 20)

#define GW_STORE_SCHEMA_VERSION 7 /* the store's own tables: see migrations[] in store.c */

/* ---- typed values -------------------------------------------------------------- */

enum gw_sv_type { GW_SV_NULL, GW_SV_INT, GW_SV_REAL, GW_SV_TEXT, GW_SV_RUN };

struct gw_sv {
	enum gw_sv_type t;
	int64_t i;
	double d;
	const char *s;       /* TEXT, RUN: copied when the row is queued */
	size_t n;            /* its length in bytes */
};

static inline struct gw_sv gw_sv_int(int64_t i)
{
	return (struct gw_sv){.t = GW_SV_INT, .i = i};
}
/* A real; NaN is stored as NULL (SQLite has no NaN). */
static inline struct gw_sv gw_sv_real(double d)
{
	return (struct gw_sv){.t = d == d ? GW_SV_REAL : GW_SV_NULL, .d = d};
}
/* Text of len bytes; NULL s is NULL. */
static inline struct gw_sv gw_sv_textn(const char *s, size_t len)
{
	return (struct gw_sv){.t = s ? GW_SV_TEXT : GW_SV_NULL, .s = s, .n = len};
}
struct gw_sv gw_sv_text(const char *s);
/* The runs.id of the run called s (the run is created if new). */
struct gw_sv gw_sv_run(const char *s, size_t len);

/* A module's tables.  migrations[v] takes the module from version v to
 * v + 1 (its version is kept in the meta table as "schema:<name>"; never
 * edit a released step, add one); statements are the SQL its rows run,
 * with the row's values bound as ?1, ?2, ...  Register it with the store's
 * options; the schema must outlive the store. */
struct gw_store_schema {
	const char *name;
	const char *const *migrations;
	size_t n_migrations;
	const char *const *statements;
	size_t n_statements;
	/* the statements (indices into statements) that delete the module's
	 * rows of a run, ?1 bound to the run's name: gw_store_delete_run
	 * queues them in its transaction, before the store's own rows go (so
	 * they may still join the run's alerts); none when NULL */
	const unsigned *delete_run;
	size_t n_delete_run;
};

struct gw_store_opts {
	const char *path;
	bool sync_full;                /* PRAGMA synchronous=FULL, else NORMAL */
	unsigned commit_interval_ms;
	unsigned commit_max_records;
	size_t max_pending_bytes;      /* gw_store_over(s, 100) above this */
	void (*notify)(void *data);    /* called from the writer thread after a commit */
	void *notify_data;             /* (or set later with gw_store_set_notify) */
	const struct gw_store_schema *const *schemas; /* other modules' tables */
	size_t n_schemas;
};

struct gw_store;

/* SQLite's process-wide options, set before the process opens its first
 * connection (a later call does nothing): its memory statistics off.
 * Nothing here reads them, and keeping them took a global mutex around
 * every allocation SQLite makes, a few for each row the writer inserts
 * (perf of bench_ingest: the daemon's mutex time fell from 5.7% to 3.8%
 * of its CPU). */
void gw_store_lib_init(void);

/* Open (create, migrate: the store's tables, then each schema's) and start
 * the writer thread.  Returns 0 or a negative errno with a message in err. */
int gw_store_open(const struct gw_store_opts *o, struct gw_store **out,
                  char *err, size_t errlen);

/* Replace the commit notification (fn NULL: none).  When it returns, the
 * old one is not running and will not be called again, so its target may be
 * closed. */
void gw_store_set_notify(struct gw_store *s, void (*fn)(void *data), void *data);

/* Commit everything queued, stop the writer, close.  When a commit keeps
 * failing at close, the writer gives up after a few tries and says so
 * loudly (what was lost and why).  Returns 0, or the negative errno of the
 * last failed commit (-EIO when anything was given up). */
int gw_store_close(struct gw_store *s);

/* ---- queueing rows ----------------------------------------------------------------- */

/* Queue a row: statement `stmt` of `schema` (NULL: the store's own, enum
 * gw_store_stmt) with values v[0..n) bound as ?1..?n.  Returns the row's
 * sequence number (> 0), or 0 when out of memory.  Values are copied. */
uint64_t gw_store_put(struct gw_store *s, const struct gw_store_schema *schema, unsigned stmt,
                      const struct gw_sv *v, size_t n);

/* The store's own statements, for gw_store_put with schema NULL. */
enum gw_store_stmt {
	/* alerts (incidents): OPEN (id, run, seg, step, line, detector, severity,
	 * summary, cause, action, evidence JSON, ts, created) inserts or reopens;
	 * UPDATE (id, severity, summary, cause, action, evidence, updated,
	 * last_step, last_line); RESOLVE (id, resolved, last_step, resolution: what the
	 * resolve said, or NULL).  An open or update clears an acknowledgement
	 * (the incident is new or escalated: page again).  ACK (id, acked_at,
	 * acked_by or NULL, ack_note or NULL) acknowledges an open alert that
	 * is not acknowledged; UNACK (id, at) withdraws it; each is an event
	 * of the alert (its version goes up) and a no-op otherwise. */
	GW_STORE_ALERT_OPEN,
	GW_STORE_ALERT_UPDATE,
	GW_STORE_ALERT_RESOLVE,
	GW_STORE_ALERT_ACK,
	GW_STORE_ALERT_UNACK,
	GW_STORE_NSTMT_PUBLIC,
};

/* A metric record or an event line (lib/wire.h) of segment `seg`, source line
 * `line`, received at wall-clock `recv`. */
uint64_t gw_store_put_record(struct gw_store *s, const struct gw_rec *rec,
                             int64_t seg, uint64_t line, double recv);
uint64_t gw_store_put_event(struct gw_store *s, const struct gw_rec *rec,
                            int64_t seg, uint64_t line, double recv);
/* A line the engine kept apart (detectors/engine.h "Ranks", "Interleaved
 * writers": another rank's, or a folded repeat, stored as rank -1), apart
 * from the run's records and events: as wire-format text in rank_lines,
 * with the rank's summary in ranks.  The run's position does not move.
 * Returns the sequence number or 0 (out of memory). */
uint64_t gw_store_put_rank_line(struct gw_store *s, const struct gw_rec *rec, uint64_t line,
                                double recv);
/* The run ended (detectors/engine.h "Run endings") in segment seg at step
 * step, for reason (a short word), at wall clock `at`: kept on the run's
 * row (the last ending counts) until a line past it makes the run go on,
 * which gw_store_read_run_positions tells. */
uint64_t gw_store_put_run_end(struct gw_store *s, const char *run, int64_t seg, int64_t step,
                              const char *reason, double at);
/* Note on the run that its lines were recognised as interleaved writers'
 * (a JSON object, read back as /v1/runs/{run}'s "writers"). */
uint64_t gw_store_put_writers(struct gw_store *s, const char *run, const char *note);
/* A segment of a run: why it opened, the step of its first line, the
 * checkpoint step it restarts from (-1 unknown), its first line, ts, and
 * the wall clock it opened at. */
uint64_t gw_store_put_segment(struct gw_store *s, const char *run, int64_t seg,
                              const char *reason, int64_t first_step, int64_t restart_step,
                              uint64_t line, double ts, double wall);
/* Delete a run and everything of it (records, events, segments, alerts,
 * record_tiles, rank_lines, ranks: the store's own tables; and each
 * schema's rows of it, by its delete_run statements, first) in one
 * transaction.  Returns the last item's sequence (0: out of memory).  The
 * writer holds the database while it deletes (about a second per few
 * hundred thousand records). */
uint64_t gw_store_delete_run(struct gw_store *s, const char *run);

/* A small key/value fact kept in the `meta` table (e.g. a followed file's
 * position), written in order with the records it describes. */
uint64_t gw_store_put_meta(struct gw_store *s, const char *key, const char *value);

/* Group the items queued between gw_store_hold() and gw_store_release()
 * into one transaction: the writer does not commit while the queue is
 * held (it may have written part of the group; it waits for the rest: hold
 * only around a bounded amount of work on the caller's thread).  A followed file's records and the position that covers them,
 * an alert and its outbox rows, are queued this way, so a crash can never
 * commit one without the other.  Holds nest.  An outermost hold taken
 * while the writer waits for the holds to end waits until the writer has
 * taken the queue (microseconds): a caller that holds again right after
 * each release would otherwise keep the writer from ever committing. */
void gw_store_hold(struct gw_store *s);
void gw_store_release(struct gw_store *s);

/* Ask the writer to commit now rather than at the interval. */
void gw_store_flush(struct gw_store *s);

/* Sequence number of the last committed item (thread-safe). */
uint64_t gw_store_committed(const struct gw_store *s);

/* Sequence number of the last queued item. */
uint64_t gw_store_queued(const struct gw_store *s);

/* True while the queue holds more than pct percent of max_pending_bytes
 * (100: the whole limit, stop reading). */
bool gw_store_over(const struct gw_store *s, unsigned pct);

/* Bytes queued, commits done, last commit error (0 if the last one worked). */
struct gw_store_stats {
	size_t pending_bytes;
	uint64_t commits;
	uint64_t records, events, segments, alerts;
	int last_error;            /* of the last commit: 0, or -ENOSPC (disk full), -EIO... */
	char last_error_msg[200];  /* SQLite's message and code name */
	uint64_t dropped;          /* items given up at shutdown */
	uint64_t oldest_pending_ms; /* monotonic ms the oldest uncommitted item was queued, 0: none */
};
void gw_store_stats(const struct gw_store *s, struct gw_store_stats *out);

/* ---- readers (own connection; any thread but the loop) ---------------------- */

/* Lines of rank `rank` (decimal text) of a run that the engine kept apart:
 * the newest `limit`, or with `after` (decimal text, NULL: none) the first
 * `limit` whose id is above it; oldest first: [{id, step, line, ts, recv,
 * text: the line in the wire format (NaN bare, as Python writes it)}], on
 * its own read-only connection.  -ENOENT for an unknown run. */
int gw_store_read_rank_lines(const char *path, const char *run, const char *rank,
                             const char *after, size_t limit, json_t **out, char *err,
                             size_t errlen);

/* A run whose last line arrived within this many seconds is live (the
 * web view's and `gradwatch runs`' state; the stall detector decides on
 * its own, by the run's own interval). */
#define GW_RUN_LIVE_S 120

/* Runs as [{run, segment, last_step, last_ts, first_seen, last_seen,
 * open_alerts, state, ended_reason}], the most recent first.  state:
 * "ended" (a run_finished event, its declared length or the end of a
 * replayed log, and no line after it), "stalled" (a stall alert open),
 * "live" (a line within GW_RUN_LIVE_S), else "idle"; ended_reason: why it
 * ended, or null.  With pg (may be NULL: every run), one page of them:
 * at most pg->limit, those whose name holds pg->q (case-insensitive), the
 * runs with open alerts and then the stalled ones first when
 * trouble_first, after pg->cursor (the `next` of the page before; not with
 * trouble_first); *next (may be NULL) gets the cursor of the page after,
 * or NULL when this is the last; total (may be NULL): [0] every run, [1]
 * those whose name holds q.  -EINVAL with the reason for a bad cursor. */
struct gw_runs_page {
	size_t limit;
	bool trouble_first;
	const char *q;
	const char *cursor;
};
int gw_store_read_runs(const char *path, const struct gw_runs_page *pg, json_t **out,
                       json_t **next, size_t total[2], char *err, size_t errlen);

/* One run: {run, segments:[...], last_step, last_values, records, events,
 * ranks: [{rank, lines, first_step, last_step, last_ts, last_seen}] of the
 * ranks other than 0 that sent lines (the first GW_RUN_RANKS_MAX by rank),
 * ranks_summary: {count, max_rank, behind: {rank, last_step, last_seen}|null}
 * over all of them but -1 (the interleaved writers' repeats), writers: the
 * interleaved-writers note or null};
 * -ENOENT if unknown. */
#define GW_RUN_RANKS_MAX 1000
int gw_store_read_run(const char *path, const char *run, json_t **out,
                      char *err, size_t errlen);

/* Alerts, newest first, of one run or all runs (run NULL), at most limit. */
int gw_store_read_alerts(const char *path, const char *run, size_t limit,
                         json_t **out, char *err, size_t errlen);

/* One alert by id (the columns of gw_store_read_alerts); -ENOENT if none. */
int gw_store_read_alert(const char *path, const char *id, json_t **out, char *err, size_t errlen);

/* Where a run stood, to seed the engine after a daemon restart. */
struct gw_run_position {
	const char *run;
	int64_t seg, last_step;    /* last_step -1: none */
	double last_ts, last_seen; /* last_seen: its last line's arrival */
	bool interleaved;          /* its lines were recognised as interleaved writers' */
	bool ended;                /* it ended (gw_store_put_run_end) and no line went past it */
};

/* Every run's position: fn is called once per run (p valid during the
 * call). */
int gw_store_read_run_positions(const char *path,
                                void (*fn)(void *data, const struct gw_run_position *p),
                                void *data, char *err, size_t errlen);

/* A run's newest n records, and its events from the oldest of them on, in
 * the order they happened (oldest first), to rebuild the detectors' state
 * of an evicted run: fn gets each as a struct gw_rec (roles, ts, NaN
 * restored; of the extras only a declared length, max_steps / total_steps)
 * with its segment, line and arrival (recv, NaN if unknown); a negative
 * return stops the read and is returned.  Returns 0 or a negative errno. */
int gw_store_read_tail(const char *path, const char *run, size_t n,
                       int (*fn)(void *data, const struct gw_rec *rec, int64_t seg, uint64_t line,
                                 double recv),
                       void *data, char *err, size_t errlen);

/* One read-only connection for many gw_store_read_tail_on calls (a
 * daemon's start rebuilds up to 256 runs: one connection, its statements
 * prepared once, instead of one each).  Between calls it holds no read
 * transaction.  Open: 0 or a negative errno (err); close takes NULL.  One
 * thread at a time. */
struct gw_store_reader;
int gw_store_reader_open(const char *path, struct gw_store_reader **out, char *err,
                         size_t errlen);
void gw_store_reader_close(struct gw_store_reader *rd);
/* gw_store_read_tail on rd's connection. */
int gw_store_read_tail_on(struct gw_store_reader *rd, const char *run, size_t n,
                          int (*fn)(void *data, const struct gw_rec *rec, int64_t seg,
                                    uint64_t line, double recv),
                          void *data, char *err, size_t errlen);

/* Attributes and step of a run's last event named `name` (new reference in
 * *attrs); -ENOENT when the run has none. */
int gw_store_read_last_event(const char *path, const char *run, const char *name,
                             json_t **attrs, int64_t *step, char *err, size_t errlen);

/* Value of a meta key (heap string in *out, NULL if absent).  Returns 0
 * (also when absent), or a negative errno when the database cannot be
 * opened or the value cannot be read (*out NULL): never "absent" then. */
int gw_store_read_meta(const char *path, const char *key, char **out);

/* ---- generic reads ------------------------------------------------------------------ */

/* Run one read-only query on its own connection and call fn for each row
 * with the SQLite statement (read it with sqlite3_column_*; valid only
 * during the call).  `binds` are bound as ?1..?n (GW_SV_RUN binds the run's
 * name).  For modules that read their own tables. */
typedef struct sqlite3_stmt sqlite3_stmt;
int gw_store_read_each(const char *path, const char *sql, const struct gw_sv *binds,
                       size_t nbind, void (*fn)(void *ctx, sqlite3_stmt *row), void *ctx,
                       char *err, size_t errlen);

#endif
