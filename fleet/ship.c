/*
 * ship: the shipper thread (fleet.h).  One cycle:
 *
 *   1. in one SQLite read transaction (a snapshot of what is committed),
 *      the records and events after their cursors (at most batch_rows of
 *      each), and the runs, segments and alerts changed since the last
 *      good cycle began, less CHANGE_MARGIN_S (a row's change time is set
 *      a commit interval before it is visible; re-sending a row costs an
 *      upsert, missing one would cost its change), each row turned into
 *      a row of COPY's binary format with this node's name in front;
 *   2. in one PostgreSQL transaction, per table COPY into a temporary
 *      table and INSERT ... SELECT ... ON CONFLICT: records and events DO
 *      NOTHING on (node, id), runs, segments and alerts DO UPDATE on
 *      (node, name), (node, run, seg), (node, id); and the node's row in
 *      gw_nodes (its cursors, backlog, lag);
 *   3. after PostgreSQL committed, the cursors in SQLite (fleet_cursor).
 *
 * A crash anywhere leaves PostgreSQL with the batch or without it, and
 * SQLite's cursors at or behind it: the rows after SQLite's cursor are sent
 * again and the conflicts drop them.  PostgreSQL unreachable: the cycle
 * fails, the cursors stay, the next try waits (back-off from 0.5 s to
 * 30 s) and the backlog waits in SQLite, where it is anyway.
 */
#include "ship_impl.h"

#include "clock.h"
#include "fault.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHANGE_MARGIN_S 30.0
#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 30000
#define PG_TIMEOUT_S 60.0

/* PostgreSQL's tables: what a node ships, keyed on the node and what
 * identifies the row there.  Created if missing, under an advisory lock
 * so that nodes starting together do not race. */
const char gw__fleet_pg_schema[] =
	"BEGIN;"
	"SELECT pg_advisory_xact_lock(4711023);"
	"CREATE TABLE IF NOT EXISTS gw_nodes(node text PRIMARY KEY, last_ok float8,"
	"  records_cursor bigint, events_cursor bigint, backlog bigint, lag_s float8);"
	"CREATE TABLE IF NOT EXISTS gw_runs(node text NOT NULL, name text NOT NULL,"
	"  first_seen float8, last_seen float8, last_seg int, last_step bigint, last_ts float8,"
	"  writers text, ended_seg int, ended_step bigint, ended_reason text, ended_at float8,"
	"  PRIMARY KEY(node, name));"
	"CREATE TABLE IF NOT EXISTS gw_segments(node text NOT NULL, run text NOT NULL,"
	"  seg int NOT NULL, reason text, first_step bigint, restart_step bigint,"
	"  first_line bigint, ts float8, opened float8, PRIMARY KEY(node, run, seg));"
	"CREATE TABLE IF NOT EXISTS gw_records(node text NOT NULL, id bigint NOT NULL,"
	"  run text NOT NULL, seg int NOT NULL, step bigint NOT NULL, line bigint, ts float8,"
	"  recv float8, loss float8, grad_norm float8, lr float8, throughput float8,"
	"  nonfinite int, extra text, rank int, PRIMARY KEY(node, id));"
	"CREATE INDEX IF NOT EXISTS gw_records_by_run ON gw_records(node, run, seg, step);"
	"CREATE TABLE IF NOT EXISTS gw_events(node text NOT NULL, id bigint NOT NULL,"
	"  run text NOT NULL, seg int NOT NULL, step bigint NOT NULL, line bigint, ts float8,"
	"  recv float8, name text NOT NULL, attrs text, PRIMARY KEY(node, id));"
	"CREATE INDEX IF NOT EXISTS gw_events_by_run ON gw_events(node, run, seg, step);"
	"CREATE TABLE IF NOT EXISTS gw_alerts(node text NOT NULL, id text NOT NULL,"
	"  run text NOT NULL, seg int, step bigint, line bigint, detector text, severity text,"
	"  state text, summary text, cause text, action text, evidence text, ts float8,"
	"  created float8, updated float8, resolved float8, last_step bigint, last_line bigint,"
	"  version int, resolution text, kind text, acked_at float8, acked_by text, ack_note text,"
	"  PRIMARY KEY(node, id));"
	"CREATE INDEX IF NOT EXISTS gw_alerts_by_run ON gw_alerts(node, run);"
	"COMMIT";

/* The temporary tables COPY fills; emptied at every commit. */
static const char pg_temp[] =
	"CREATE TEMP TABLE IF NOT EXISTS t_runs (LIKE gw_runs) ON COMMIT DELETE ROWS;"
	"CREATE TEMP TABLE IF NOT EXISTS t_segments (LIKE gw_segments) ON COMMIT DELETE ROWS;"
	"CREATE TEMP TABLE IF NOT EXISTS t_records (LIKE gw_records) ON COMMIT DELETE ROWS;"
	"CREATE TEMP TABLE IF NOT EXISTS t_events (LIKE gw_events) ON COMMIT DELETE ROWS;"
	"CREATE TEMP TABLE IF NOT EXISTS t_alerts (LIKE gw_alerts) ON COMMIT DELETE ROWS";

const struct gw__fleet_table gw__fleet_tables[GW_FLEET_N_TABLES] = {
	[GW_FLEET_RUNS] = {
		"SELECT name, first_seen, last_seen, last_seg, last_step, last_ts, writers, ended_seg,"
		" ended_step, ended_reason, ended_at FROM runs"
		" WHERE max(coalesce(last_seen, 0), coalesce(ended_at, 0)) >= ?1 LIMIT ?2",
		"COPY t_runs FROM STDIN (FORMAT binary)",
		"INSERT INTO gw_runs SELECT * FROM t_runs ON CONFLICT (node, name) DO UPDATE SET"
		" first_seen = excluded.first_seen, last_seen = excluded.last_seen,"
		" last_seg = excluded.last_seg, last_step = excluded.last_step,"
		" last_ts = excluded.last_ts, writers = excluded.writers,"
		" ended_seg = excluded.ended_seg, ended_step = excluded.ended_step,"
		" ended_reason = excluded.ended_reason, ended_at = excluded.ended_at",
		false, NULL, "ttffiBftiBtf",
	},
	[GW_FLEET_SEGMENTS] = {
		"SELECT n.name, s.seg, s.reason, s.first_step, s.restart_step, s.first_line, s.ts,"
		" s.opened FROM segments s JOIN runs n ON n.id = s.run_id"
		" WHERE max(coalesce(n.last_seen, 0), coalesce(n.ended_at, 0)) >= ?1 LIMIT ?2",
		"COPY t_segments FROM STDIN (FORMAT binary)",
		"INSERT INTO gw_segments SELECT * FROM t_segments ON CONFLICT (node, run, seg) DO UPDATE"
		" SET reason = excluded.reason, first_step = excluded.first_step,"
		" restart_step = excluded.restart_step, first_line = excluded.first_line,"
		" ts = excluded.ts, opened = excluded.opened",
		false, NULL, "ttitBBBff",
	},
	[GW_FLEET_RECORDS] = {
		"SELECT r.id, n.name, r.seg, r.step, r.line, r.ts, r.recv, r.loss, r.grad_norm, r.lr,"
		" r.throughput, r.nonfinite, r.extra, r.rank FROM records r JOIN runs n ON n.id = r.run_id"
		" WHERE r.id > ?1 ORDER BY r.id LIMIT ?2",
		"COPY t_records FROM STDIN (FORMAT binary)",
		"INSERT INTO gw_records SELECT * FROM t_records ON CONFLICT (node, id) DO NOTHING",
		true, "COPY gw_records FROM STDIN (FORMAT binary)", "tBtiBBffffffiti",
	},
	[GW_FLEET_EVENTS] = {
		"SELECT e.id, n.name, e.seg, e.step, e.line, e.ts, e.recv, e.name, e.attrs"
		" FROM events e JOIN runs n ON n.id = e.run_id WHERE e.id > ?1 ORDER BY e.id LIMIT ?2",
		"COPY t_events FROM STDIN (FORMAT binary)",
		"INSERT INTO gw_events SELECT * FROM t_events ON CONFLICT (node, id) DO NOTHING",
		true, "COPY gw_events FROM STDIN (FORMAT binary)", "tBtiBBfftt",
	},
	[GW_FLEET_ALERTS] = {
		"SELECT a.id, n.name, a.seg, a.step, a.line, a.detector, a.severity, a.state, a.summary,"
		" a.cause, a.action, a.evidence, a.ts, a.created, a.updated, a.resolved, a.last_step,"
		" a.last_line, a.version, a.resolution, a.kind, a.acked_at, a.acked_by, a.ack_note"
		" FROM alerts a JOIN runs n ON n.id = a.run_id"
		" WHERE coalesce(a.updated, a.created, 0) >= ?1 LIMIT ?2",
		"COPY t_alerts FROM STDIN (FORMAT binary)",
		"INSERT INTO gw_alerts SELECT * FROM t_alerts ON CONFLICT (node, id) DO UPDATE SET"
		" seg = excluded.seg, step = excluded.step, line = excluded.line,"
		" detector = excluded.detector, severity = excluded.severity, state = excluded.state,"
		" summary = excluded.summary, cause = excluded.cause, action = excluded.action,"
		" evidence = excluded.evidence, ts = excluded.ts, created = excluded.created,"
		" updated = excluded.updated, resolved = excluded.resolved,"
		" last_step = excluded.last_step, last_line = excluded.last_line,"
		" version = excluded.version, resolution = excluded.resolution, kind = excluded.kind,"
		" acked_at = excluded.acked_at, acked_by = excluded.acked_by, ack_note = excluded.ack_note"
		" WHERE gw_alerts.updated IS NULL OR excluded.updated >= gw_alerts.updated",
		false, NULL, "tttiBBtttttttffffBBittftt",
	},
};

/* a growing byte buffer for one table's COPY text */

/* Refresh the backlog and lag others read (at most once a second). */
static void refresh_backlog(struct gw_fleet *f, bool now)
{
	static const double every_s = 1.0;
	double t = gw_wall_now();
	if (!now && t - f->backlog_at < every_s)
		return;
	f->backlog_at = t;
	uint64_t backlog;
	double lag;
	gw__fleet_sq_backlog(f, &backlog, &lag);
	pthread_mutex_lock(&f->mu);
	f->st.backlog = backlog;
	f->st.lag_s = lag;
	pthread_mutex_unlock(&f->mu);
}

static void on_pg_wait(void *data)
{
	refresh_backlog(data, false);
}

/* ---- PostgreSQL side --------------------------------------------------------------- */

/* PostgreSQL's cursors of this node (its gw_nodes row, written in the
 * same transaction as the rows: what the database holds, exactly).  They
 * win over SQLite's: ahead when the process died between a commit there
 * and saving the cursors here (those rows are not sent again), behind or
 * absent when the database is another or was restored from a backup
 * (the rows it lacks are sent again).  lock: in a transaction, FOR UPDATE
 * (a second process with this node name waits). 1 when they moved. */
static int pg_sync_cursors(struct gw_fleet *f, bool lock)
{
	const char *p[] = {f->cfg.node};
	PGresult *r;
	if (!lock && (r = gw_pgio_query(&f->pg, "INSERT INTO gw_nodes(node, records_cursor,"
	                                " events_cursor) VALUES($1, 0, 0) ON CONFLICT (node) DO NOTHING"
	                                " RETURNING node", 1, p)))
		PQclear(r);
	r = gw_pgio_query(&f->pg, lock ? "SELECT records_cursor, events_cursor FROM gw_nodes"
	                                 " WHERE node = $1 FOR UPDATE"
	                               : "SELECT records_cursor, events_cursor FROM gw_nodes"
	                                 " WHERE node = $1", 1, p);
	if (!r)
		return -EIO;
	int64_t rec = PQntuples(r) ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : 0;
	int64_t ev = PQntuples(r) ? strtoll(PQgetvalue(r, 0, 1), NULL, 10) : 0;
	PQclear(r);
	if (!lock) {
		/* PostgreSQL ahead of this very file: another database under this
		 * node's name (a node set up again).  Its rows up to there would
		 * collide with the old ones; only those after are shipped. */
		int64_t mrec, mev;
		gw__fleet_sq_max_ids(f, &mrec, &mev);
		if ((mrec >= 0 && rec > mrec) || (mev >= 0 && ev > mev))
			gw_log_warn("fleet: PostgreSQL holds records to %" PRId64 " and events to %" PRId64
			            " for node %s, beyond this database's last (%" PRId64 ", %" PRId64
			            "): another database under the same node name? Rows up to there are "
			            "not shipped; give this node another \"node\" name, or delete node "
			            "%s's rows in PostgreSQL (docs/fleet.md)", rec, ev, f->cfg.node, mrec,
			            mev, f->cfg.node);
	}
	if (rec == f->cursor[GW_FLEET_RECORDS] && ev == f->cursor[GW_FLEET_EVENTS])
		return 0;
	gw_log_info("fleet: PostgreSQL holds records to %" PRId64 " and events to %" PRId64
	            " of node %s (SQLite said %" PRId64 ", %" PRId64 "): going on from there", rec, ev,
	            f->cfg.node, f->cursor[GW_FLEET_RECORDS], f->cursor[GW_FLEET_EVENTS]);
	f->cursor[GW_FLEET_RECORDS] = rec;
	f->cursor[GW_FLEET_EVENTS] = ev;
	gw__fleet_sq_save_cursors(f);
	return 1;
}

static int pg_prepare(struct gw_fleet *f)
{
	int rc;
	if (!f->pg.conn) {
		f->pg_ready = false;
		if ((rc = gw_pgio_connect(&f->pg, f->cfg.dsn)) < 0)
			return rc;
		gw_log_info("fleet: connected to PostgreSQL %s as node %s", f->cfg.dsn_log, f->cfg.node);
	}
	if (!f->pg_ready) {
		if ((rc = gw_pgio_exec(&f->pg, gw__fleet_pg_schema)) < 0 || (rc = gw_pgio_exec(&f->pg, pg_temp)) < 0 ||
		    (rc = pg_sync_cursors(f, false)) < 0) {
			gw_pgio_exec(&f->pg, "ROLLBACK");
			return rc;
		}
		f->upsert_only = false;
		f->pg_ready = true;
	}
	return 0;
}

/* One transaction: every table's rows, the node's row.  Records and
 * events go by a plain COPY into the shared tables when PostgreSQL's
 * cursors (locked) are where ours are: the rows after them cannot be
 * there.  -EAGAIN: they were not (re-read from the new cursors); a COPY
 * that still met a row (someone else wrote this node's rows) makes this
 * connection use ON CONFLICT for everything, then -EAGAIN. */
static int pg_ship(struct gw_fleet *f, const int64_t *next, uint64_t backlog, double lag)
{
	int rc = gw_pgio_exec(&f->pg, "BEGIN");
	if (rc == 0 && (rc = pg_sync_cursors(f, true)) > 0)
		rc = -EAGAIN;
	for (int t = 0; rc == 0 && t < GW_FLEET_N_TABLES; t++) {
		if (!f->rows[t])
			continue;
		if (gw__fleet_tables[t].direct && !f->upsert_only) {
			rc = gw_pgio_copy(&f->pg, gw__fleet_tables[t].direct, f->buf[t].p, f->buf[t].len);
			if (rc < 0 && strstr(f->pg.err, "duplicate key")) {
				gw_log_warn("fleet: %s of node %s already in PostgreSQL past its cursor (%s); "
				            "merging with ON CONFLICT from now on", gw_fleet_table_names[t],
				            f->cfg.node, f->pg.err);
				f->upsert_only = true;
				rc = -EAGAIN;
			}
			continue;
		}
		if ((rc = gw_pgio_copy(&f->pg, gw__fleet_tables[t].copy, f->buf[t].p, f->buf[t].len)) == 0)
			rc = gw_pgio_exec(&f->pg, gw__fleet_tables[t].merge);
	}
	if (rc == 0) {
		char sql[512];
		snprintf(sql, sizeof(sql),
		         "INSERT INTO gw_nodes VALUES('%s', %.6f, %" PRId64 ", %" PRId64 ", %" PRIu64
		         ", %.3f) ON CONFLICT (node) DO UPDATE SET last_ok = excluded.last_ok,"
		         " records_cursor = excluded.records_cursor,"
		         " events_cursor = excluded.events_cursor, backlog = excluded.backlog,"
		         " lag_s = excluded.lag_s", f->cfg.node, gw_wall_now(), next[GW_FLEET_RECORDS],
		         next[GW_FLEET_EVENTS], backlog, lag);
		rc = gw_pgio_exec(&f->pg, sql);
	}
	if (rc == 0)
		rc = gw_pgio_exec(&f->pg, "COMMIT");
	if (rc < 0 && !gw_pgio_broken(&f->pg)) {
		char keep[sizeof(f->pg.err)];
		memcpy(keep, f->pg.err, sizeof(keep));
		gw_pgio_exec(&f->pg, "ROLLBACK");
		memcpy(f->pg.err, keep, sizeof(keep));
	}
	return rc;
}

/* ---- the thread --------------------------------------------------------------------- */

/* One cycle; *more when a table filled its batch (go again at once). */
static int cycle(struct gw_fleet *f, bool *more)
{
	*more = false;
	int rc = pg_prepare(f);
	if (rc < 0)
		return rc;
	double began = gw_wall_now();
	if ((rc = gw__fleet_sq_read(f)) < 0)
		return rc;
	size_t total = 0;
	int64_t next[GW_FLEET_N_TABLES];
	for (int t = 0; t < GW_FLEET_N_TABLES; t++) {
		total += f->rows[t];
		next[t] = f->cursor[t];
		if (gw__fleet_tables[t].by_id && f->rows[t]) {
			next[t] = f->last[t];
			*more |= f->rows[t] >= f->cfg.batch_rows;
		}
	}
	if (total) {
		uint64_t backlog;
		double lag;
		gw__fleet_sq_backlog(f, &backlog, &lag);
		uint64_t shipped = (uint64_t)(next[GW_FLEET_RECORDS] - f->cursor[GW_FLEET_RECORDS]) +
		                   (uint64_t)(next[GW_FLEET_EVENTS] - f->cursor[GW_FLEET_EVENTS]);
		backlog = backlog > shipped ? backlog - shipped : 0;
		if ((rc = pg_ship(f, next, backlog, *more ? lag : 0)) == -EAGAIN) {
			*more = true;   /* read again from the cursors PostgreSQL gave */
			return 0;
		}
		if (rc < 0)
			return rc;
		f->commits++;
		if (f->crash_after && f->commits == f->crash_after) {
			gw_log_warn("fleet: test hook: killed after PostgreSQL commit %" PRIu64
			            ", before the cursors", f->commits);
			gw_fault_crash();
		}
		memcpy(f->cursor, next, sizeof(next));
		gw__fleet_sq_save_cursors(f);
	}
	f->changed_since = began - CHANGE_MARGIN_S;
	pthread_mutex_lock(&f->mu);
	for (int t = 0; t < GW_FLEET_N_TABLES; t++)
		f->st.shipped[t] += f->rows[t];
	f->st.batches += total > 0;
	f->st.up = true;
	f->st.last_ok = gw_wall_now();
	pthread_mutex_unlock(&f->mu);
	return 0;
}

static void wait_slice(struct gw_fleet *f, uint64_t ms)
{
	struct timespec ts;
	gw_mono_deadline(&ts, ms);
	pthread_mutex_lock(&f->mu);
	while (!atomic_load(&f->stop) && pthread_cond_timedwait(&f->cv, &f->mu, &ts) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&f->mu);
}

/* Wait ms or until stopped, the backlog figures kept current meanwhile. */
static void wait_ms(struct gw_fleet *f, uint64_t ms)
{
	while (ms && !atomic_load(&f->stop)) {
		uint64_t n = ms < 1000 ? ms : 1000;
		wait_slice(f, n);
		ms -= n;
		refresh_backlog(f, false);
	}
}

static void *ship_main(void *arg)
{
	struct gw_fleet *f = arg;
	uint64_t backoff = 0;
	bool was_up = true;
	while (!atomic_load(&f->stop)) {
		bool more = false;
		int rc = cycle(f, &more);
		refresh_backlog(f, rc == 0 || f->st.up);
		pthread_mutex_lock(&f->mu);
		uint64_t backlog = f->st.backlog;
		if (rc < 0 && rc != -ECANCELED) {
			f->st.up = false;
			f->st.errors++;
			gw_strlcpy(f->st.last_error, f->pg.err, sizeof(f->st.last_error));
		}
		pthread_mutex_unlock(&f->mu);
		if (rc == -ECANCELED)
			break;
		if (rc < 0) {
			/* once per outage at warning level, then quietly */
			if (was_up)
				gw_log_warn("fleet: shipping to %s failed (retrying; %" PRIu64 " rows wait): %s",
				            f->cfg.dsn_log, backlog, f->pg.err);
			else
				gw_log_debug("fleet: still failing: %s", f->pg.err);
			was_up = false;
			if (gw_pgio_broken(&f->pg))
				gw_pgio_close(&f->pg);
			backoff = backoff ? backoff * 2 : BACKOFF_MIN_MS;
			if (backoff > BACKOFF_MAX_MS)
				backoff = BACKOFF_MAX_MS;
			wait_ms(f, backoff);
			continue;
		}
		if (!was_up)
			gw_log_info("fleet: shipping to %s again", f->cfg.dsn_log);
		was_up = true;
		backoff = 0;
		if (!more)
			wait_ms(f, f->cfg.interval_ms);
	}
	gw_pgio_close(&f->pg);
	return NULL;
}

/* ---- start, stop, stats ----------------------------------------------------------- */

static void fleet_free(struct gw_fleet *f)
{
	for (int t = 0; t < GW_FLEET_N_TABLES; t++) {
		sqlite3_finalize(f->sel[t]);
		free(f->buf[t].p);
	}
	sqlite3_close(f->db);
	gw_fleet_cfg_free(&f->cfg);
	free(f->db_path);
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

int gw_fleet_start(const struct gw_fleet_cfg *cfg, const char *db_path, struct gw_fleet **out,
                   char *err, size_t errlen)
{
	*out = NULL;
	struct gw_fleet *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->cfg = *cfg;
	f->cfg.dsn = strdup(cfg->dsn);
	f->db_path = strdup(db_path);
	pthread_mutex_init(&f->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&f->cv, &ca);
	pthread_condattr_destroy(&ca);
	atomic_init(&f->stop, false);
	f->pg.stop = &f->stop;
	f->pg.timeout_s = PG_TIMEOUT_S;
	f->pg.idle = on_pg_wait;
	f->pg.idle_data = f;
	f->st.node = f->cfg.node;
	f->crash_after = gw_fault_crash_ship();
	if (f->crash_after)
		gw_log_warn("fleet: test hook GRADWATCH_FAULT_CRASH_SHIP: the process kills itself "
		            "after PostgreSQL commit %" PRIu64 ", before the cursors", f->crash_after);
	int rc = !f->cfg.dsn || !f->db_path ? -ENOMEM : gw__fleet_sq_open(f, err, errlen);
	if (rc == 0 && (rc = -pthread_create(&f->thread, NULL, ship_main, f)) < 0)
		gw_errf(err, errlen, rc, "fleet: cannot start the shipper thread: %s", strerror(-rc));
	if (rc < 0) {
		fleet_free(f);
		return rc;
	}
	f->started = true;
	gw_log_info("fleet: shipping to PostgreSQL %s as node %s (records after %" PRId64
	            ", events after %" PRId64 ")", f->cfg.dsn_log, f->cfg.node,
	            f->cursor[GW_FLEET_RECORDS], f->cursor[GW_FLEET_EVENTS]);
	*out = f;
	return 0;
}

void gw_fleet_stop(struct gw_fleet *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->mu);
	atomic_store(&f->stop, true);
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	if (f->started)
		pthread_join(f->thread, NULL);
	fleet_free(f);
}

void gw_fleet_stats(struct gw_fleet *f, struct gw_fleet_stats *out)
{
	pthread_mutex_lock(&f->mu);
	*out = f->st;
	pthread_mutex_unlock(&f->mu);
}
