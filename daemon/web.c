/*
 * web: the pages gradwatchd serves (docs/web.md) and the JSON they read.
 *
 * Pages: /, /runs/{run} and /alerts/{id} all answer with the same small
 * page shell (web/src/index.html); its scripts (figures.js and app.js, with uPlot) read
 * the path and draw the runs list or a run's charts from the JSON API.
 * The shell, the script and the style sheets are compiled into the binary
 * (web/embed.py) and served from memory on the loop thread, under
 * /static/{file}, each with a Content-Security-Policy that allows scripts,
 * styles and requests from this origin only, and nosniff.
 *
 * JSON: GET /v1/runs/{run}/records (storage/series.c: columnar, min/max
 * downsampled) and GET /v1/alerts/{id} run on the thread pool like the
 * other database reads, after everything ingested before the request is
 * committed.  Parameters are checked here and a bad one is a 400 naming
 * it.  Same listener, same loopback default and the same access rules as
 * the rest of the API: everything here is read-only.  With tokens on
 * (auth), the shell and its files are open (they hold no data) and every
 * JSON read takes a read token, which the page sends as a bearer token
 * (asked for once per browser tab, or given as #token=... in the link).
 */
#include "web.h"

#include "http.h"
#include "http_url.h"
#include "query.h"
#include "series.h"
#include "store.h"
#include "util.h"
#include "web_assets.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE_HEADERS \
	"Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self';" \
	" img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none';" \
	" frame-ancestors 'none'\r\n" \
	"X-Frame-Options: DENY\r\n" \
	"Referrer-Policy: no-referrer\r\n"

static void h_page(struct gw_http_conn *c, const struct gw_http_req *r)
{
	const struct gw_web_asset *a = gw_web_asset_find("index.html", 10);
	gw_http_respond_page(c, 200, a->ctype, PAGE_HEADERS, (const char *)a->data, a->len);
}

static void h_static(struct gw_http_conn *c, const struct gw_http_req *r)
{
	const struct gw_web_asset *a = r->arg ? gw_web_asset_find(r->arg, strlen(r->arg)) : NULL;
	if (!a) {
		gw_http_respond_error(c, 404, "no such file under /static/");
		return;
	}
	gw_http_respond_page(c, 200, a->ctype, PAGE_HEADERS, (const char *)a->data, a->len);
}


static int q_records(const struct gw_http_req *req, json_t **out)
{
	char err[256];
	const char *qs = req->query;
	size_t qlen = req->query_len;
	struct gw_series_query q = {.run = req->arg, .max_points = GW_SERIES_DEFAULT_POINTS};
	long long v;
	int r;
	const long long big = GW_WIRE_STEP_MAX;
	if ((r = gw_http_int_param(qs, qlen, "from", -big, big, &v, err, sizeof(err))) < 0)
		goto bad;
	q.has_from = r, q.from = r ? v : 0;
	if ((r = gw_http_int_param(qs, qlen, "to", -big, big, &v, err, sizeof(err))) < 0)
		goto bad;
	q.has_to = r, q.to = r ? v : 0;
	if ((r = gw_http_int_param(qs, qlen, "max_points", 0, GW_SERIES_MAX_POINTS, &v, err, sizeof(err))) < 0)
		goto bad;
	if (r)
		q.max_points = (size_t)v;
	if ((r = gw_http_int_param(qs, qlen, "limit", 1, GW_SERIES_MAX_ROWS, &v, err, sizeof(err))) < 0)
		goto bad;
	q.limit = r ? (size_t)v : 0;
	if ((r = gw_http_int_param(qs, qlen, "segment", 0, big, &v, err, sizeof(err))) < 0)
		goto bad;
	q.has_segment = r, q.segment = r ? v : 0;
	if ((r = gw_http_int_param(qs, qlen, "extra", 0, 1, &v, err, sizeof(err))) < 0)
		goto bad;
	q.extra = r && v;
	char cur[64];
	r = gw_http_query_param(qs, qlen, "cursor", cur, sizeof(cur));
	if (r != 0) {
		long long cs, ct;
		char tail;
		if (r < 0 || sscanf(cur, "%lld:%lld%c", &cs, &ct, &tail) != 2) {
			gw_errf(err, sizeof(err), -EINVAL, "bad query parameter cursor: expected SEGMENT:STEP as in a page's \"next\"");
			goto bad;
		}
		q.has_cursor = true;
		q.cursor_seg = cs;
		q.cursor_step = ct;
	}
	int rc = gw_store_read_series(req->db_path, &q, out, err, sizeof(err));
	if (rc == 0)
		return 200;
	*out = gw_http_error_json(err);
	return rc == -ENOENT ? 404 : rc == -EINVAL || rc == -EOVERFLOW ? 400 : 500;
bad:
	*out = gw_http_error_json(err);
	return 400;
}

#define RANK_LINES_DEFAULT 1000
#define RANK_LINES_MAX 100000

/* GET /v1/runs/{run}/ranks: the summary of the ranks whose lines were kept
 * apart (as in /v1/runs/{run}); with ?rank=N[&limit=M] that rank's newest
 * lines, oldest first, with &after=ID the page after line ID (docs/api.md). */
static int q_ranks(const struct gw_http_req *req, json_t **out)
{
	char err[256];
	long long rank, limit = RANK_LINES_DEFAULT, after = 0;
	int r = gw_http_int_param(req->query, req->query_len, "rank", -1, GW_WIRE_RANK_MAX, &rank, err,
	                  sizeof(err));
	int rl = r < 0 ? 0 : gw_http_int_param(req->query, req->query_len, "limit", 1, RANK_LINES_MAX, &limit,
	                               err, sizeof(err));
	int ra = r < 0 || rl < 0 ? 0 : gw_http_int_param(req->query, req->query_len, "after", 0, INT64_MAX,
	                                          &after, err, sizeof(err));
	if (r < 0 || rl < 0 || ra < 0) {
		*out = gw_http_error_json(err);
		return 400;
	}
	json_t *j = NULL;
	int rc;
	if (r) {
		char rs[24], as[24];
		snprintf(rs, sizeof(rs), "%lld", rank);
		snprintf(as, sizeof(as), "%lld", after);
		rc = gw_store_read_rank_lines(req->db_path, req->arg, rs, ra ? as : NULL, (size_t)limit,
		                              &j, err, sizeof(err));
		if (rc == 0)
			*out = json_pack("{s:s, s:I, s:o}", "run", req->arg, "rank", (json_int_t)rank,
			                 "lines", j);
	} else {
		rc = gw_store_read_run(req->db_path, req->arg, &j, err, sizeof(err));
		if (rc == 0) {
			*out = json_pack("{s:s, s:O, s:O}", "run", req->arg, "ranks",
			                 json_object_get(j, "ranks"), "ranks_summary",
			                 json_object_get(j, "ranks_summary"));
			json_decref(j);
		}
	}
	if (rc == 0)
		return *out ? 200 : 500;
	*out = gw_http_error_json(err);
	return rc == -ENOENT ? 404 : 500;
}

static int q_alert(const struct gw_http_req *req, json_t **out)
{
	return gw_query_alert(req->db_path, req->arg, out);
}

int gw_web_start(struct gw_http *h, char *err, size_t errlen)
{
	static const struct gw_http_route routes[] = {
		/* the shell and its files hold no data: open, like /healthz;
		 * everything they read takes a read token when tokens are on */
		{.method = "GET", .path = "/", .handler = h_page, .scope = GW_SCOPE_OPEN},
		{.method = "GET", .path = "/runs/", .prefix = true, .handler = h_page,
		 .scope = GW_SCOPE_OPEN},
		{.method = "GET", .path = "/alerts/", .prefix = true, .handler = h_page,
		 .scope = GW_SCOPE_OPEN, .arg_name = "alert id"},
		{.method = "GET", .path = "/static/", .prefix = true, .handler = h_static,
		 .scope = GW_SCOPE_OPEN, .arg_name = "file name"},
		{.method = "GET", .path = "/v1/runs/", .prefix = true, .suffix = "/records",
		 .query = q_records, .scope = GW_SCOPE_READ},
		{.method = "GET", .path = "/v1/runs/", .prefix = true, .suffix = "/ranks",
		 .query = q_ranks, .scope = GW_SCOPE_READ},
		{.method = "GET", .path = "/v1/alerts/", .prefix = true, .query = q_alert,
		 .scope = GW_SCOPE_READ, .arg_name = "alert id"},
	};
	for (size_t i = 0; i < GW_ARRAY_SIZE(routes); i++)
		if (gw_http_route(h, &routes[i]) < 0)
			return gw_errf(err, errlen, -ENOSPC, "web: the HTTP route table is full");
	return 0;
}
