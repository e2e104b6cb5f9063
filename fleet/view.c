/*
 * view: the fleet view's reads of the shared PostgreSQL database
 * (gradwatchd --fleet-view; fleet.h, docs/fleet.md), in the shapes the
 * node's own API answers (core/query.h, storage/series.h), so the web view
 * runs unchanged.
 *
 * A fleet run is named "NODE/RUN" (a node name holds no '/'), which the
 * web view percent-encodes like any run name.  Each call opens its own
 * connection (a thread-pool worker's; nothing is shared, so any number of
 * fleet views can serve one database), runs its queries with parameters,
 * never pasted text, and closes it.  Rows become JSON by column type as
 * storage/read.c does for SQLite: integers, reals (non-finite as null),
 * text, and columns named *_json parsed.
 */
#include "fleet.h"
#include "pgio.h"

#include "alert_row.h"
#include "series.h"
#include "store.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* PostgreSQL's type oids (pg_type.h) of the columns the queries return */
#define OID_BOOL 16
#define OID_INT8 20
#define OID_INT2 21
#define OID_INT4 23
#define OID_FLOAT4 700
#define OID_FLOAT8 701

#define VIEW_TIMEOUT_S 30.0
#define MAX_ALERTS 1000

/* A run's state as a node's list says it (storage/store.h
 * gw_store_read_runs): ended (its end recorded in its latest segment, no
 * line after it), stalled (a stall alert open), live (a line within
 * GW_RUN_LIVE_S seconds), else idle; and why it ended. */
#define STR_(x) #x
#define STR(x) STR_(x)
#define STATE_SQL                                                                      \
	"CASE WHEN r.ended_seg IS NOT NULL AND r.ended_seg = r.last_seg"                 \
	"  AND coalesce(r.last_step, -1) <= r.ended_step THEN 'ended'"                    \
	" WHEN EXISTS (SELECT 1 FROM gw_alerts a WHERE a.node = r.node AND a.run = r.name" \
	"  AND a.state = 'open' AND a.detector = 'stall') THEN 'stalled'"                  \
	" WHEN extract(epoch FROM now()) - r.last_seen < " STR(GW_RUN_LIVE_S)              \
	"  THEN 'live' ELSE 'idle' END AS state,"                                          \
	" CASE WHEN r.ended_seg = r.last_seg THEN r.ended_reason END AS ended_reason"

struct view {
	struct gw_pgio pg;
	PGresult *res;
};

static int status_of(int rc)
{
	return rc == -ENOENT ? 404 : rc == -EINVAL ? 400 : rc == -ENOMEM ? 500 : 503;
}

static int err_out(json_t **out, int status, const char *fmt, const char *what)
{
	char msg[400];
	snprintf(msg, sizeof(msg), fmt, what);
	*out = json_pack("{s:s}", "error", msg);
	return status;
}

static int view_open(struct view *v, const char *dsn, json_t **out)
{
	memset(v, 0, sizeof(*v));
	v->pg.timeout_s = VIEW_TIMEOUT_S;
	if (gw_pgio_connect(&v->pg, dsn) < 0)
		return err_out(out, 503, "the fleet's PostgreSQL is unreachable: %s", v->pg.err);
	return 0;
}

static void view_close(struct view *v)
{
	gw_pgio_close(&v->pg);
}

static json_t *cell(const PGresult *r, int row, int col)
{
	if (PQgetisnull(r, row, col))
		return json_null();
	const char *s = PQgetvalue(r, row, col);
	switch (PQftype(r, col)) {
	case OID_INT2:
	case OID_INT4:
	case OID_INT8:
		return json_integer(strtoll(s, NULL, 10));
	case OID_FLOAT4:
	case OID_FLOAT8:
		return gw_json_num(strtod(s, NULL));
	case OID_BOOL:
		return json_boolean(s[0] == 't');
	default:
		return json_string(s);
	}
}

/* Rows as an array of objects keyed by column name; "x_json" parsed as x. */
static json_t *rows_json(const PGresult *r)
{
	json_t *arr = json_array();
	for (int i = 0; arr && i < PQntuples(r); i++) {
		json_t *o = json_object();
		for (int k = 0; o && k < PQnfields(r); k++) {
			const char *name = PQfname(r, k);
			size_t len = strlen(name);
			if (len > 5 && !strcmp(name + len - 5, "_json")) {
				json_t *j = PQgetisnull(r, i, k) ? NULL
				          : json_loads(PQgetvalue(r, i, k), JSON_DECODE_ANY, NULL);
				json_object_setn_new(o, name, len - 5, j ? j : json_null());
			} else {
				json_object_set_new(o, name, cell(r, i, k));
			}
		}
		json_array_append_new(arr, o);
	}
	return arr;
}

/* Run one query into *rows (an array); 0 or a negative errno. */
static int q(struct view *v, const char *sql, int n, const char *const *params, json_t **rows)
{
	PGresult *r = gw_pgio_query(&v->pg, sql, n, params);
	if (!r)
		return -EIO;
	*rows = rows_json(r);
	PQclear(r);
	return *rows ? 0 : -ENOMEM;
}

/* "NODE/RUN" into its two parts (node[] at most GW_FLEET_NODE_MAX). */
static int split_name(const char *name, char *node, const char **run)
{
	const char *slash = strchr(name, '/');
	if (!slash || slash == name || (size_t)(slash - name) >= GW_FLEET_NODE_MAX || !slash[1])
		return -EINVAL;
	memcpy(node, name, (size_t)(slash - name));
	node[slash - name] = '\0';
	*run = slash + 1;
	return 0;
}

int gw_fleet_view_runs(const char *dsn, const char *node, const char *state, json_t **out)
{
	static const char sql[] =
		"SELECT * FROM (SELECT r.node || '/' || r.name AS run, r.node, r.name,"
		" r.last_seg AS segment, r.last_step, r.last_ts, r.first_seen, r.last_seen,"
		" " STATE_SQL ", coalesce(a.open, 0) AS open_alerts,"
		" a.critical AS open_critical, a.trouble AS trouble_at"
		" FROM gw_runs r LEFT JOIN (SELECT node, run, count(*) AS open,"
		"   count(*) FILTER (WHERE severity = 'critical') AS critical,"
		"   max(coalesce(updated, created)) AS trouble"
		"   FROM gw_alerts WHERE state = 'open' GROUP BY node, run) a"
		"  ON a.node = r.node AND a.run = r.name"
		" WHERE $1::text IS NULL OR r.node = $1) x"
		" WHERE $2::text IS NULL OR x.state = $2"
		" ORDER BY x.trouble_at DESC NULLS LAST, x.last_seen DESC NULLS LAST";
	if (state && strcmp(state, "live") && strcmp(state, "stalled") && strcmp(state, "ended") &&
	    strcmp(state, "idle"))
		return err_out(out, 400, "bad query parameter state=%s: expected live, stalled, ended "
		               "or idle", state);
	struct view v;
	int st = view_open(&v, dsn, out);
	if (st)
		return st;
	json_t *rows = NULL;
	const char *p[] = {node, state};
	int rc = q(&v, sql, 2, p, &rows);
	if (rc < 0)
		st = err_out(out, status_of(rc), "reading the fleet's runs: %s", v.pg.err);
	else
		*out = json_pack("{s:o}", "runs", rows), st = 200;
	view_close(&v);
	return st;
}

/* One run's row as GET /v1/runs/{run} starts it (r: gw_runs). */
#define RUN_SELECT                                                                      \
	"SELECT r.node || '/' || r.name AS run, r.node, r.name, r.last_seg AS segment,"   \
	" r.last_step, r.last_ts, r.first_seen, r.last_seen, r.writers AS writers_json, "  \
	STATE_SQL

int gw_fleet_view_nodes(const char *dsn, json_t **out)
{
	struct view v;
	int st = view_open(&v, dsn, out);
	if (st)
		return st;
	json_t *rows = NULL;
	int rc = q(&v, "SELECT n.node, n.last_ok, n.backlog, n.lag_s, n.records_cursor,"
	               " (SELECT count(*) FROM gw_runs r WHERE r.node = n.node) AS runs"
	               " FROM gw_nodes n ORDER BY n.node", 0, NULL, &rows);
	if (rc < 0)
		st = err_out(out, status_of(rc), "reading the fleet's nodes: %s", v.pg.err);
	else
		*out = json_pack("{s:o}", "nodes", rows), st = 200;
	view_close(&v);
	return st;
}

int gw_fleet_view_run(const char *dsn, const char *name, json_t **out)
{
	char node[GW_FLEET_NODE_MAX];
	const char *run;
	if (split_name(name, node, &run) < 0)
		return err_out(out, 404, "no run named \"%s\" (a fleet run is NODE/RUN)", name);
	struct view v;
	int st = view_open(&v, dsn, out);
	if (st)
		return st;
	const char *p[] = {node, run};
	json_t *runs = NULL, *segs = NULL, *last = NULL;
	int rc = q(&v, RUN_SELECT " FROM gw_runs r WHERE r.node = $1 AND r.name = $2", 2, p, &runs);
	if (rc == 0 && !json_array_size(runs))
		rc = -ENOENT;
	if (rc == 0)
		rc = q(&v, "SELECT s.seg AS segment, s.reason, s.first_step, s.restart_step, s.first_line,"
		           " s.ts, s.opened, (SELECT count(*) FROM gw_records x WHERE x.node = s.node"
		           "  AND x.run = s.run AND x.seg = s.seg) AS records,"
		           " (SELECT max(step) FROM gw_records x WHERE x.node = s.node AND x.run = s.run"
		           "  AND x.seg = s.seg) AS last_step"
		           " FROM gw_segments s WHERE s.node = $1 AND s.run = $2 ORDER BY s.seg",
		       2, p, &segs);
	if (rc == 0)
		rc = q(&v, "SELECT step, seg AS segment, ts, loss, grad_norm, lr, throughput, nonfinite,"
		           " extra AS extra_json FROM gw_records WHERE node = $1 AND run = $2"
		           " ORDER BY seg DESC, step DESC, id DESC LIMIT 1", 2, p, &last);
	if (rc == -ENOENT) {
		st = err_out(out, 404, "no run named \"%s\"", name);
	} else if (rc < 0) {
		st = err_out(out, status_of(rc), "reading the run: %s", v.pg.err);
	} else {
		json_t *o = json_incref(json_array_get(runs, 0));
		json_object_set(o, "segments", segs);
		json_object_set_new(o, "ranks", json_array());
		json_t *lv = json_array_get(last, 0);
		json_object_set_new(o, "last_values", lv ? json_incref(lv) : json_null());
		*out = o;
		st = 200;
	}
	json_decref(runs);
	json_decref(segs);
	json_decref(last);
	view_close(&v);
	return st;
}

#define ALERT_SELECT                                                                      \
	"SELECT id, node || '/' || run AS run, seg AS segment, step, line, detector,"     \
	" severity, state, summary, cause, action, evidence AS evidence_json, ts, created," \
	" updated, resolved, last_step, last_line, version, kind, acked_at, acked_by,"    \
	" ack_note, node FROM gw_alerts"

static json_t *alerts_of(json_t *rows)
{
	json_t *arr = json_array();
	size_t i;
	json_t *r;
	json_array_foreach(rows, i, r)
		json_array_append_new(arr, gw_alert_row_json(r));
	return arr;
}

int gw_fleet_view_alerts(const char *dsn, const char *name, json_t **out)
{
	char node[GW_FLEET_NODE_MAX];
	const char *run = NULL;
	if (name && split_name(name, node, &run) < 0)
		return err_out(out, 404, "no run named \"%s\" (a fleet run is NODE/RUN)", name);
	struct view v;
	int st = view_open(&v, dsn, out);
	if (st)
		return st;
	json_t *rows = NULL;
	const char *p[] = {node, run};
	int rc = name ? q(&v, ALERT_SELECT " WHERE node = $1 AND run = $2"
	                      " ORDER BY created DESC, id DESC LIMIT 1000", 2, p, &rows)
	              : q(&v, ALERT_SELECT " ORDER BY created DESC, node, id DESC LIMIT 1000", 0, NULL,
	                  &rows);
	if (rc < 0) {
		st = err_out(out, status_of(rc), "reading the alerts: %s", v.pg.err);
	} else {
		*out = name ? json_pack("{s:s, s:o}", "run", name, "alerts", alerts_of(rows))
		            : json_pack("{s:o}", "alerts", alerts_of(rows));
		st = 200;
	}
	json_decref(rows);
	view_close(&v);
	return st;
}

int gw_fleet_view_alert(const char *dsn, const char *id, json_t **out)
{
	struct view v;
	int st = view_open(&v, dsn, out);
	if (st)
		return st;
	json_t *rows = NULL;
	const char *p[] = {id};
	int rc = q(&v, ALERT_SELECT " WHERE id = $1 ORDER BY updated DESC LIMIT 1", 1, p, &rows);
	if (rc < 0)
		st = err_out(out, status_of(rc), "reading the alert: %s", v.pg.err);
	else if (!json_array_size(rows))
		st = err_out(out, 404, "no alert with id \"%s\"", id);
	else
		*out = gw_alert_row_json(json_array_get(rows, 0)), st = 200;
	json_decref(rows);
	view_close(&v);
	return st;
}

/* The run's chart data: its records in the range, downsampled by the same
 * code that serves `gradwatch report` (gw_series_from_rows). */
int gw_fleet_view_records(const char *dsn, const char *name, const int64_t *from,
                          const int64_t *to, size_t max_points, json_t **out)
{
	char node[GW_FLEET_NODE_MAX];
	const char *run;
	if (split_name(name, node, &run) < 0)
		return err_out(out, 404, "no run named \"%s\" (a fleet run is NODE/RUN)", name);
	struct view v;
	int st = view_open(&v, dsn, out);
	if (st)
		return st;
	char f[32], t[32];
	snprintf(f, sizeof(f), "%lld", from ? (long long)*from : 0LL);
	snprintf(t, sizeof(t), "%lld", to ? (long long)*to : 0LL);
	const char *p[] = {node, run, from ? f : NULL, to ? t : NULL};
	PGresult *sr = gw_pgio_query(&v.pg, "SELECT seg, reason, first_step, restart_step"
	                             " FROM gw_segments WHERE node = $1 AND run = $2 ORDER BY seg",
	                             2, p);
	PGresult *rr = sr ? gw_pgio_query(&v.pg,
	                                  "SELECT step, seg, loss, grad_norm, lr, throughput, nonfinite"
	                                  " FROM gw_records WHERE node = $1 AND run = $2"
	                                  " AND ($3::bigint IS NULL OR step >= $3)"
	                                  " AND ($4::bigint IS NULL OR step <= $4)"
	                                  " ORDER BY seg, step", 4, p) : NULL;
	json_t *info = NULL;
	if (!sr || !rr) {
		st = err_out(out, 503, "reading the run's records: %s", v.pg.err);
		goto done;
	}
	if (!PQntuples(sr)) {
		st = err_out(out, 404, "no run named \"%s\"", name);
		goto done;
	}
	size_t ns = (size_t)PQntuples(sr), n = (size_t)PQntuples(rr);
	struct gw_series_seg *segs = calloc(ns, sizeof(*segs));
	struct gw_series_row *rows = calloc(n ? n : 1, sizeof(*rows));
	if (!segs || !rows) {
		free(segs);
		free(rows);
		st = err_out(out, 500, "%s", "out of memory");
		goto done;
	}
	for (size_t i = 0; i < ns; i++) {
		segs[i].seg = strtoll(PQgetvalue(sr, (int)i, 0), NULL, 10);
		gw_strlcpy(segs[i].reason, PQgetvalue(sr, (int)i, 1), sizeof(segs[i].reason));
		segs[i].first_step = PQgetisnull(sr, (int)i, 2) ? -1 : strtoll(PQgetvalue(sr, (int)i, 2), NULL, 10);
		segs[i].restart_step = PQgetisnull(sr, (int)i, 3) ? -1 : strtoll(PQgetvalue(sr, (int)i, 3), NULL, 10);
	}
	for (size_t i = 0; i < n; i++) {
		rows[i].step = strtoll(PQgetvalue(rr, (int)i, 0), NULL, 10);
		rows[i].seg = strtoll(PQgetvalue(rr, (int)i, 1), NULL, 10);
		for (int k = 0; k < GW_NROLES; k++)   /* loss, grad_norm, lr, throughput */
			rows[i].v[k] = PQgetisnull(rr, (int)i, 2 + k) ? NAN : strtod(PQgetvalue(rr, (int)i, 2 + k), NULL);
		rows[i].nf = PQgetisnull(rr, (int)i, 6) ? 0 : (unsigned)strtoul(PQgetvalue(rr, (int)i, 6), NULL, 10);
	}
	*out = gw_series_from_rows(name, rows, n, segs, ns, max_points);
	free(segs);
	free(rows);
	if (!*out) {
		st = err_out(out, 500, "%s", "out of memory");
		goto done;
	}
	/* the run's own row, as a node's answer carries it (no per-segment
	 * counts: those scan the records again) */
	if (q(&v, RUN_SELECT " FROM gw_runs r WHERE r.node = $1 AND r.name = $2", 2, p, &info) == 0 &&
	    json_array_size(info))
		json_object_set(*out, "info", json_array_get(info, 0));
	json_decref(info);
	st = 200;
done:
	if (sr)
		PQclear(sr);
	if (rr)
		PQclear(rr);
	view_close(&v);
	return st;
}

int gw_fleet_view_check(const char *dsn, char *err, size_t errlen)
{
	struct gw_pgio p = {.timeout_s = VIEW_TIMEOUT_S};
	int rc = gw_pgio_connect(&p, dsn);
	if (rc == 0)
		rc = gw_pgio_exec(&p, gw__fleet_pg_schema);
	if (rc < 0)
		gw_errf(err, errlen, rc, "the fleet's PostgreSQL: %s", p.err);
	gw_pgio_close(&p);
	return rc;
}

int gw_fleet_view_ping(const char *dsn, json_t **out)
{
	struct view v;
	int st = view_open(&v, dsn, out);
	if (st)
		return st;
	json_t *rows = NULL;
	int rc = q(&v, "SELECT count(*) AS nodes FROM gw_nodes", 0, NULL, &rows);
	/* the tables exist: gw_fleet_view_check made them at the start */
	if (rc < 0)
		st = err_out(out, 503, "the fleet's tables cannot be read: %s", v.pg.err);
	else
		*out = json_pack("{s:s, s:O}", "status", "ok", "nodes",
		                 json_object_get(json_array_get(rows, 0), "nodes")), st = 200;
	json_decref(rows);
	view_close(&v);
	return st;
}
