/*
 * fleet: a node's gradwatchd ships what it committed to SQLite into one
 * shared PostgreSQL database, and --fleet-view reads it (docs/fleet.md).
 *
 * Shipping is a thread of its own with its own SQLite connection and its
 * own libpq connection: it never touches the loop, the store's writer or
 * the outbox, so ingest, detection and alert delivery never wait on
 * PostgreSQL.  Every interval it reads the rows committed after its
 * cursors (records and events by id, the durable cursors in the SQLite
 * table fleet_cursor; runs, segments and alerts by their last change) and
 * writes them in one PostgreSQL transaction: COPY into a temporary table,
 * then INSERT ... ON CONFLICT keyed on (node, the row's identity), so a
 * retry, or a crash between the commit in PostgreSQL and the cursor in
 * SQLite, never doubles a row nor loses one.  PostgreSQL down means a
 * backlog that drains when it returns.
 */
#ifndef GW_FLEET_H
#define GW_FLEET_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GW_FLEET_NODE_MAX 64

/* The "fleet" object of the configuration (docs/configuration.md). */
struct gw_fleet_cfg {
	char *dsn;                 /* libpq connection string or URI; a secret: never log it */
	char dsn_log[256];         /* the same with password and user info removed */
	char node[GW_FLEET_NODE_MAX]; /* this node's name in the fleet (default: host name) */
	uint64_t interval_ms;      /* look for new rows this often (1 s) */
	unsigned batch_rows;       /* rows per transaction, at most (20000) */
};

/* Parse the "fleet" object (NULL or absent: shipping off, cfg->dsn NULL).
 * The DSN comes from exactly one of "postgresql", "postgresql_env",
 * "postgresql_file" (gw_secret_load).  0, or a negative errno with a
 * message naming the key in err. */
int gw_fleet_cfg_parse(const json_t *fleet, struct gw_fleet_cfg *cfg, char *err, size_t errlen);
void gw_fleet_cfg_free(struct gw_fleet_cfg *cfg);

/* A DSN for logs: a URI without its user info and query, a key=value
 * string with only host, port and dbname kept. */
void gw_fleet_redact_dsn(const char *dsn, char *out, size_t cap);

/* The SQLite table of the durable cursors, registered with the store's
 * schemas so the store creates and migrates it (storage/store.h). */
struct gw_store_schema;
extern const struct gw_store_schema gw_fleet_schema;

struct gw_fleet;

/* Start the shipper thread over the database at db_path (the store must
 * have opened it: the tables exist).  Does not wait for PostgreSQL: a
 * server that is down is retried with back-off.  0 or a negative errno
 * (err says why). */
int gw_fleet_start(const struct gw_fleet_cfg *cfg, const char *db_path, struct gw_fleet **out,
                   char *err, size_t errlen);
/* Stop and join the thread (a batch in flight is rolled back by
 * PostgreSQL when its connection goes; its rows ship again next start),
 * then free.  NULL is fine.  Cuts a connection that hangs. */
void gw_fleet_stop(struct gw_fleet *f);

enum gw_fleet_table { GW_FLEET_RUNS, GW_FLEET_SEGMENTS, GW_FLEET_RECORDS, GW_FLEET_EVENTS,
                      GW_FLEET_ALERTS, GW_FLEET_N_TABLES };
extern const char *const gw_fleet_table_names[GW_FLEET_N_TABLES];

/* What /metrics and GET /v1/stats say (any thread; a copy under a lock). */
struct gw_fleet_stats {
	const char *node;
	bool up;                   /* the last attempt reached PostgreSQL and committed */
	uint64_t shipped[GW_FLEET_N_TABLES]; /* rows written (upserts included) */
	uint64_t batches, errors;
	uint64_t backlog;          /* committed records and events not yet shipped */
	double lag_s;              /* age of the oldest of them (0: none) */
	double last_ok;            /* wall time of the last committed batch (0: never) */
	char last_error[256];
};
void gw_fleet_stats(struct gw_fleet *f, struct gw_fleet_stats *out);

/* ---- the fleet view (gradwatchd --fleet-view) ---------------------------------------

 * Reads of the shared database in the shapes of the node's own API
 * (core/query.h, storage/series.h); a run is named "NODE/RUN".  Each
 * blocks on PostgreSQL (a thread-pool worker's call, its own connection)
 * and returns the HTTP status, *out the body (the answer or {"error"}). */

/* At start: connect, create the tables when missing.  0 or a negative
 * errno (err says why). */
int gw_fleet_view_check(const char *dsn, char *err, size_t errlen);
/* {"runs": [...]}: every run of every node with node, name, state (live,
 * stalled, ended, idle: as a node's gw_store_read_runs), open_alerts,
 * open_critical, trouble_at; newest trouble first, then most recently
 * seen.  node, state: filters (NULL: all). */
int gw_fleet_view_runs(const char *dsn, const char *node, const char *state, json_t **out);
/* One run, as GET /v1/runs/{run}; its alerts ({run, alerts}); every
 * alert (name NULL); one alert by id. */
int gw_fleet_view_run(const char *dsn, const char *name, json_t **out);
int gw_fleet_view_alerts(const char *dsn, const char *name, json_t **out);
int gw_fleet_view_alert(const char *dsn, const char *id, json_t **out);
/* Chart data as GET /v1/runs/{run}/records (from, to: NULL for open). */
int gw_fleet_view_records(const char *dsn, const char *name, const int64_t *from,
                          const int64_t *to, size_t max_points, json_t **out);
/* {"nodes": [...]}: each node's last shipment, backlog and lag. */
int gw_fleet_view_nodes(const char *dsn, json_t **out);
/* /healthz: {"status": "ok", "nodes": N} when PostgreSQL answers. */
int gw_fleet_view_ping(const char *dsn, json_t **out);

#endif
