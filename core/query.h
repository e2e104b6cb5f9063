/*
 * query: the JSON of the HTTP API's run and alert reads, built from the
 * database file.  The API answers GET /v1/runs, /v1/runs/{run},
 * /v1/alerts, /v1/runs/{run}/alerts and /v1/alerts/{id} with it, and
 * `gradwatch runs/alerts --db --json` prints the same, so reading the
 * daemon or its database gives one shape.  Alerts are in the one alert
 * schema (alerts/alert_row.h: gw_alert_row_json, docs/alert-schema.md).
 */
#ifndef GW_QUERY_H
#define GW_QUERY_H

#include <jansson.h>

#define GW_QUERY_MAX_ALERTS 1000     /* newest first */

/* Each opens db_path read-only (it may run beside the daemon's writer) and
 * blocks on SQLite.  *out (new reference) is the response body: the
 * answer, or {"error": "..."} with why.  Returns the HTTP status: 200, 404
 * (no such run or alert), or 500. */

/* run NULL: {"runs": [{run, segment, last_step, last_ts, first_seen,
 * last_seen, open_alerts}...]}, most recently seen first; else that run:
 * {run, segment, ..., segments: [...], last_values: {...}|null}. */
int gw_query_runs(const char *db_path, const char *run, json_t **out);

/* GET /v1/runs: one page (store.h gw_runs_page) as {"runs": [...],
 * "next": CURSOR|null, "total": every run, "matching": those whose name
 * holds q}; 400 for a bad cursor. */
struct gw_runs_page;
int gw_query_runs_page(const char *db_path, const struct gw_runs_page *pg, json_t **out);

/* {"run": RUN (when given), "alerts": [alert objects...]}, newest first. */
int gw_query_alerts(const char *db_path, const char *run, json_t **out);

/* One alert object by id. */
int gw_query_alert(const char *db_path, const char *id, json_t **out);

#endif
