/*
 * Read-only queries over the database, each on its own short-lived
 * connection (WAL lets them run beside the writer).  Used by the HTTP API
 * from the libuv thread pool and by `gradwatch runs/alerts --db`.  A
 * database of a newer schema than this build knows is refused (-EPROTO).
 * A run's stored tail, for rebuilding its detector state, is tail.c's.
 */
#include "store.h"
#include "schema.h"

#include "buf.h"
#include "util.h"
#include "clock.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Open read-only; *version (when not NULL) gets the schema version (an
 * older database is read as it is: the columns a later step added are left
 * out). */
int gw__store_open_ro(const char *path, sqlite3 **db, int *version, char *err, size_t errlen)
{
	/* what `gradwatch runs --db` gets wrong first: the path (SQLite says
	 * "unable to open database file", or "disk I/O error" for a directory) */
	struct stat sb;
	*db = NULL;
	if (stat(path, &sb) < 0)
		return gw_errf(err, errlen, -errno, "cannot open %s: %s", path, strerror(errno));
	if (S_ISDIR(sb.st_mode))
		return gw_errf(err, errlen, -EISDIR, "%s is a directory, not a gradwatch database", path);
	int rc = sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		gw_errf(err, errlen, 0, "cannot open %s: %s", path,
		     *db ? sqlite3_errmsg(*db) : sqlite3_errstr(rc));
		sqlite3_close(*db);
		*db = NULL;
		return rc == SQLITE_CANTOPEN ? -ENOENT : -EIO;
	}
	sqlite3_busy_timeout(*db, 5000);
	/* a newer gradwatch's database is not read as if it were ours (the
	 * daemon refuses it at open; `gradwatch runs --db` answered from it) */
	int v;
	if ((rc = gw__store_version(*db, path, "gradwatch", &v, err, errlen)) < 0 ||
	    (v == 0 && (rc = gw_errf(err, errlen, -EINVAL, "%s is not a gradwatch database "
	                             "(no gradwatch tables in it)", path)) < 0)) {
		sqlite3_close(*db);
		*db = NULL;
	} else if (version) {
		*version = v;
	}
	return rc;
}

#define RANKS_VERSION 5   /* the schema step that added ranks, rank_lines, runs.writers */

static json_t *col_json(sqlite3_stmt *st, int k)
{
	switch (sqlite3_column_type(st, k)) {
	case SQLITE_INTEGER: return json_integer(sqlite3_column_int64(st, k));
	case SQLITE_FLOAT: return gw_json_num(sqlite3_column_double(st, k));
	case SQLITE_TEXT: return json_string((const char *)sqlite3_column_text(st, k));
	default: return json_null();
	}
}

/* Rows of a query as an array of objects keyed by column name.  Columns
 * named "*_json" are parsed as JSON and lose the suffix. */
static int query(sqlite3 *db, const char *sql, const char *const *binds, int nbind,
                 json_t **out, char *err, size_t errlen)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return gw_errf(err, errlen, -EIO, "query failed: %s", sqlite3_errmsg(db));
	for (int k = 0; k < nbind; k++)
		sqlite3_bind_text(st, k + 1, binds[k], -1, SQLITE_STATIC);
	json_t *arr = json_array();
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *o = json_object();
		int n = sqlite3_column_count(st);
		for (int k = 0; k < n; k++) {
			const char *name = sqlite3_column_name(st, k);
			size_t len = strlen(name);
			if (len > 5 && strcmp(name + len - 5, "_json") == 0) {
				const char *txt = (const char *)sqlite3_column_text(st, k);
				json_t *v = txt ? json_loads(txt, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL) : NULL;
				json_object_setn_new(o, name, len - 5, v ? v : json_null());
			} else {
				json_object_set_new(o, name, col_json(st, k));
			}
		}
		json_array_append_new(arr, o);
	}
	if (rc != SQLITE_DONE) {
		json_decref(arr);
		int e = gw_errf(err, errlen, -EIO, "query failed: %s", sqlite3_errmsg(db));
		sqlite3_finalize(st);
		return e;
	}
	sqlite3_finalize(st);
	*out = arr;
	return 0;
}

/* An alert as the API and the CLI show it (docs/alert-schema.md), joined
 * with its run's name; the callers add WHERE / ORDER BY / LIMIT. */
#define ALERT_SELECT                                                                       \
	"SELECT a.id, r.name AS run, a.seg AS segment, a.step, a.line, a.detector,"        \
	" a.severity, a.state, a.summary, a.cause, a.action, a.evidence AS evidence_json," \
	" a.ts, a.created, a.updated, a.resolved, a.last_step, a.last_line, a.version,"    \
	" a.kind, a.acked_at, a.acked_by, a.ack_note"                                      \
	" FROM alerts a JOIN runs r ON r.id = a.run_id"

/* The first row of a query on its own read-only connection: 0 and *row (a
 * new reference), 1 when the query gave no row (*row NULL), or a negative
 * errno with err filled. */
static int query_first(const char *path, const char *sql, const char *const *binds, int nbind,
                       json_t **row, char *err, size_t errlen)
{
	sqlite3 *db;
	*row = NULL;
	int rc = gw__store_open_ro(path, &db, NULL, err, errlen);
	if (rc < 0)
		return rc;
	json_t *rows = NULL;
	rc = query(db, sql, binds, nbind, &rows, err, errlen);
	sqlite3_close(db);
	if (rc < 0)
		return rc;
	json_t *first = json_array_get(rows, 0);
	*row = first ? json_incref(first) : NULL;
	json_decref(rows);
	return first ? 0 : 1;
}

int gw_store_read_runs(const char *path, const struct gw_runs_page *pg, json_t **out,
                       json_t **next, size_t total[2], char *err, size_t errlen)
{
	if (next)
		*next = NULL;
	if (total)
		total[0] = total[1] = 0;
	/* the cursor: "LAST_SEEN NAME" of the last row of the page before */
	char seen[40] = "", lim[24] = "-1";
	const char *cur_name = NULL;
	if (pg && pg->cursor) {
		const char *sp = strchr(pg->cursor, ' ');
		char *end = NULL;
		double v = sp && (size_t)(sp - pg->cursor) < sizeof(seen) ? strtod(pg->cursor, &end) : NAN;
		if (!sp || end != sp || !isfinite(v) || pg->trouble_first)
			return gw_errf(err, errlen, -EINVAL, "bad query parameter cursor: %s",
			               pg->trouble_first ? "not with order=trouble (its first page only)"
			                                 : "pass back the \"next\" of the page before");
		memcpy(seen, pg->cursor, (size_t)(sp - pg->cursor));
		seen[sp - pg->cursor] = '\0';
		cur_name = sp + 1;
	}
	if (pg && pg->limit)
		snprintf(lim, sizeof(lim), "%zu", pg->limit + 1);
	sqlite3 *db;
	int rc = gw__store_open_ro(path, &db, NULL, err, errlen);
	if (rc < 0)
		return rc;
	/* state (store.h): ended as gw_store_read_run_states says, stalled
	 * while a stall alert is open, else live or idle by the last line's
	 * arrival */
	char now[32], live[16];
	snprintf(now, sizeof(now), "%.3f", gw_wall_now());
	snprintf(live, sizeof(live), "%d", GW_RUN_LIVE_S);
	const char *q = pg ? pg->q : NULL;
	const char *binds[] = {now, live, q, seen[0] ? seen : NULL, cur_name, lim};
	char sql[2048];
	snprintf(sql, sizeof(sql),
	         "SELECT * FROM (SELECT r.name AS run, r.last_seg AS segment, r.last_step AS last_step,"
	         " r.last_ts AS last_ts, r.first_seen AS first_seen, r.last_seen AS last_seen,"
	         " (SELECT count(*) FROM alerts a WHERE a.run_id = r.id AND a.state = 'open')"
	         "  AS open_alerts,"
	         " CASE WHEN r.ended_seg IS NOT NULL AND r.ended_seg = r.last_seg"
	         "   AND coalesce(r.last_step, -1) <= r.ended_step THEN 'ended'"
	         "  WHEN EXISTS (SELECT 1 FROM alerts a WHERE a.run_id = r.id AND a.state = 'open'"
	         "   AND a.detector = 'stall') THEN 'stalled'"
	         "  WHEN CAST(?1 AS REAL) - r.last_seen < CAST(?2 AS REAL) THEN 'live'"
	         "  ELSE 'idle' END AS state,"
	         " CASE WHEN r.ended_seg = r.last_seg THEN r.ended_reason END AS ended_reason"
	         " FROM runs r"
	         " WHERE (?3 IS NULL OR instr(lower(r.name), lower(?3)) > 0)"
	         "  AND (?4 IS NULL OR coalesce(r.last_seen, 0) < CAST(?4 AS REAL)"
	         "   OR (coalesce(r.last_seen, 0) = CAST(?4 AS REAL) AND r.name > ?5)))"
	         " ORDER BY %s coalesce(last_seen, 0) DESC, run LIMIT CAST(?6 AS INTEGER)",
	         pg && pg->trouble_first ? "open_alerts > 0 DESC, state = 'stalled' DESC," : "");
	rc = query(db, sql, binds, 6, out, err, errlen);
	if (rc == 0 && total) {
		json_t *n = NULL;
		const char *qb[] = {q};
		rc = query(db, "SELECT count(*) AS n, sum(?1 IS NULL OR instr(lower(r.name), lower(?1)) > 0)"
		               " AS m FROM runs r", qb, 1, &n, err, errlen);
		if (rc == 0) {
			total[0] = (size_t)json_integer_value(json_object_get(json_array_get(n, 0), "n"));
			total[1] = (size_t)json_integer_value(json_object_get(json_array_get(n, 0), "m"));
		}
		json_decref(n);
		if (rc < 0) {
			json_decref(*out);
			*out = NULL;
		}
	}
	sqlite3_close(db);
	if (rc == 0 && pg && pg->limit && json_array_size(*out) > pg->limit) {
		json_array_remove(*out, pg->limit);
		json_t *last = json_array_get(*out, pg->limit - 1);
		const json_t *ls = json_object_get(last, "last_seen");
		char *c = NULL;
		if (next && asprintf(&c, "%.17g %s", json_is_number(ls) ? json_number_value(ls) : 0.0,
		                     json_string_value(json_object_get(last, "run"))) >= 0) {
			*next = json_string(c);
			free(c);
		}
	}
	return rc;
}

int gw_store_read_run(const char *path, const char *run, json_t **out,
                      char *err, size_t errlen)
{
	sqlite3 *db;
	int version;
	int rc = gw__store_open_ro(path, &db, &version, err, errlen);
	if (rc < 0)
		return rc;
	json_t *runs = NULL, *segs = NULL, *last = NULL, *ranks = NULL, *sum = NULL;
	const char *b[1] = {run};
	bool has_ranks = version >= RANKS_VERSION;
	rc = query(db, has_ranks ? "SELECT name AS run, last_seg AS segment, last_step, last_ts,"
	                           " first_seen, last_seen, writers AS writers_json FROM runs"
	                           " WHERE name = ?1"
	                         : "SELECT name AS run, last_seg AS segment, last_step, last_ts,"
	                           " first_seen, last_seen, NULL AS writers FROM runs WHERE name = ?1",
	           b, 1, &runs, err, errlen);
	if (rc < 0)
		goto out;
	if (!json_array_size(runs)) {
		rc = gw_errf(err, errlen, -ENOENT, "no run named \"%s\"", run);
		goto out;
	}
	rc = query(db,
	           "SELECT s.seg AS segment, s.reason, s.first_step, s.restart_step,"
	           " s.first_line, s.ts, s.opened,"
	           " (SELECT count(*) FROM records x WHERE x.run_id = s.run_id AND x.seg = s.seg) AS records,"
	           " (SELECT max(step) FROM records x WHERE x.run_id = s.run_id AND x.seg = s.seg) AS last_step"
	           " FROM segments s JOIN runs r ON r.id = s.run_id WHERE r.name = ?1 ORDER BY s.seg",
	           b, 1, &segs, err, errlen);
	if (rc < 0)
		goto out;
	rc = query(db,
	           "SELECT x.step, x.seg AS segment, x.ts, x.loss, x.grad_norm, x.lr, x.throughput,"
	           " x.nonfinite, x.extra AS extra_json"
	           " FROM records x JOIN runs r ON r.id = x.run_id WHERE r.name = ?1"
	           " ORDER BY x.id DESC LIMIT 1", b, 1, &last, err, errlen);
	if (rc < 0)
		goto out;
	/* the first GW_RUN_RANKS_MAX ranks, and a summary of all of them (one
	 * run of 100,000 ranks was a 9.5 MB answer) */
	char rmax[24];
	snprintf(rmax, sizeof(rmax), "%d", GW_RUN_RANKS_MAX);
	const char *bl[2] = {run, rmax};
	rc = has_ranks ? query(db,
	           "SELECT k.rank, k.lines, k.first_step, k.last_step, k.last_ts, k.last_recv AS last_seen"
	           " FROM ranks k JOIN runs r ON r.id = k.run_id WHERE r.name = ?1 ORDER BY k.rank"
	           " LIMIT CAST(?2 AS INTEGER)",
	           bl, 2, &ranks, err, errlen) : (ranks = json_array()) ? 0 : -ENOMEM;
	if (rc == 0 && has_ranks)
		rc = query(db,
		           "SELECT count(*) AS count, max(k.rank) AS max_rank,"
		           " (SELECT json_object('rank', b.rank, 'last_step', b.last_step, 'last_seen',"
		           "   b.last_recv) FROM ranks b WHERE b.run_id = r.id AND b.rank >= 0"
		           "   ORDER BY b.last_step, b.rank LIMIT 1) AS behind_json"
		           " FROM ranks k JOIN runs r ON r.id = k.run_id WHERE r.name = ?1 AND k.rank >= 0",
		           b, 1, &sum, err, errlen);
	if (rc < 0)
		goto out;
	json_t *o = json_incref(json_array_get(runs, 0));
	json_object_set(o, "segments", segs);
	json_object_set(o, "ranks", ranks);
	json_t *s0 = json_array_get(sum, 0);
	json_object_set_new(o, "ranks_summary", s0 ? json_incref(s0)
	                    : json_pack("{s:i, s:n, s:n}", "count", 0, "max_rank", "behind"));
	json_t *lv = json_array_get(last, 0);
	json_object_set_new(o, "last_values", lv ? json_incref(lv) : json_null());
	*out = o;
out:
	json_decref(runs);
	json_decref(segs);
	json_decref(last);
	json_decref(ranks);
	json_decref(sum);
	sqlite3_close(db);
	return rc;
}

int gw_store_read_rank_lines(const char *path, const char *run, const char *rank,
                             const char *after, size_t limit, json_t **out, char *err,
                             size_t errlen)
{
	sqlite3 *db;
	int version;
	int rc = gw__store_open_ro(path, &db, &version, err, errlen);
	if (rc < 0)
		return rc;
	char lim[32];
	snprintf(lim, sizeof(lim), "%zu", limit);
	const char *b[4] = {run, rank, lim, after};
	json_t *runs = NULL;
	rc = query(db, "SELECT id FROM runs WHERE name = ?1", b, 1, &runs, err, errlen);
	if (rc == 0 && !json_array_size(runs))
		rc = gw_errf(err, errlen, -ENOENT, "no run named \"%s\"", run);
	json_decref(runs);
	if (rc == 0 && version < RANKS_VERSION)
		rc = (*out = json_array()) ? 0 : -ENOMEM;
	else if (rc == 0 && after)   /* a page after id `after` */
		rc = query(db,
		           "SELECT x.id, x.step, x.line, x.ts, x.recv, x.body AS text"
		           " FROM rank_lines x JOIN runs r ON r.id = x.run_id"
		           " WHERE r.name = ?1 AND x.rank = CAST(?2 AS INTEGER)"
		           " AND x.id > CAST(?4 AS INTEGER) ORDER BY x.id LIMIT CAST(?3 AS INTEGER)",
		           b, 4, out, err, errlen);
	else if (rc == 0)   /* the newest `limit`, oldest first */
		rc = query(db,
		           "SELECT * FROM (SELECT x.id, x.step, x.line, x.ts, x.recv, x.body AS text"
		           " FROM rank_lines x JOIN runs r ON r.id = x.run_id"
		           " WHERE r.name = ?1 AND x.rank = CAST(?2 AS INTEGER)"
		           " ORDER BY x.id DESC LIMIT CAST(?3 AS INTEGER)) ORDER BY id",
		           b, 3, out, err, errlen);
	sqlite3_close(db);
	return rc;
}

int gw_store_read_alerts(const char *path, const char *run, size_t limit,
                         json_t **out, char *err, size_t errlen)
{
	sqlite3 *db;
	int rc = gw__store_open_ro(path, &db, NULL, err, errlen);
	if (rc < 0)
		return rc;
	char lim[32];
	snprintf(lim, sizeof(lim), "%zu", limit ? limit : (size_t)1000);
	const char *b[2] = {lim, run};
	rc = query(db,
	           run ? ALERT_SELECT " WHERE r.name = ?2 ORDER BY a.created DESC, a.rowid DESC LIMIT ?1"
	               : ALERT_SELECT " ORDER BY a.created DESC, a.rowid DESC LIMIT ?1",
	           b, run ? 2 : 1, out, err, errlen);
	sqlite3_close(db);
	return rc;
}

int gw_store_read_alert(const char *path, const char *id, json_t **out, char *err, size_t errlen)
{
	const char *b[1] = {id};
	int rc = query_first(path, ALERT_SELECT " WHERE a.id = ?1", b, 1, out, err, errlen);
	if (rc == 1)
		return gw_errf(err, errlen, -ENOENT, "no alert with id \"%s\"", id);
	return rc;
}

int gw_store_read_run_positions(const char *path,
                                void (*fn)(void *data, const struct gw_run_position *p),
                                void *data, char *err, size_t errlen)
{
	sqlite3 *db;
	int rc = gw__store_open_ro(path, &db, NULL, err, errlen);
	if (rc < 0)
		return rc;
	sqlite3_stmt *st;
	/* ended: the run's last line is in the segment it ended in, at or
	 * below the step it ended at (engine.h "Run endings": a record past
	 * it, or a new segment, means the job went on) */
	if (sqlite3_prepare_v2(db, "SELECT name, last_seg, last_step, last_ts, last_seen, "
	                           "writers IS NOT NULL, ended_seg IS NOT NULL AND "
	                           "ended_seg = last_seg AND coalesce(last_step, -1) <= ended_step "
	                           "FROM runs", -1, &st, NULL) != SQLITE_OK) {
		rc = gw_errf(err, errlen, -EIO, "query failed: %s", sqlite3_errmsg(db));
		sqlite3_close(db);
		return rc;
	}
	int src;
	while ((src = sqlite3_step(st)) == SQLITE_ROW) {
		struct gw_run_position p = {
			.run = (const char *)sqlite3_column_text(st, 0),
			.seg = sqlite3_column_int64(st, 1),
			.last_step = sqlite3_column_type(st, 2) == SQLITE_NULL ? -1
			                                                        : sqlite3_column_int64(st, 2),
			.last_ts = gw__store_col_real(st, 3),
			.last_seen = gw__store_col_real(st, 4),
			.interleaved = sqlite3_column_int(st, 5) != 0,
			.ended = sqlite3_column_int(st, 6) != 0,
		};
		fn(data, &p);
	}
	/* a step that fails (a corrupt page, a busy database) ends the rows
	 * too: the caller must not take what it got for all of them */
	rc = src == SQLITE_DONE ? 0
	   : gw_errf(err, errlen, -EIO, "%s: reading the runs: %s", path, sqlite3_errmsg(db));
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc;
}

int gw_store_read_last_event(const char *path, const char *run, const char *name,
                             json_t **attrs, int64_t *step, char *err, size_t errlen)
{
	*attrs = NULL;
	*step = -1;
	json_t *row;
	const char *b[2] = {run, name};
	int rc = query_first(path,
	                     "SELECT e.step, e.attrs AS attrs_json FROM events e"
	                     " JOIN runs r ON r.id = e.run_id"
	                     " WHERE r.name = ?1 AND e.name = ?2 ORDER BY e.id DESC LIMIT 1",
	                     b, 2, &row, err, errlen);
	if (rc == 1)
		return gw_errf(err, errlen, -ENOENT, "run \"%s\" has no %s event", run, name);
	if (rc < 0)
		return rc;
	*step = json_integer_value(json_object_get(row, "step"));
	*attrs = json_incref(json_object_get(row, "attrs"));
	json_decref(row);
	return 0;
}

int gw_store_read_meta(const char *path, const char *key, char **out)
{
	sqlite3 *db;
	*out = NULL;
	int rc = gw__store_open_ro(path, &db, NULL, NULL, 0);
	if (rc < 0)
		return rc;
	sqlite3_stmt *st;
	rc = 0;
	if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?1", -1, &st, NULL) != SQLITE_OK) {
		sqlite3_close(db);
		return -EIO;
	}
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	int src = sqlite3_step(st);
	if (src == SQLITE_ROW && sqlite3_column_text(st, 0)) {
		*out = strdup((const char *)sqlite3_column_text(st, 0));
		if (!*out)
			rc = -ENOMEM;
	} else if (src != SQLITE_ROW && src != SQLITE_DONE) {
		rc = gw__store_errno(src);   /* not "no value": the value could not be read */
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc;
}

/* ---- generic reads ------------------------------------------------------------------ */

int gw_store_read_each(const char *path, const char *sql, const struct gw_sv *binds,
                       size_t nbind, void (*fn)(void *ctx, sqlite3_stmt *row), void *ctx,
                       char *err, size_t errlen)
{
	sqlite3 *db = NULL;
	int rc = gw__store_open_ro(path, &db, NULL, err, errlen);
	if (rc < 0)
		return rc;
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		rc = gw_errf(err, errlen, -EIO, "%s: %s", path, sqlite3_errmsg(db));
		sqlite3_close(db);
		return rc;
	}
	for (size_t k = 0; k < nbind; k++) {
		const struct gw_sv *b = &binds[k];
		int i = (int)k + 1;
		if (b->t == GW_SV_INT)
			sqlite3_bind_int64(st, i, b->i);
		else if (b->t == GW_SV_REAL)
			sqlite3_bind_double(st, i, b->d);
		else if (b->t == GW_SV_TEXT || b->t == GW_SV_RUN)
			sqlite3_bind_text(st, i, b->s, (int)b->n, SQLITE_STATIC);
		else
			sqlite3_bind_null(st, i);
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		fn(ctx, st);
	int out = 0;
	if (rc != SQLITE_DONE)
		out = gw_errf(err, errlen, -EIO, "%s: %s", path, sqlite3_errmsg(db));
	sqlite3_finalize(st);
	sqlite3_close(db);
	return out;
}
