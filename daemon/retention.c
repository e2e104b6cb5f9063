/*
 * retention: old and oversize runs leave the database (see retention.h).
 */
#include "retention.h"

#include "auth.h"
#include "buf.h"
#include "daemon.h"
#include "http.h"
#include "ingest.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PER_PASS 1000

/* One pass: what to delete is chosen on the thread pool. */
struct pass {
	uv_work_t work;
	struct gw_daemon *d;
	const char *db_path;
	double older_than;         /* delete runs last seen before this (NaN: no age rule) */
	uint64_t max_bytes;        /* 0: no size rule */
	double active_since;       /* never a run seen after this for the size rule */
	char **names;
	size_t n, cap;
	uint64_t used_bytes;
	char err[256];
	int rc;
	bool asked;                /* POST /v1/prune (else a timed pass) */
	struct req *req;           /* the request to answer; NULL once it went away */
};

/* DELETE /v1/runs/{run} and POST /v1/prune: answered once the deletions
 * are committed (a streamed-body route, so the transport tells us when the
 * connection goes away first). */
struct req {
	struct gw_http_conn *c;
	struct gw_daemon *d;
	const char *run;           /* DELETE: the run (the request's) */
	double older_than;         /* prune */
	struct gw_commit_waiter waiter;
	bool waiting;
	json_t *body;              /* the answer */
	struct pass *pass;         /* a prune's pass on the thread pool */
};

struct state {
	uv_timer_t timer;
	bool timer_on;
	bool busy;                 /* a timed pass is running */
	bool stuck_said;           /* over max_bytes with nothing to delete: said once */
	struct gw_retention_stats stats;
};

static struct state st;

static void pick_name(void *ctx, sqlite3_stmt *row)
{
	struct pass *p = ctx;
	const char *name = (const char *)sqlite3_column_text(row, 0);
	if (!name || gw_grow((void **)&p->names, &p->cap, p->n + 1, sizeof(*p->names)) < 0)
		return;
	if ((p->names[p->n] = strdup(name)))
		p->n++;
}

static void count_one(void *ctx, sqlite3_stmt *row)
{
	*(int64_t *)ctx = sqlite3_column_int64(row, 0);
}

static void work_pick(uv_work_t *w)
{
	struct pass *p = gw_container_of(w, struct pass, work);
	p->rc = 0;
	if (!isnan(p->older_than)) {
		const struct gw_sv b[] = {gw_sv_real(p->older_than), gw_sv_int(MAX_PER_PASS)};
		p->rc = gw_store_read_each(p->db_path, "SELECT name FROM runs WHERE last_seen < ?1 "
		                           "ORDER BY last_seen LIMIT ?2", b, 2, pick_name, p, p->err,
		                           sizeof(p->err));
	}
	if (p->rc < 0 || !p->max_bytes)
		return;
	int64_t pages = 0, free_pages = 0, page_size = 0, runs = 0;
	if ((p->rc = gw_store_read_each(p->db_path, "PRAGMA page_count", NULL, 0, count_one, &pages,
	                                p->err, sizeof(p->err))) < 0 ||
	    (p->rc = gw_store_read_each(p->db_path, "PRAGMA freelist_count", NULL, 0, count_one,
	                                &free_pages, p->err, sizeof(p->err))) < 0 ||
	    (p->rc = gw_store_read_each(p->db_path, "PRAGMA page_size", NULL, 0, count_one,
	                                &page_size, p->err, sizeof(p->err))) < 0 ||
	    (p->rc = gw_store_read_each(p->db_path, "SELECT count(*) FROM runs", NULL, 0, count_one,
	                                &runs, p->err, sizeof(p->err))) < 0)
		return;
	p->used_bytes = (uint64_t)(pages - free_pages) * (uint64_t)page_size;
	if (p->used_bytes <= p->max_bytes || runs <= 0)
		return;
	/* about how many runs hold the excess, the oldest first */
	double per_run = (double)p->used_bytes / (double)runs;
	int64_t k = (int64_t)ceil((double)(p->used_bytes - p->max_bytes) / per_run);
	k = k < 1 ? 1 : k > MAX_PER_PASS ? MAX_PER_PASS : k;
	const struct gw_sv b[] = {gw_sv_real(p->active_since), gw_sv_int(k)};
	p->rc = gw_store_read_each(p->db_path, "SELECT name FROM runs WHERE last_seen < ?1 "
	                           "ORDER BY last_seen LIMIT ?2", b, 2, pick_name, p, p->err,
	                           sizeof(p->err));
}

/* Delete one run: from the record path and from the database. */
static uint64_t delete_run(struct gw_daemon *d, const char *run)
{
	gw_runs_forget(&d->ingest, run);
	st.stats.runs_deleted++;
	return gw_store_delete_run(d->store, run);
}

static void free_pass(struct pass *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->names[i]);
	free(p->names);
	free(p);
}

static void answered(struct gw_commit_waiter *w)
{
	struct req *q = gw_container_of(w, struct req, waiter);
	q->waiting = false;
	if (w->error) {
		gw_http_respond_error(q->c, 503, "not deleted yet: the database cannot be written (%s)",
		                      w->why);
		return;
	}
	gw_http_respond_json(q->c, 200, q->body);
	q->body = NULL;
}

/* Answer q once the store has committed seq. */
static void answer_after(struct req *q, uint64_t seq, json_t *body)
{
	q->body = body;
	q->waiter.seq = seq;
	q->waiter.fn = answered;
	q->waiting = true;
	gw_store_flush(q->d->store);
	gw_ingest_wait_commit(&q->d->ingest, &q->waiter);
}

static void work_done(uv_work_t *w, int status)
{
	struct pass *p = gw_container_of(w, struct pass, work);
	struct gw_daemon *d = p->d;
	if (!p->asked) {
		st.busy = false;
		st.stats.passes++;
	} else if (p->req)
		p->req->pass = NULL;
	if (p->rc < 0 || status < 0) {
		gw_log_warn("retention: %s", p->rc < 0 ? p->err : "cancelled");
		if (p->req)
			gw_http_respond_error(p->req->c, 500, "prune failed: %s", p->err);
		free_pass(p);
		return;
	}
	json_t *names = json_array();
	uint64_t seq = 0;
	for (size_t i = 0; i < p->n && !d->stopping; i++) {
		seq = delete_run(d, p->names[i]);
		json_array_append_new(names, json_string(p->names[i]));
		gw_log_info("retention: run %s deleted (%s)", p->names[i],
		            p->asked ? "POST /v1/prune" : isnan(p->older_than) ? "retention.max_bytes"
		                                                            : "retention.max_age");
	}
	/* over max_bytes with nothing that may go: said once, again only after
	 * the database fitted or runs could go in between (it was said on
	 * every pass) */
	if (p->max_bytes && !p->asked) {
		bool stuck = p->used_bytes > p->max_bytes && !p->n;
		if (stuck && !st.stuck_said)
			gw_log_warn("retention: the database uses %" PRIu64 " bytes (retention.max_bytes %"
			            PRIu64 "), but every run left was active in the last "
			            "limits.run_evict_idle_s; said once until that changes",
			            p->used_bytes, p->max_bytes);
		st.stuck_said = stuck;
	}
	if (p->req)
		answer_after(p->req, seq, json_pack("{s:o}", "deleted", names));
	else
		json_decref(names);
	free_pass(p);
}

static int start_pass(struct gw_daemon *d, double older_than, uint64_t max_bytes,
                      struct req *q)
{
	struct pass *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->d = d;
	p->db_path = d->cfg->db_path;
	p->older_than = older_than;
	p->max_bytes = max_bytes;
	p->active_since = gw_wall_now() - d->cfg->run_evict_idle_s;
	p->asked = q != NULL;
	p->req = q;
	int rc = uv_queue_work(d->loop, &p->work, work_pick, work_done);
	if (rc < 0) {
		free_pass(p);
		return rc;
	}
	if (q)
		q->pass = p;
	return 0;
}

static void on_timer(uv_timer_t *t)
{
	struct gw_daemon *d = t->data;
	const struct gw_cfg *cfg = d->cfg;
	if (st.busy || d->stopping)
		return;
	double older = cfg->retention_max_age_ms ? gw_wall_now() - cfg->retention_max_age_ms / 1000.0
	                                         : NAN;
	if (start_pass(d, older, cfg->retention_max_bytes, NULL) == 0)
		st.busy = true;
}

/* ---- the routes ------------------------------------------------------------------ */

static int req_begin(struct gw_http_conn *c, const struct gw_http_req *r)
{
	struct req *q = calloc(1, sizeof(*q));
	if (!q) {
		gw_http_respond_error(c, 500, "out of memory");
		return -ENOMEM;
	}
	q->c = c;
	q->d = r->data;
	gw_http_conn_set_state(c, q);
	/* deleting is writing: a token limited to a glob of runs deletes only
	 * those, and may not prune (that would reach every team's runs) */
	const char *glob = gw_auth_runs_glob(r->token);
	if (r->arg) {
		if (!gw_auth_allows_run(r->token, r->arg)) {
			gw_http_respond_error(c, 403, "this token may not delete run \"%s\" (it may write "
			                      "only runs matching %s)", r->arg, glob);
			return -EPERM;
		}
		q->run = r->arg;
		return 0;
	}
	if (glob) {
		gw_http_respond_error(c, 403, "this token may write only runs matching %s and may not "
		                      "prune; prune needs an ingest token without a run glob", glob);
		return -EPERM;
	}
	char v[64];
	uint64_t ms;
	json_t *j = NULL;
	int has = gw_http_query_param(r->query, r->query_len, "older_than", v, sizeof(v));
	if (has != 1 || !(j = json_string(v)) || gw_parse_duration(j, &ms) < 0) {
		json_decref(j);
		if (has == 1)
			gw_http_respond_error(c, 400, "bad query parameter older_than=%s: expected a "
			                      "duration (30d, 12h, 90m, 45s or seconds)", v);
		else if (has < 0)
			gw_http_respond_error(c, 400, "bad query parameter older_than: bad "
			                      "percent-encoding or longer than %zu bytes", sizeof(v) - 1);
		else
			gw_http_respond_error(c, 400, "POST /v1/prune needs ?older_than=DURATION "
			                      "(e.g. 30d, 12h)");
		return -EINVAL;
	}
	json_decref(j);
	q->older_than = gw_wall_now() - ms / 1000.0;
	return 0;
}

static int req_data(struct gw_http_conn *c, const char *p, size_t n)
{
	return 0;   /* no body is read */
}

static void req_end(struct gw_http_conn *c)
{
	struct req *q = gw_http_conn_state(c);
	if (q->run) {
		if (!gw_runs_known(&q->d->ingest, q->run)) {
			gw_http_respond_error(c, 404, "no run named \"%s\"", q->run);
			return;
		}
		gw_log_info("run %s deleted (DELETE /v1/runs)", q->run);
		answer_after(q, delete_run(q->d, q->run), json_pack("{s:[s]}", "deleted", q->run));
	} else if (start_pass(q->d, q->older_than, 0, q) < 0) {
		gw_http_respond_error(c, 500, "cannot start the prune");
	}
}

static void req_free(struct gw_http_conn *c, bool complete)
{
	struct req *q = gw_http_conn_state(c);
	if (!q)
		return;
	if (q->waiting)
		gw_ingest_cancel_wait(&q->d->ingest, &q->waiter);
	if (q->pass)
		q->pass->req = NULL;   /* it finishes without an answer */
	json_decref(q->body);
	free(q);
}

static const struct gw_http_body_ops req_ops = {
	.begin = req_begin,
	.data = req_data,
	.end = req_end,
	.free = req_free,
};

int gw_retention_start(struct gw_daemon *d, char *err, size_t errlen)
{
	const struct gw_http_route routes[] = {
		{.method = "DELETE", .path = "/v1/runs/", .prefix = true, .body = &req_ops, .data = d,
		 .scope = GW_SCOPE_INGEST},
		{.method = "POST", .path = "/v1/prune", .body = &req_ops, .data = d,
		 .scope = GW_SCOPE_INGEST},
	};
	for (size_t i = 0; i < GW_ARRAY_SIZE(routes); i++) {
		int rc = gw_http_route(d->http, &routes[i]);
		if (rc < 0)
			return gw_errf(err, errlen, rc, "cannot register %s %s", routes[i].method,
			               routes[i].path);
	}
	memset(&st, 0, sizeof(st));
	uv_timer_init(d->loop, &st.timer);
	st.timer.data = d;
	st.timer_on = true;
	if (d->cfg->retention_max_age_ms || d->cfg->retention_max_bytes)
		uv_timer_start(&st.timer, on_timer, 1000, d->cfg->retention_every_ms);
	return 0;
}

void gw_retention_stats(struct gw_retention_stats *out)
{
	*out = st.stats;
}

void gw_retention_stop(struct gw_daemon *d)
{
	if (st.timer_on && !uv_is_closing((uv_handle_t *)&st.timer))
		uv_close((uv_handle_t *)&st.timer, NULL);
}
