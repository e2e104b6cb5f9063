/*
 * fleet_view: gradwatchd --fleet-view DSN, one view of every node's runs
 * (docs/fleet.md).  No ingest, no detection, no database of its own: the
 * HTTP server with the web view's pages and the read API answered from
 * the fleet's PostgreSQL (fleet/view.c), auth as the daemon's.  Stateless:
 * two of them behind a load balancer serve the same answers.
 *
 * Its routes are registered before the web view's (gw_web_start), so
 * they answer the data paths the web view also registers for a node's
 * SQLite file (first match wins: daemon/http_parse.c), and the pages and
 * their files come from the same code as a node's.
 *
 *   GET /healthz                          {"status": "ok", "nodes": N}
 *   GET /v1/runs?node=&state=             every run of every node (NODE/RUN)
 *   GET /v1/runs/{run}, .../alerts, .../records, .../ranks
 *   GET /v1/alerts, /v1/alerts/{id}, /v1/nodes
 */
#include "fleet_view.h"

#include "auth.h"
#include "fleet.h"
#include "http.h"
#include "http_url.h"
#include "log.h"
#include "series.h"
#include "util.h"
#include "web.h"
#include "wire.h"

#include "gw_config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

struct view_daemon {
	uv_loop_t *loop;
	struct gw_cfg *cfg;
	const char *dsn;           /* the routes' data: a secret, never logged */
	struct gw_auth *auth;
	struct gw_http *http;
	uv_signal_t sig_term, sig_int;
	bool stopping;
};

/* A text query parameter: 1 set, 0 absent, -1 bad. */
static int text_param(const struct gw_http_req *r, const char *name, char *out, size_t cap)
{
	return gw_http_query_param(r->query, r->query_len, name, out, cap);
}

static int bad_param(json_t **out, const char *name)
{
	char msg[128];
	snprintf(msg, sizeof(msg), "bad query parameter %s", name);
	*out = gw_http_error_json(msg);
	return 400;
}

static int q_health(const struct gw_http_req *r, json_t **out)
{
	return gw_fleet_view_ping(r->data, out);
}

static int q_runs(const struct gw_http_req *r, json_t **out)
{
	char node[GW_FLEET_NODE_MAX], state[16];
	int hn = text_param(r, "node", node, sizeof(node)), hs = text_param(r, "state", state, sizeof(state));
	if (hn < 0)
		return bad_param(out, "node");
	if (hs < 0)
		return bad_param(out, "state (live, stalled, ended or idle)");
	return gw_fleet_view_runs(r->data, hn ? node : NULL, hs ? state : NULL, out);
}

static int q_run(const struct gw_http_req *r, json_t **out)
{
	return gw_fleet_view_run(r->data, r->arg, out);
}

static int q_alerts(const struct gw_http_req *r, json_t **out)
{
	return gw_fleet_view_alerts(r->data, r->arg, out);
}

static int q_alert(const struct gw_http_req *r, json_t **out)
{
	return gw_fleet_view_alert(r->data, r->arg, out);
}

static int q_nodes(const struct gw_http_req *r, json_t **out)
{
	return gw_fleet_view_nodes(r->data, out);
}

static int q_ranks(const struct gw_http_req *r, json_t **out)
{
	/* ranks' lines stay on the node (not shipped) */
	*out = json_pack("{s:s, s:[]}", "run", r->arg, "ranks");
	return *out ? 200 : 500;
}

/* An integer parameter in [min, max]: 1 set, 0 absent, -1 bad. */
static int int_param(const struct gw_http_req *r, const char *name, long long min, long long max,
                     long long *v)
{
	char s[40], *end;
	int got = text_param(r, name, s, sizeof(s));
	if (got <= 0)
		return got;
	errno = 0;
	*v = strtoll(s, &end, 10);
	return !s[0] || *end || errno || *v < min || *v > max ? -1 : 1;
}

static int q_records(const struct gw_http_req *r, json_t **out)
{
	long long from, to, mp = GW_SERIES_DEFAULT_POINTS;
	int hf = int_param(r, "from", -GW_WIRE_STEP_MAX, GW_WIRE_STEP_MAX, &from);
	int ht = int_param(r, "to", -GW_WIRE_STEP_MAX, GW_WIRE_STEP_MAX, &to);
	if (hf < 0)
		return bad_param(out, "from (a step)");
	if (ht < 0)
		return bad_param(out, "to (a step)");
	if (int_param(r, "max_points", 1, GW_SERIES_MAX_POINTS, &mp) < 0)
		return bad_param(out, "max_points");
	int64_t f = from, t = to;
	return gw_fleet_view_records(r->data, r->arg, hf ? &f : NULL, ht ? &t : NULL, (size_t)mp, out);
}

static int add_routes(struct view_daemon *d, char *err, size_t errlen)
{
	void *dsn = (void *)d->dsn;
	const struct gw_http_route routes[] = {
		{.method = "GET", .path = "/healthz", .query = q_health, .data = dsn,
		 .scope = GW_SCOPE_OPEN},
		{.method = "GET", .path = "/v1/runs", .query = q_runs, .data = dsn},
		{.method = "GET", .path = "/v1/alerts", .query = q_alerts, .data = dsn},
		{.method = "GET", .path = "/v1/nodes", .query = q_nodes, .data = dsn},
		{.method = "GET", .path = "/v1/runs/", .prefix = true, .suffix = "/alerts",
		 .query = q_alerts, .data = dsn},
		{.method = "GET", .path = "/v1/runs/", .prefix = true, .suffix = "/records",
		 .query = q_records, .data = dsn},
		{.method = "GET", .path = "/v1/runs/", .prefix = true, .suffix = "/ranks",
		 .query = q_ranks, .data = dsn},
		{.method = "GET", .path = "/v1/runs/", .prefix = true, .query = q_run, .data = dsn},
		{.method = "GET", .path = "/v1/alerts/", .prefix = true, .query = q_alert, .data = dsn,
		 .arg_name = "alert id"},
	};
	for (size_t i = 0; i < GW_ARRAY_SIZE(routes); i++)
		if (gw_http_route(d->http, &routes[i]) < 0)
			return gw_errf(err, errlen, -ENOSPC, "fleet view: the HTTP route table is full");
	return gw_web_start(d->http, err, errlen);
}

static void on_signal(uv_signal_t *s, int signum)
{
	struct view_daemon *d = s->data;
	if (d->stopping)
		return;
	d->stopping = true;
	gw_log_info("%s: stopping", signum == SIGTERM ? "SIGTERM" : "SIGINT");
	gw_http_stop(d->http);
	uv_close((uv_handle_t *)&d->sig_term, NULL);
	uv_close((uv_handle_t *)&d->sig_int, NULL);
}

int gw_fleet_view_main(struct gw_args *a)
{
	struct view_daemon d = {.cfg = &a->cfg, .dsn = a->fleet_view};
	char err[512], shown[256];
	gw_log_init(d.cfg->log_level, gw_log_stderr_is_journal());
	gw_fleet_redact_dsn(d.dsn, shown, sizeof(shown));
	gw_log_info("gradwatchd %s starting as a fleet view of %s", GW_VERSION, shown);
	int rc = gw_fleet_view_check(d.dsn, err, sizeof(err));
	if (rc == 0)
		rc = gw_auth_load(d.cfg->auth, &d.auth, err, sizeof(err));
	if (rc < 0) {
		gw_log_crit("%s", err);
		gw_auth_free(d.auth);
		return 1;
	}
	d.loop = uv_default_loop();
	signal(SIGPIPE, SIG_IGN);
	uv_signal_init(d.loop, &d.sig_term);
	uv_signal_init(d.loop, &d.sig_int);
	d.sig_term.data = d.sig_int.data = &d;
	uv_signal_start(&d.sig_term, on_signal, SIGTERM);
	uv_signal_start(&d.sig_int, on_signal, SIGINT);
	const struct gw_http_opts ho = {.loop = d.loop, .cfg = d.cfg, .ingest = NULL, .auth = d.auth};
	rc = gw_http_start(&ho, &d.http, err, sizeof(err));
	if (rc == 0)
		rc = add_routes(&d, err, sizeof(err));
	int status = 0;
	if (rc < 0) {
		gw_log_crit("%s", err);
		d.stopping = true;
		gw_http_stop(d.http);
		uv_close((uv_handle_t *)&d.sig_term, NULL);
		uv_close((uv_handle_t *)&d.sig_int, NULL);
		status = 1;
	} else {
		gw_log_info("ready");
	}
	uv_run(d.loop, UV_RUN_DEFAULT);
	gw_http_free(d.http);
	gw_auth_free(d.auth);
	if (uv_loop_close(d.loop) != 0) {
		gw_log_err("exit with libuv handles still open");
		status = 1;
	}
	gw_log_info("stopped");
	return status;
}
