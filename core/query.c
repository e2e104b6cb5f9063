/*
 * query: the API's run and alert reads from the database (see query.h):
 * storage/read.c runs the SQL, the rows become the API's JSON here, alert
 * rows through the one alert schema builder (gw_alert_row_json).
 */
#include "query.h"

#include "alert_row.h"
#include "store.h"
#include "util.h"

#include <errno.h>
#include <string.h>

static int fail(int rc, const char *err, json_t **out)
{
	char clean[1024];   /* UTF-8 for jansson, whatever the message quotes */
	gw_utf8_clean(clean, sizeof(clean), err, strlen(err));
	*out = json_pack("{s:s}", "error", clean);
	return rc == -ENOENT ? 404 : 500;
}

int gw_query_runs(const char *db_path, const char *run, json_t **out)
{
	char err[512];
	json_t *j;
	if (!run) {   /* every run, in the API's shape (gradwatch runs --db) */
		struct gw_runs_page all = {0};
		return gw_query_runs_page(db_path, &all, out);
	}
	int rc = gw_store_read_run(db_path, run, &j, err, sizeof(err));
	if (rc < 0)
		return fail(rc, err, out);
	*out = j;
	return 200;
}

int gw_query_runs_page(const char *db_path, const struct gw_runs_page *pg, json_t **out)
{
	char err[512];
	json_t *j, *next = NULL;
	size_t total[2];
	int rc = gw_store_read_runs(db_path, pg, &j, &next, total, err, sizeof(err));
	if (rc == -EINVAL) {
		*out = json_pack("{s:s}", "error", err);
		return 400;
	}
	if (rc < 0)
		return fail(rc, err, out);
	*out = json_pack("{s:o, s:o, s:I, s:I}", "runs", j, "next", next ? next : json_null(),
	                 "total", (json_int_t)total[0], "matching", (json_int_t)total[1]);
	return *out ? 200 : fail(-ENOMEM, "out of memory", out);
}

/* Rows into alert objects, in place. */
static int rows_to_alerts(json_t *rows)
{
	size_t i;
	json_t *row;
	json_array_foreach(rows, i, row) {
		json_t *a = gw_alert_row_json(row);
		if (!a || json_array_set_new(rows, i, a) < 0)
			return -ENOMEM;
	}
	return 0;
}

int gw_query_alerts(const char *db_path, const char *run, json_t **out)
{
	char err[512];
	json_t *rows;
	int rc = gw_store_read_alerts(db_path, run, GW_QUERY_MAX_ALERTS, &rows, err, sizeof(err));
	if (rc < 0)
		return fail(rc, err, out);
	if (run && json_array_size(rows) == 0) {
		/* no alerts, or no such run: a misspelt name is a 404, as for
		 * GET /v1/runs/{run}, not an empty list that reads as "all well" */
		json_t *r = NULL;
		int st = gw_query_runs(db_path, run, &r);
		if (st != 200) {
			json_decref(rows);
			*out = r;
			return st;
		}
		json_decref(r);
	}
	if (rows_to_alerts(rows) < 0) {
		json_decref(rows);
		return fail(-ENOMEM, "out of memory", out);
	}
	*out = json_pack("{s:s?, s:o}", "run", run, "alerts", rows);
	return *out ? 200 : fail(-ENOMEM, "out of memory", out);
}

int gw_query_alert(const char *db_path, const char *id, json_t **out)
{
	char err[512];
	json_t *row;
	int rc = gw_store_read_alert(db_path, id, &row, err, sizeof(err));
	if (rc < 0)
		return fail(rc, err, out);
	*out = gw_alert_row_json(row);
	json_decref(row);
	return *out ? 200 : fail(-ENOMEM, "out of memory", out);
}
