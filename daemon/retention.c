/*
 * retention: old and oversize runs leave the database (see retention.h).
 *
 * Which runs go is chosen by gw_retention_pick() on the thread pool (the
 * runs table, the database's size): for a timed pass in its own uv_work_t,
 * for POST /v1/prune as a read on http.c's deferred path (after the
 * barrier, with only the request).  Back on the loop delete_names() deletes them through
 * the store's writer, except a run that sent a line while it was being
 * picked (the pick read the database before that line: the run is no
 * longer as old as the rule asks, and deleting it would delete that line
 * too, the run coming back with only its next ones); DELETE
 * /v1/runs/{run} deletes right away.  Both routes answer once the
 * deletions are committed (gw_http_answer_after_commit), with the runs
 * deleted.
 */
#include "retention.h"

#include "auth.h"
#include "config.h"
#include "http.h"
#include "http_url.h"
#include "ingest.h"
#include "log.h"
#include "store.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PER_PASS 1000

/* A timed pass on the thread pool. */
struct pass {
	uv_work_t work;
	const char *db_path;
	struct gw_retention_pick pk;
	int rc;
};

struct state {
	struct gw_retention_opts o;
	uv_timer_t timer;
	bool timer_on;
	bool stopping;             /* gw_retention_stop: nothing more is deleted */
	bool busy;                 /* a timed pass is running */
	bool stuck_said;           /* over max_bytes with nothing to delete: said once */
	struct gw_retention_stats stats;
};

static struct state st;

static void pick_name(void *ctx, sqlite3_stmt *row)
{
	struct gw_retention_pick *p = ctx;
	const char *name = (const char *)sqlite3_column_text(row, 0);
	if (name)
		json_array_append_new(p->names, json_string(name));
}

/* The database's size and its runs, in one read. */
struct size_row {
	int64_t pages, free_pages, page_size, runs;
};

static void size_one(void *ctx, sqlite3_stmt *row)
{
	struct size_row *z = ctx;
	z->pages = sqlite3_column_int64(row, 0);
	z->free_pages = sqlite3_column_int64(row, 1);
	z->page_size = sqlite3_column_int64(row, 2);
	z->runs = sqlite3_column_int64(row, 3);
}

/* Append up to `limit` runs last seen before `before`, the oldest first. */
static int pick_older(const char *db_path, struct gw_retention_pick *p, double before,
                      int64_t limit)
{
	const struct gw_sv b[] = {gw_sv_real(before), gw_sv_int(limit)};
	return gw_store_read_each(db_path, "SELECT name FROM runs WHERE last_seen < ?1 "
	                          "ORDER BY last_seen LIMIT ?2", b, 2, pick_name, p, p->err,
	                          sizeof(p->err));
}

int gw_retention_pick(const char *db_path, struct gw_retention_pick *p)
{
	int rc = 0;
	if (!(p->names = json_array()))
		return gw_errf(p->err, sizeof(p->err), -ENOMEM, "out of memory");
	if (!isnan(p->older_than))
		rc = pick_older(db_path, p, p->older_than, MAX_PER_PASS);
	if (rc < 0 || !p->max_bytes)
		return rc;
	struct size_row z = {0};
	if ((rc = gw_store_read_each(db_path, "SELECT (SELECT * FROM pragma_page_count), "
	                             "(SELECT * FROM pragma_freelist_count), "
	                             "(SELECT * FROM pragma_page_size), (SELECT count(*) FROM runs)",
	                             NULL, 0, size_one, &z, p->err, sizeof(p->err))) < 0)
		return rc;
	p->used_bytes = (uint64_t)(z.pages - z.free_pages) * (uint64_t)z.page_size;
	if (p->used_bytes <= p->max_bytes || z.runs <= 0)
		return 0;
	/* about how many runs hold the excess, the oldest first */
	double per_run = (double)p->used_bytes / (double)z.runs;
	int64_t k = (int64_t)ceil((double)(p->used_bytes - p->max_bytes) / per_run);
	k = k < 1 ? 1 : k > MAX_PER_PASS ? MAX_PER_PASS : k;
	return pick_older(db_path, p, p->active_since, k);
}

/* Delete one run: from the record path and from the database. */
static uint64_t delete_run(const char *run)
{
	gw_ingest_forget_run(st.o.ingest, run);
	st.stats.runs_deleted++;
	return gw_store_delete_run(st.o.store, run);
}

double gw_retention_cutoff(const struct gw_retention_pick *p)
{
	double t = isnan(p->older_than) ? -INFINITY : p->older_than;
	return p->max_bytes && p->active_since > t ? p->active_since : t;
}

/* Delete the runs picked (loop thread; none once the daemon is stopping)
 * but those seen since `cutoff`.  Returns the store
 * sequence of the last deletion (0: none); *deleted (may be NULL) gets the
 * runs deleted. */
static uint64_t delete_names(const json_t *names, double cutoff, const char *why,
                             json_t **deleted)
{
	uint64_t seq = 0;
	json_t *done = json_array();
	for (size_t i = 0; i < json_array_size(names) && !st.stopping; i++) {
		const char *run = json_string_value(json_array_get(names, i));
		if (gw_ingest_run_last_seen(st.o.ingest, run) >= cutoff) {   /* NAN (not known): it goes */
			gw_log_info("retention: run %s kept (%s): it sent a line while it was being "
			            "picked", run, why);
			continue;
		}
		seq = delete_run(run);
		json_array_append_new(done, json_string(run));
		gw_log_info("retention: run %s deleted (%s)", run, why);
	}
	if (deleted)
		*deleted = done;
	else
		json_decref(done);
	return seq;
}

static void work_pick(uv_work_t *w)
{
	struct pass *p = gw_container_of(w, struct pass, work);
	p->rc = gw_retention_pick(p->db_path, &p->pk);
}

static void work_done(uv_work_t *w, int status)
{
	struct pass *p = gw_container_of(w, struct pass, work);
	const struct gw_retention_pick *pk = &p->pk;
	st.busy = false;
	st.stats.passes++;
	if (p->rc < 0 || status < 0) {
		gw_log_warn("retention: %s", p->rc < 0 ? pk->err : "cancelled");
	} else {
		delete_names(pk->names, gw_retention_cutoff(pk),
		             isnan(pk->older_than) ? "retention.max_bytes" : "retention.max_age", NULL);
		/* over max_bytes with nothing that may go: said once, again only
		 * after the database fitted or runs could go in between (it was
		 * said on every pass) */
		if (pk->max_bytes) {
			bool stuck = pk->used_bytes > pk->max_bytes && !json_array_size(pk->names);
			if (stuck && !st.stuck_said)
				gw_log_warn("retention: the database uses %" PRIu64 " bytes "
				            "(retention.max_bytes %" PRIu64 "), but every run left was "
				            "active in the last limits.run_evict_idle_s; said once until "
				            "that changes", pk->used_bytes, pk->max_bytes);
			st.stuck_said = stuck;
		}
	}
	json_decref(p->pk.names);
	free(p);
}

static void on_timer(uv_timer_t *t)
{
	const struct gw_cfg *cfg = st.o.cfg;
	if (st.busy || st.stopping)
		return;
	struct pass *p = calloc(1, sizeof(*p));
	if (!p)
		return;
	p->db_path = cfg->db_path;
	p->pk.older_than = cfg->retention_max_age_ms
	                   ? gw_wall_now() - cfg->retention_max_age_ms / 1000.0 : NAN;
	p->pk.max_bytes = cfg->retention_max_bytes;
	p->pk.active_since = gw_wall_now() - cfg->run_evict_idle_s;
	if (uv_queue_work(st.o.loop, &p->work, work_pick, work_done) < 0) {
		free(p);
		return;
	}
	st.busy = true;
}

/* ---- the routes ------------------------------------------------------------------ */

/* DELETE /v1/runs/{run}: deleted now, answered once committed.  Deleting
 * is writing: a token limited to a glob of runs deletes only those. */
static void h_delete(struct gw_http_conn *c, const struct gw_http_req *r)
{
	if (!gw_auth_allows_run(r->token, r->arg)) {
		gw_http_respond_error(c, 403, "this token may not delete run \"%s\" (it may write "
		                      "only runs matching %s)", r->arg, gw_auth_runs_glob(r->token));
		return;
	}
	if (!gw_ingest_run_known(st.o.ingest, r->arg)) {
		gw_http_respond_error(c, 404, "no run named \"%s\"", r->arg);
		return;
	}
	gw_log_info("run %s deleted (DELETE /v1/runs)", r->arg);
	gw_http_answer_after_commit(c, delete_run(r->arg),
	                            200, json_pack("{s:[s]}", "deleted", r->arg), "not deleted yet");
}

/* POST /v1/prune, on the thread pool: which runs are older than asked. */
static int read_prune(const struct gw_http_req *r, json_t **out)
{
	struct gw_retention_pick *pk = r->state;
	if (gw_retention_pick(r->db_path, pk) < 0) {
		*out = json_pack("{s:s+}", "error", "prune failed: ", pk->err);
		return 500;
	}
	*out = json_incref(pk->names);
	return 200;
}

/* ... back on the loop: delete them. */
static void prune_then(struct gw_http_conn *c, const struct gw_http_req *r, int status,
                       json_t *names)
{
	if (status != 200) {
		gw_log_warn("retention: %s", ((struct gw_retention_pick *)r->state)->err);
		gw_http_respond_json(c, status, names);
		return;
	}
	json_t *deleted = NULL;
	uint64_t seq = delete_names(names, gw_retention_cutoff(r->state), "POST /v1/prune", &deleted);
	json_decref(names);
	gw_http_answer_after_commit(c, seq, 200, json_pack("{s:o}", "deleted", deleted),
	                            "not deleted yet");
}

static void pick_free(void *state)
{
	struct gw_retention_pick *pk = state;
	json_decref(pk->names);
	free(pk);
}

/* POST /v1/prune?older_than=DURATION: a token limited to a glob of runs
 * may not prune (that would reach every team's runs). */
static void h_prune(struct gw_http_conn *c, const struct gw_http_req *r)
{
	const char *glob = gw_auth_runs_glob(r->token);
	if (glob) {
		gw_http_respond_error(c, 403, "this token may write only runs matching %s and may not "
		                      "prune; prune needs an ingest token without a run glob", glob);
		return;
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
		return;
	}
	json_decref(j);
	struct gw_retention_pick *pk = calloc(1, sizeof(*pk));
	if (!pk) {
		gw_http_respond_error(c, 500, "out of memory");
		return;
	}
	pk->older_than = gw_wall_now() - ms / 1000.0;
	gw_http_defer(c, read_prune, prune_then, pk, pick_free);
}

int gw_retention_start(const struct gw_retention_opts *o, char *err, size_t errlen)
{
	const struct gw_http_route routes[] = {
		{.method = "DELETE", .path = "/v1/runs/", .prefix = true, .handler = h_delete,
		 .scope = GW_SCOPE_INGEST},
		{.method = "POST", .path = "/v1/prune", .handler = h_prune, .scope = GW_SCOPE_INGEST},
	};
	memset(&st, 0, sizeof(st));
	st.o = *o;
	for (size_t i = 0; i < GW_ARRAY_SIZE(routes); i++) {
		int rc = gw_http_route(o->http, &routes[i]);
		if (rc < 0)
			return gw_errf(err, errlen, rc, "cannot register %s %s", routes[i].method,
			               routes[i].path);
	}
	uv_timer_init(o->loop, &st.timer);
	st.timer_on = true;
	if (o->cfg->retention_max_age_ms || o->cfg->retention_max_bytes)
		uv_timer_start(&st.timer, on_timer, 1000, o->cfg->retention_every_ms);
	return 0;
}

void gw_retention_stats(struct gw_retention_stats *out)
{
	*out = st.stats;
}

void gw_retention_stop(void)
{
	st.stopping = true;
	if (st.timer_on && !uv_is_closing((uv_handle_t *)&st.timer))
		uv_close((uv_handle_t *)&st.timer, NULL);
}
