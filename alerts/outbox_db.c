/*
 * outbox_db: the outbox's tables, rows and start-up reads (see outbox_db.h).
 * Rows go through the store's writer queue like every other write, so the
 * loop never touches SQLite; the reads run once, before the loop.
 */
#include "outbox_db.h"

#include <sqlite3.h>
#include <string.h>

/* migrations[v] takes the outbox tables from version v to v + 1.  The first
 * step uses IF NOT EXISTS: databases from before the outbox had its own
 * schema got these tables from the store's second migration. */
static const char *const migrations[] = {
	"CREATE TABLE IF NOT EXISTS outbox(seq INTEGER PRIMARY KEY, alert_id TEXT NOT NULL,"
	"  version INTEGER NOT NULL, kind TEXT NOT NULL, run TEXT NOT NULL, created REAL NOT NULL,"
	"  alert TEXT NOT NULL, UNIQUE(alert_id, version));"
	"CREATE TABLE IF NOT EXISTS deliveries(alert_id TEXT NOT NULL, version INTEGER NOT NULL,"
	"  sink TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,"
	"  updated REAL, delivered REAL, last_status INTEGER, last_error TEXT,"
	"  PRIMARY KEY(alert_id, version, sink)) WITHOUT ROWID;"
	"CREATE INDEX IF NOT EXISTS deliveries_pending ON deliveries(state) WHERE state = 'pending';",
	/* 1 -> 2: the rows of a deleted run's alerts go with it (ST_DEL_RUN_*),
	 * but for pending deliveries (at least once); those go when they are
	 * no longer pending, by this trigger (their alert is gone); and the
	 * rows the runs deleted before this step left behind go now */
	"CREATE TRIGGER deliveries_of_deleted_alerts AFTER UPDATE OF state ON deliveries"
	"  WHEN new.state != 'pending' AND NOT EXISTS (SELECT 1 FROM alerts WHERE id = new.alert_id)"
	" BEGIN"
	"  DELETE FROM deliveries WHERE alert_id = new.alert_id AND version = new.version"
	"    AND sink = new.sink;"
	"  DELETE FROM outbox WHERE alert_id = new.alert_id AND version = new.version"
	"    AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.alert_id = new.alert_id"
	"    AND d.version = new.version);"
	" END;"
	"DELETE FROM deliveries WHERE state != 'pending'"
	"  AND NOT EXISTS (SELECT 1 FROM alerts a WHERE a.id = deliveries.alert_id);"
	"DELETE FROM outbox WHERE NOT EXISTS (SELECT 1 FROM alerts a WHERE a.id = outbox.alert_id)"
	"  AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.alert_id = outbox.alert_id"
	"  AND d.version = outbox.version);",
};

enum { ST_EVENT, ST_DELIVERY, ST_DEL_RUN_DELIVERIES, ST_DEL_RUN_OUTBOX };

static const char *const statements[] = {
	[ST_EVENT] = "INSERT INTO outbox(alert_id, version, kind, run, created, alert) "
	             "VALUES(?1,?2,?3,?4,?5,?6) ON CONFLICT(alert_id, version) DO NOTHING",
	[ST_DELIVERY] = "INSERT INTO deliveries(alert_id, version, sink, state, attempts, updated, "
	                "delivered, last_status, last_error) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9) "
	                "ON CONFLICT(alert_id, version, sink) DO UPDATE SET state = excluded.state, "
	                "attempts = excluded.attempts, updated = excluded.updated, "
	                "delivered = excluded.delivered, last_status = excluded.last_status, "
	                "last_error = excluded.last_error",
	/* a run is deleted (gw_store_delete_run, before its alerts go): the
	 * rows of its alerts' events, but for deliveries still pending and
	 * their events (the trigger of migration 2 takes them later) */
	[ST_DEL_RUN_DELIVERIES] = "DELETE FROM deliveries WHERE state != 'pending' AND alert_id IN "
	                          "(SELECT id FROM alerts WHERE run_id = "
	                          "(SELECT id FROM runs WHERE name = ?1))",
	[ST_DEL_RUN_OUTBOX] = "DELETE FROM outbox WHERE alert_id IN (SELECT id FROM alerts WHERE "
	                      "run_id = (SELECT id FROM runs WHERE name = ?1)) AND NOT EXISTS "
	                      "(SELECT 1 FROM deliveries d WHERE d.alert_id = outbox.alert_id AND "
	                      "d.version = outbox.version)",
};

static const unsigned delete_run[] = {ST_DEL_RUN_DELIVERIES, ST_DEL_RUN_OUTBOX};

const struct gw_store_schema gw_outbox_schema = {
	.name = "outbox",
	.migrations = migrations,
	.n_migrations = sizeof(migrations) / sizeof(migrations[0]),
	.statements = statements,
	.n_statements = sizeof(statements) / sizeof(statements[0]),
	.delete_run = delete_run,
	.n_delete_run = sizeof(delete_run) / sizeof(delete_run[0]),
};

uint64_t gw_outbox_db_put_event(struct gw_store *s, const char *alert_id, int64_t version,
                                const char *kind, const char *run, const char *alert_json,
                                double created)
{
	const struct gw_sv v[] = {
		gw_sv_text(alert_id), gw_sv_int(version), gw_sv_text(kind), gw_sv_text(run),
		gw_sv_real(created), gw_sv_text(alert_json),
	};
	return gw_store_put(s, &gw_outbox_schema, ST_EVENT, v, sizeof(v) / sizeof(v[0]));
}

uint64_t gw_outbox_db_put_delivery(struct gw_store *s, const struct gw_outbox_delivery *dv)
{
	const struct gw_sv none = {.t = GW_SV_NULL};
	const struct gw_sv v[] = {
		gw_sv_text(dv->alert_id), gw_sv_int(dv->version), gw_sv_text(dv->sink),
		gw_sv_text(dv->state), gw_sv_int(dv->attempts), gw_sv_real(dv->updated),
		gw_sv_real(dv->delivered), dv->last_status ? gw_sv_int(dv->last_status) : none,
		dv->last_error && *dv->last_error ? gw_sv_text(dv->last_error) : none,
	};
	return gw_store_put(s, &gw_outbox_schema, ST_DELIVERY, v, sizeof(v) / sizeof(v[0]));
}

static const char *text(sqlite3_stmt *st, int k)
{
	return (const char *)sqlite3_column_text(st, k);
}

struct pending_ctx {
	void (*fn)(void *data, const char *sink, const char *alert_id, int64_t version,
	           const char *kind, const char *run, double created, const char *alert_json,
	           int64_t attempts);
	void *data;
};

static void pending_row(void *ctx, sqlite3_stmt *st)
{
	struct pending_ctx *c = ctx;
	c->fn(c->data, text(st, 0), text(st, 1), sqlite3_column_int64(st, 2), text(st, 3),
	      text(st, 4), sqlite3_column_double(st, 5), text(st, 6), sqlite3_column_int64(st, 7));
}

int gw_outbox_db_read_pending(const char *path,
                              void (*fn)(void *data, const char *sink, const char *alert_id,
                                         int64_t version, const char *kind, const char *run,
                                         double created, const char *alert_json,
                                         int64_t attempts),
                              void *data, char *err, size_t errlen)
{
	struct pending_ctx c = {fn, data};
	return gw_store_read_each(path,
	                          "SELECT d.sink, o.alert_id, o.version, o.kind, o.run, o.created, "
	                          "o.alert, d.attempts FROM deliveries d JOIN outbox o "
	                          "ON o.alert_id = d.alert_id AND o.version = d.version "
	                          "WHERE d.state = 'pending' ORDER BY o.seq",
	                          NULL, 0, pending_row, &c, err, errlen);
}

struct versions_ctx {
	void (*fn)(void *data, const char *alert_id, const char *run, int64_t version, bool open,
	           bool acked, const char *alert_json);
	void *data;
};

static void versions_row(void *ctx, sqlite3_stmt *st)
{
	struct versions_ctx *c = ctx;
	c->fn(c->data, text(st, 0), text(st, 5), sqlite3_column_int64(st, 1),
	      sqlite3_column_int(st, 2) != 0, sqlite3_column_int(st, 4) != 0, text(st, 3));
}

int gw_outbox_db_read_versions(const char *path,
                               void (*fn)(void *data, const char *alert_id, const char *run,
                                          int64_t version, bool open, bool acked,
                                          const char *alert_json),
                               void *data, char *err, size_t errlen)
{
	struct versions_ctx c = {fn, data};
	return gw_store_read_each(path,
	                          "SELECT a.id, a.version, a.state = 'open', "
	                          "CASE WHEN a.state = 'open' THEN (SELECT o.alert FROM outbox o "
	                          "  WHERE o.alert_id = a.id AND o.kind != 'resolve' "
	                          "  ORDER BY o.version DESC LIMIT 1) END, a.acked_at IS NOT NULL, "
	                          "r.name FROM alerts a JOIN runs r ON r.id = a.run_id "
	                          "WHERE a.state = 'open' OR a.seg = r.last_seg",
	                          NULL, 0, versions_row, &c, err, errlen);
}
