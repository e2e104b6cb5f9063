/*
 * schema: the store's own tables, and how every table in the database is
 * created and migrated forward (see schema.h).
 *
 * The store's tables are versioned with PRAGMA user_version, a module's
 * tables (struct gw_store_schema: the alert outbox, idempotency keys) with
 * the row "schema:<name>" in meta.  A version is the number of migration
 * steps applied; each step runs in its own transaction with the statement
 * that records the new version, so a crash leaves the database at a step
 * boundary.  Steps only go forward; a released step is never edited.
 */
#include "schema.h"
#include "tiles.h"

#include "log.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>

/* Schema migrations: migrations[v] takes the database from version v to
 * v + 1.  Never edit a released step; add one. */
static const char *const migrations[] = {
	/* 0 -> 1 */
	"CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
	"CREATE TABLE runs(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
	"  first_seen REAL, last_seen REAL, last_seg INTEGER NOT NULL DEFAULT 0,"
	"  last_step INTEGER, last_ts REAL);"
	"CREATE TABLE segments(run_id INTEGER NOT NULL REFERENCES runs(id), seg INTEGER NOT NULL,"
	"  reason TEXT NOT NULL, first_step INTEGER, restart_step INTEGER, first_line INTEGER,"
	"  ts REAL, opened REAL, PRIMARY KEY(run_id, seg)) WITHOUT ROWID;"
	"CREATE TABLE records(id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, seg INTEGER NOT NULL,"
	"  step INTEGER NOT NULL, line INTEGER, ts REAL, recv REAL, loss REAL, grad_norm REAL,"
	"  lr REAL, throughput REAL, nonfinite INTEGER NOT NULL DEFAULT 0, extra TEXT);"
	"CREATE INDEX records_by_run ON records(run_id, seg, step);"
	"CREATE TABLE events(id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, seg INTEGER NOT NULL,"
	"  step INTEGER NOT NULL, line INTEGER, ts REAL, recv REAL, name TEXT NOT NULL, attrs TEXT);"
	"CREATE INDEX events_by_run ON events(run_id, seg, step);"
	"CREATE TABLE alerts(id TEXT PRIMARY KEY, run_id INTEGER NOT NULL, seg INTEGER NOT NULL,"
	"  step INTEGER NOT NULL, line INTEGER, detector TEXT NOT NULL, severity TEXT NOT NULL,"
	"  state TEXT NOT NULL, summary TEXT NOT NULL, cause TEXT, action TEXT, evidence TEXT,"
	"  ts REAL, created REAL, updated REAL, resolved REAL, last_step INTEGER, last_line INTEGER,"
	"  version INTEGER NOT NULL DEFAULT 1);"
	"CREATE INDEX alerts_by_run ON alerts(run_id, created);",
	/* 1 -> 2: created the alert delivery outbox; those tables now belong to
	 * the alerts module's own schema (alerts/outbox_db.c), whose first
	 * step creates them if this one did not */
	"SELECT 1",
	/* 2 -> 3: per 256-step tile of each run and segment, the steps of the
	 * records holding the chart's extremes (storage/series.c), filled from
	 * the records already stored; the writer keeps it current. */
	GW_SERIES_TILES_MIGRATION,
	/* 3 -> 4: what a resolve said (how long a run was silent, why it
	 * ended), kept beside the summary of what was detected */
	"ALTER TABLE alerts ADD COLUMN resolution TEXT",
	/* 4 -> 5: one run written by several processes (detectors/engine.h
	 * "Ranks", "Interleaved writers"): the lines the engine keeps apart
	 * (other ranks'; interleaved writers' repeats as rank -1) as
	 * wire-format text, per rank a summary kept by a trigger (the run page
	 * reads it every few seconds), the note that a run's lines were
	 * recognised as interleaved writers', and each record's rank (the
	 * primary writer's, so a rebuilt run knows it again) */
	"CREATE TABLE rank_lines(id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL,"
	"  rank INTEGER NOT NULL, step INTEGER NOT NULL, line INTEGER, ts REAL, recv REAL,"
	"  body TEXT NOT NULL);"
	"CREATE INDEX rank_lines_by_run ON rank_lines(run_id, rank, id);"
	"CREATE TABLE ranks(run_id INTEGER NOT NULL, rank INTEGER NOT NULL,"
	"  lines INTEGER NOT NULL, first_step INTEGER, last_step INTEGER, last_ts REAL,"
	"  last_recv REAL, PRIMARY KEY(run_id, rank)) WITHOUT ROWID;"
	"CREATE TRIGGER rank_lines_summary AFTER INSERT ON rank_lines BEGIN"
	"  INSERT INTO ranks(run_id, rank, lines, first_step, last_step, last_ts, last_recv)"
	"  VALUES(new.run_id, new.rank, 1, new.step, new.step, new.ts, new.recv)"
	"  ON CONFLICT(run_id, rank) DO UPDATE SET lines = lines + 1, last_step = new.step,"
	"  last_ts = coalesce(new.ts, last_ts), last_recv = new.recv;"
	" END;"
	"ALTER TABLE runs ADD COLUMN writers TEXT;"
	"ALTER TABLE records ADD COLUMN rank INTEGER",
	/* 5 -> 6: an on-call's acknowledgement of an open alert (docs/alerts.md
	 * "Acknowledging"): when, by whom, the note; and the kind of the
	 * alert's latest event ("open", "update", "resolve", "ack", "unack"),
	 * which an ack makes no longer derivable from the version (NULL on
	 * rows from before: derived as before) */
	"ALTER TABLE alerts ADD COLUMN kind TEXT;"
	"ALTER TABLE alerts ADD COLUMN acked_at REAL;"
	"ALTER TABLE alerts ADD COLUMN acked_by TEXT;"
	"ALTER TABLE alerts ADD COLUMN ack_note TEXT",
	/* 6 -> 7: where and why a run ended (detectors/engine.h "Run endings":
	 * a run_finished event, its declared length reached, a followed file
	 * rotated away, an eviction), so that a restarted daemon does not
	 * watch the silence of a run that had ended: it still has if the run's
	 * last line is in that segment at or below that step
	 * (gw_store_read_run_positions) */
	"ALTER TABLE runs ADD COLUMN ended_seg INTEGER;"
	"ALTER TABLE runs ADD COLUMN ended_step INTEGER;"
	"ALTER TABLE runs ADD COLUMN ended_reason TEXT;"
	"ALTER TABLE runs ADD COLUMN ended_at REAL",
};

_Static_assert(GW_ARRAY_SIZE(migrations) == GW_STORE_SCHEMA_VERSION,
               "GW_STORE_SCHEMA_VERSION is the number of migration steps");

int gw__store_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK: return 0;
	case SQLITE_NOMEM: return -ENOMEM;
	case SQLITE_FULL: return -ENOSPC;
	case SQLITE_BUSY:
	case SQLITE_LOCKED: return -EBUSY;
	case SQLITE_CANTOPEN: return -ENOENT;
	case SQLITE_READONLY:
	case SQLITE_PERM:
	case SQLITE_AUTH: return -EACCES;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB: return -EILSEQ;
	default: return -EIO;
	}
}

int gw__store_exec(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
	char *msg = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
	if (rc != SQLITE_OK) {
		gw_errf(err, errlen, -EIO, "%s", msg ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
		return gw__store_errno(rc);
	}
	return 0;
}

/* Run migration steps [from, n) of one schema, each in its own transaction
 * with the statement that records the new version (set_version, with %d). */
static int run_steps(sqlite3 *db, const char *path, const char *what,
                     const char *const *steps, int from, int n, const char *set_version,
                     char *err, size_t errlen)
{
	for (int v = from; v < n; v++) {
		char sql[320], e[256];
		int rc;
		snprintf(sql, sizeof(sql), set_version, v + 1);
		if ((rc = gw__store_exec(db, "BEGIN IMMEDIATE", e, sizeof(e))) < 0 ||
		    (rc = gw__store_exec(db, steps[v], e, sizeof(e))) < 0 || (rc = gw__store_exec(db, sql, e, sizeof(e))) < 0 ||
		    (rc = gw__store_exec(db, "COMMIT", e, sizeof(e))) < 0) {
			gw__store_exec(db, "ROLLBACK", NULL, 0);
			return gw_errf(err, errlen, rc, "%s: migrating %s from version %d failed: %s", path,
			               what, v, e);
		}
		if (from > 0)
			gw_log_info("store: %s: %s migrated to version %d", path, what, v + 1);
	}
	return 0;
}

/* The integer the query gives (0 when it gives no row: a fresh database);
 * 0, or the negative errno of a failure with SQLite's message in err. */
static int int_query(sqlite3 *db, const char *sql, const char *bind, int *out, char *err,
                     size_t errlen)
{
	sqlite3_stmt *st;
	*out = 0;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK) {
		if (bind)
			sqlite3_bind_text(st, 1, bind, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW)
			*out = sqlite3_column_int(st, 0);
		rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
	}
	if (rc != SQLITE_OK)
		gw_errf(err, errlen, 0, "%s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return gw__store_errno(rc);
}

int gw__store_version(sqlite3 *db, const char *path, const char *who, int *version, char *err,
                      size_t errlen)
{
	char e[256];
	int rc = int_query(db, "PRAGMA user_version", NULL, version, e, sizeof(e));
	if (rc < 0)
		return gw_errf(err, errlen, rc, "%s: cannot read the schema version: %s", path, e);
	if (*version > GW_STORE_SCHEMA_VERSION)
		return gw_errf(err, errlen, -EPROTO, "%s has schema version %d; this %s knows up to %d "
		               "(a newer gradwatch wrote it)", path, *version, who,
		               GW_STORE_SCHEMA_VERSION);
	return 0;
}

int gw__store_migrate(sqlite3 *db, const char *path, const struct gw_store_schema *const *schemas,
                      size_t n_schemas, char *err, size_t errlen)
{
	int version = 0, rc;
	char e[256];
	/* a version that cannot be read is no version 0: the migrations would
	 * run again over the tables that are there */
	if ((rc = gw__store_version(db, path, "gradwatchd", &version, err, errlen)) < 0)
		return rc;
	if ((rc = run_steps(db, path, "the schema", migrations, version, GW_STORE_SCHEMA_VERSION,
	                    "PRAGMA user_version = %d", err, errlen)) < 0)
		return rc;
	for (size_t k = 0; k < n_schemas; k++) {
		const struct gw_store_schema *sc = schemas[k];
		char key[96], set[256];
		snprintf(key, sizeof(key), "schema:%s", sc->name);
		if ((rc = int_query(db, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?1", key,
		                    &version, e, sizeof(e))) < 0)
			return gw_errf(err, errlen, rc, "%s: cannot read the schema version of the %s "
			               "tables: %s", path, sc->name, e);
		if (version > (int)sc->n_migrations)
			return gw_errf(err, errlen, -EPROTO, "%s: the %s tables have version %d; this "
			               "gradwatchd knows up to %zu (a newer gradwatch wrote them)", path,
			               sc->name, version, sc->n_migrations);
		snprintf(set, sizeof(set), "INSERT INTO meta(key, value) VALUES('%s', '%%d') "
		         "ON CONFLICT(key) DO UPDATE SET value = excluded.value", key);
		if ((rc = run_steps(db, path, sc->name, sc->migrations, version,
		                    (int)sc->n_migrations, set, err, errlen)) < 0)
			return rc;
	}
	return 0;
}
