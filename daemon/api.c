/*
 * api: the routes of gradwatchd's HTTP API (docs/api.md) on the transport
 * of http.c: POST /v1/ingest, GET /healthz, GET /v1/stats, GET /v1/runs,
 * GET /v1/runs/{run}, GET /v1/runs/{run}/alerts, GET /v1/alerts,
 * POST /v1/runs/{run}/resume-check.
 *
 * GET /healthz is health.c's, registered by it.  An ingest body is a
 * gw_ingest_src: its lines go through the record path
 * as they stream in, and the answer waits (without blocking the loop) until
 * the store has committed the body's last line.  Reads run on the thread
 * pool with only the read-only database path; /v1/stats is answered from
 * memory on the loop.
 */
#include "api.h"

#include "config.h"
#include "fleet.h"
#include "http.h"
#include "http_url.h"
#include "ingest.h"
#include "query.h"

#include "buf.h"
#include "hash.h"
#include "idem.h"
#include "kern.h"
#include "resume_check.h"
#include "util.h"

#include "gw_config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REPORTED_ERRORS 20

/* ---- POST /v1/ingest ------------------------------------------------------------ */

enum idem_role {
	IDEM_NONE,       /* no Idempotency-Key: lines are ingested as they stream in */
	IDEM_FIRST,      /* the first request of its key: the body is buffered, then
	                    ingested whole with the key row (idem.h) */
	IDEM_REPEAT,     /* a repeat: the body is read and dropped, the first answer given */
};

struct ingest_req {
	struct gw_http_conn *c;
	const struct gw_api_opts *o;
	struct gw_ingest_src src;
	char default_run[GW_WIRE_RUN_MAX + 1];
	uint64_t body_bytes;
	bool too_large;
	json_t *errors;
	struct gw_commit_waiter waiter;
	bool waiting;
	enum idem_role role;
	struct gw_idem_entry *idem;     /* held while the request uses it */
	struct gw_buf body;             /* IDEM_FIRST: the whole body */
	uint64_t fp;                    /* with a key: the request's fingerprint (idem.h) */
};

static void on_reject(struct gw_ingest_src *s, uint64_t lineno, const struct gw_wire_err *e)
{
	struct ingest_req *q = s->data;
	if (json_array_size(q->errors) < MAX_REPORTED_ERRORS)
		json_array_append_new(q->errors, gw_ingest_err_json(lineno, e));
}

/* The answer to a request the storage cannot take now: 507 when the disk
 * is full, 503 (with Retry-After) when it fails otherwise or its queue is
 * over storage.max_pending_bytes. */
static void respond_storage(struct gw_http_conn *c, int error, const char *why)
{
	if (error == -ENOSPC)
		gw_http_respond_error(c, 507, "not committed: the database cannot grow (disk full): %s; "
		                      "retry later with the same Idempotency-Key", why);
	else if (error)
		gw_http_respond_error(c, 503, "not committed: the database cannot be written: %s; "
		                      "retry later with the same Idempotency-Key", why);
	else
		gw_http_respond_error(c, 503, "the daemon's write queue is full "
		                      "(storage.max_pending_bytes); retry in a moment");
}

/* A repeat of a committed key: the first answer, marked as such. */
static void respond_replayed(struct ingest_req *q)
{
	const struct gw_idem_entry *e = q->idem;
	gw_http_respond_page(q->c, e->status, "application/json", "Idempotent-Replayed: true\r\n",
	                     e->answer, strlen(e->answer));
}

static int ingest_begin(struct gw_http_conn *c, const struct gw_http_req *r)
{
	const struct gw_api_opts *o = r->data;
	char why[200];
	struct gw_idem_entry *e = NULL;
	if (r->idempotency_key) {
		size_t kl = strlen(r->idempotency_key);
		e = gw_idem_get(o->idem, r->idempotency_key, kl, gw_wall_now(),
		                gw_store_committed(o->store));
		if (e && e->state == GW_IDEM_RUNNING) {
			/* docs/api.md: with Retry-After, so a client retries rather
			 * than dropping the batch */
			static const char busy[] = "{\"error\":\"a request with this Idempotency-Key is "
			                           "still being sent; retry once it is answered\"}\n";
			gw_http_respond_page(c, 409, "application/json", "Retry-After: 1\r\n", busy,
			                     sizeof(busy) - 1);
			return -EBUSY;
		}
	}
	int serr = gw_ingest_store_error(o->ingest, why, sizeof(why));
	if (!e && (serr || gw_ingest_full(o->ingest))) {
		respond_storage(c, serr, why);
		return -EAGAIN;
	}
	struct ingest_req *q = calloc(1, sizeof(*q));
	if (!q || !(q->errors = json_array())) {
		free(q);
		gw_http_respond_error(c, 500, "out of memory");
		return -ENOMEM;
	}
	q->c = c;
	q->o = o;
	gw_ingest_src_init(&q->src, o->ingest, GW_TR_HTTP, 0);
	q->src.eof_ends_line = true;
	q->src.token = r->token;
	q->src.on_reject = on_reject;
	q->src.data = q;
	gw_http_conn_set_state(c, q);
	/* decoded whole (a URL is at most 4 KiB), so a name that is too long
	 * is told its length, not a decoding error */
	char run[4096];
	int rc = gw_http_query_param(r->query, r->query_len, "run", run, sizeof(run));
	snprintf(why, sizeof(why), "bad percent-encoding (a %%XX that is not two hex digits, or %%00)");
	if (rc < 0 || (rc > 0 && gw_wire_check_run(run, strlen(run), why, sizeof(why)) < 0)) {
		gw_http_respond_error(c, 400, "bad ?run= parameter: %s", why);
		return -EINVAL;
	}
	if (rc > 0) {
		gw_strlcpy(q->default_run, run, sizeof(q->default_run));
		q->src.default_run = q->default_run;
	}
	if (e) {
		q->role = IDEM_REPEAT;
	} else if (r->idempotency_key) {
		e = gw_idem_begin(o->idem, r->idempotency_key, strlen(r->idempotency_key), gw_wall_now());
		if (!e) {
			gw_http_respond_error(c, 500, "out of memory");
			return -ENOMEM;
		}
		q->role = IDEM_FIRST;
	}
	if (e) {
		q->idem = e;
		gw_idem_hold(e);
		q->fp = gw_idem_fp_begin(q->src.default_run);
	}
	return 0;
}

static int ingest_data(struct gw_http_conn *c, const char *p, size_t n)
{
	struct ingest_req *q = gw_http_conn_state(c);
	size_t max = q->o->cfg->max_body;
	if (q->role != IDEM_NONE)
		q->fp = gw_fnv1a64_add(q->fp, p, n);
	if (q->too_large || q->role == IDEM_REPEAT)
		return 0;
	if (q->body_bytes + n > max) {
		n = max - q->body_bytes;
		q->too_large = true;
	}
	q->body_bytes += n;
	if (q->role == IDEM_FIRST)
		return gw_buf_add(&q->body, p, n) < 0 ? -1 : 0;
	return gw_ingest_src_feed(&q->src, p, n) == -ENOMEM ? -1 : 0;
}

/* The body's answer: the counts, the first errors. */
static json_t *answer_json(struct ingest_req *q, int *status)
{
	json_t *j = json_pack("{s:I, s:I, s:b, s:O}", "accepted", (json_int_t)q->src.accepted,
	                      "rejected", (json_int_t)q->src.rejected, "committed", 1,
	                      "errors", q->errors);
	if (j && q->src.rejected > json_array_size(q->errors))
		json_object_set_new(j, "errors_truncated", json_true());
	if (j && q->too_large)
		json_object_set_new(j, "error", json_sprintf("the body is larger than %zu bytes (limits.max_body_bytes); lines after the limit were not read",
		                                             q->o->cfg->max_body));
	*status = q->too_large ? 413 : q->src.rejected ? 422 : 200;
	return j;
}

static void ingest_committed(struct gw_commit_waiter *w)
{
	struct ingest_req *q = gw_container_of(w, struct ingest_req, waiter);
	q->waiting = false;
	if (w->error) {
		/* not committed (yet): a retry with the same key waits for this
		 * commit instead of storing the batch twice */
		gw_http_conn_close_after(q->c);
		respond_storage(q->c, w->error, w->why);
		return;
	}
	if (q->role == IDEM_REPEAT) {
		gw_idem_done(q->o->idem, q->idem);
		respond_replayed(q);
		return;
	}
	if (q->role == IDEM_FIRST)
		gw_idem_done(q->o->idem, q->idem);
	int status;
	json_t *j = answer_json(q, &status);
	if (q->too_large)
		gw_http_conn_close_after(q->c);
	gw_http_respond_json(q->c, status, j);
}

/* The first request of a key: its whole body, its lines and the key row
 * under one hold, so they commit in one transaction. */
static void ingest_first(struct ingest_req *q)
{
	struct gw_store *st = q->o->store;
	gw_store_hold(st);
	if (q->body.len)
		gw_ingest_src_feed(&q->src, q->body.p, q->body.len);
	gw_ingest_src_finish(&q->src);
	int status;
	json_t *j = answer_json(q, &status);
	char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	uint64_t seq = text ? gw_idem_queue(q->o->idem, st, q->idem, status, text, q->fp) : 0;
	free(text);
	gw_store_release(st);
	gw_buf_free(&q->body);
	if (!seq) {
		/* out of memory for the key row: the lines went in without it, so
		 * the key must not claim them (a retry stores them again) */
		gw_idem_drop(q->o->idem, q->idem);
		q->role = IDEM_NONE;
	}
	q->waiter.seq = seq ? seq : q->src.last_seq;
}

static void ingest_end(struct gw_http_conn *c)
{
	struct ingest_req *q = gw_http_conn_state(c);
	if (q->role == IDEM_REPEAT) {
		if (q->idem->has_fp && q->idem->fp != q->fp) {
			/* the key was the first's: this body is not stored, and
			 * answering with the first's answer would say it was */
			gw_http_respond_error(c, 422, "this Idempotency-Key was used for a different "
			                      "request (another body or ?run=); a new batch needs a "
			                      "new key (nothing of this one was stored)");
			return;
		}
		if (q->idem->state == GW_IDEM_DONE) {
			respond_replayed(q);
			return;
		}
		q->waiter.seq = q->idem->seq;   /* QUEUED: wait for the first one's commit */
	} else if (q->role == IDEM_FIRST) {
		ingest_first(q);
	} else {
		gw_ingest_src_finish(&q->src);
		q->waiter.seq = q->src.last_seq;
	}
	q->waiter.fn = ingest_committed;
	q->waiting = true;
	gw_ingest_wait_commit(q->o->ingest, &q->waiter);
}

static void ingest_free(struct gw_http_conn *c, bool complete)
{
	struct ingest_req *q = gw_http_conn_state(c);
	if (!q)
		return;
	/* a body cut off keeps what arrived; its partial last line is lost */
	if (!complete && q->src.lines.len)
		gw_ingest_count_reject(q->o->ingest, GW_TR_HTTP, GW_REJ_TRUNCATED);
	if (q->waiting)
		gw_ingest_cancel_wait(q->o->ingest, &q->waiter);
	if (q->idem) {
		/* the first request cut off before its body was ingested: nothing
		 * of it is stored, so its key must not stay */
		if (q->role == IDEM_FIRST && q->idem->state == GW_IDEM_RUNNING)
			gw_idem_drop(q->o->idem, q->idem);
		gw_idem_release(q->o->idem, q->idem);
	}
	gw_buf_free(&q->body);
	gw_ingest_src_deinit(&q->src);
	json_decref(q->errors);
	free(q);
}

static const struct gw_http_body_ops ingest_ops = {
	.begin = ingest_begin,
	.data = ingest_data,
	.end = ingest_end,
	.free = ingest_free,
};

/* ---- reads (thread pool) --------------------------------------------------------------- */

/* Shipping to PostgreSQL (docs/fleet.md): how far behind this node is.
 * Any thread (the shipper's counters are copied under their lock). */
static json_t *fleet_json(struct gw_fleet *fl)
{
	struct gw_fleet_stats fs;
	gw_fleet_stats(fl, &fs);
	json_t *shipped = json_object();
	for (int t = 0; shipped && t < GW_FLEET_N_TABLES; t++)
		json_object_set_new(shipped, gw_fleet_table_names[t], json_integer((json_int_t)fs.shipped[t]));
	return json_pack("{s:s, s:b, s:I, s:o, s:o, s:I, s:I, s:o, s:s}",
	                 "node", fs.node, "up", fs.up, "backlog", (json_int_t)fs.backlog,
	                 "lag_s", gw_json_num(fs.lag_s), "shipped", shipped,
	                 "batches", (json_int_t)fs.batches, "errors", (json_int_t)fs.errors,
	                 "last_ok", gw_json_num(fs.last_ok), "last_error", fs.last_error);
}

/* GET /v1/runs: a page of at most `limit` (RUNS_PAGE, at most
 * RUNS_PAGE_MAX) runs, `q` part of a name, `order=trouble` (open alerts,
 * then stalled, first), `cursor` the `next` of the page before: 100,000
 * runs in one answer were 13 MB, refetched by the web view every 5 s. */
#define RUNS_PAGE 1000
#define RUNS_PAGE_MAX 10000

static int q_runs(const struct gw_http_req *r, json_t **out)
{
	char err[200], q[GW_WIRE_RUN_MAX + 1], order[16], cursor[GW_WIRE_RUN_MAX + 64];
	long long limit = RUNS_PAGE;
	int rl = gw_http_int_param(r->query, r->query_len, "limit", 1, RUNS_PAGE_MAX, &limit, err,
	                           sizeof(err));
	int rq = gw_http_query_param(r->query, r->query_len, "q", q, sizeof(q));
	int ro = gw_http_query_param(r->query, r->query_len, "order", order, sizeof(order));
	int rc = gw_http_query_param(r->query, r->query_len, "cursor", cursor, sizeof(cursor));
	if (rl >= 0 && (rq < 0 || rc < 0 || ro < 0 || (ro > 0 && strcmp(order, "trouble") &&
	                                                 strcmp(order, "recent"))))
		snprintf(err, sizeof(err), "bad query parameter %s", rq < 0 ? "q" : rc < 0 ? "cursor" :
		         "order: expected recent (the default) or trouble");
	if (rl < 0 || rq < 0 || rc < 0 || ro < 0 || (ro > 0 && strcmp(order, "trouble") &&
	                                              strcmp(order, "recent"))) {
		*out = gw_http_error_json(err);
		return 400;
	}
	struct gw_runs_page pg = {.limit = (size_t)limit, .q = rq > 0 && q[0] ? q : NULL,
	                          .trouble_first = ro > 0 && !strcmp(order, "trouble"),
	                          .cursor = rc > 0 ? cursor : NULL};
	const struct gw_api_opts *o = r->data;
	int st = gw_query_runs_page(r->db_path, &pg, out);
	/* a node that ships says how far behind it is, beside its runs */
	if (st == 200 && o->fleet)
		json_object_set_new(*out, "fleet", fleet_json(o->fleet));
	return st;
}

static int q_run(const struct gw_http_req *r, json_t **out)
{
	return gw_query_runs(r->db_path, r->arg, out);
}

static int q_alerts(const struct gw_http_req *r, json_t **out)
{
	return gw_query_alerts(r->db_path, r->arg, out);
}

/* The resume gate: is this live manifest what the run's last checkpoint
 * saved?  The same comparison the resume_mismatch detector makes. */
/* The manifest's fields the check compares, with the JSON type each must
 * have (null counts as absent): one of another type would not be compared
 * at all, and the gate would answer ok for it. */
static const char *manifest_field_error(const json_t *live, char *buf, size_t len)
{
	static const struct {
		const char *name;
		json_type type;
		const char *what;
	} fields[] = {
		{"optimizer", JSON_STRING, "a string (the optimizer class)"},
		{"param_names_sha256", JSON_STRING, "a string (hexadecimal SHA-256)"},
		{"optimizer_state_keys", JSON_ARRAY, "an array of the state's keys"},
		{"optimizer_state_loaded", JSON_TRUE, "true or false"},
		{"hparams", JSON_OBJECT, "an object of hyperparameters"},
	};
	for (size_t i = 0; i < GW_ARRAY_SIZE(fields); i++) {
		const json_t *v = json_object_get(live, fields[i].name);
		if (!v || json_is_null(v))
			continue;
		bool ok = fields[i].type == JSON_TRUE ? json_is_boolean(v) : json_typeof(v) == fields[i].type;
		if (!ok) {
			snprintf(buf, len, "%s must be %s%s", fields[i].name, fields[i].what,
			         json_is_string(v) && fields[i].type != JSON_STRING
			         ? ", not a string (was it JSON-encoded twice?)" : "");
			return buf;
		}
	}
	return NULL;
}

static int q_resume_check(const struct gw_http_req *r, json_t **out)
{
	json_error_t je;
	json_t *live = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &je);
	char why[256];
	if (!live) {
		snprintf(why, sizeof(why), "the body is not JSON: %s at line %d, column %d", je.text,
		         je.line, je.column);
		*out = gw_http_error_json(why);
		return 400;
	}
	if (!json_is_object(live)) {
		*out = json_pack("{s:s}", "error", "the body must be a JSON object (the resume manifest)");
		json_decref(live);
		return 400;
	}
	if (manifest_field_error(live, why, sizeof(why))) {
		json_decref(live);
		*out = gw_http_error_json(why);
		return 400;
	}
	char err[256];
	json_t *ckpt = NULL;
	int64_t step = -1;
	int rc = gw_store_read_last_event(r->db_path, r->arg, "checkpoint_saved", &ckpt, &step,
	                                  err, sizeof(err));
	if (rc < 0 && rc != -ENOENT) {
		json_decref(live);
		*out = gw_http_error_json(err);
		return 500;
	}
	json_t *diffs = gw_resume_diff(ckpt, live);
	bool ok = json_array_size(diffs) == 0;
	/* the cause and action are looked up while diffs is still ours */
	const char *kind = json_string_value(json_object_get(json_array_get(diffs, 0), "kind"));
	const char *cause = ok ? NULL : gw_resume_cause(kind);
	const char *action = ok ? NULL : gw_resume_action(kind);
	*out = json_pack("{s:s, s:b, s:o, s:o, s:s?, s:s?}", "run", r->arg, "ok", ok,
	                 "checkpoint_step", step >= 0 ? json_integer((json_int_t)step) : json_null(),
	                 "differences", diffs, "cause", cause, "action", action);
	if (*out && !ckpt)
		json_object_set_new(*out, "note", json_string("the run has no checkpoint_saved event to compare with; "
		                                              "only the manifest itself was checked"));
	json_decref(ckpt);
	json_decref(live);
	return *out ? 200 : 500;
}

/* ---- from memory (loop) ------------------------------------------------------------------ */

/* /v1/stats: {transports: {unix: {accepted, events, bytes, rejected: {reason: n}}},
 * alerts: {detector: {severity: n}}, udp_dropped, connections, segments} from
 * the counter table; zero rejections are left out. */
static void stats_sample(void *data, const struct gw_counter_sample *s)
{
	json_t *root = data;
	if (!s->label[0]) {
		json_object_set_new(root, s->key, json_integer((json_int_t)s->n));
		return;
	}
	bool by_transport = strcmp(s->label[0], "transport") == 0;
	json_t *top = json_object_get(root, by_transport ? "transports" : s->key);
	json_t *o = json_object_get(top, s->value[0]);
	if (!o)
		json_object_set_new(top, s->value[0], o = json_object());
	if (!s->label[1]) {
		json_object_set_new(o, s->key, json_integer((json_int_t)s->n));
		return;
	}
	if (by_transport) {
		json_t *sub = json_object_get(o, s->key);
		if (!sub)
			json_object_set_new(o, s->key, sub = json_object());
		o = sub;
		if (!s->n)
			return;
	}
	json_object_set_new(o, s->value[1], json_integer((json_int_t)s->n));
}

/* The ingest counters and the store's, as GET /v1/stats returns them (new
 * reference, NULL when out of memory). */
static json_t *stats_json(const struct gw_api_opts *o)
{
	json_t *root = json_pack("{s:{}, s:{}}", "transports", "alerts");
	if (!root)
		return NULL;
	gw_ingest_counters_foreach(o->ingest, stats_sample, root);
	struct gw_store_stats st;
	gw_store_stats(o->store, &st);
	json_object_set_new(root, "store",
	                    json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}",
	                              "committed_seq", (json_int_t)gw_store_committed(o->store),
	                              "commits", (json_int_t)st.commits, "records", (json_int_t)st.records,
	                              "events", (json_int_t)st.events, "alerts", (json_int_t)st.alerts,
	                              "pending_bytes", (json_int_t)st.pending_bytes));
	if (o->fleet)
		json_object_set_new(root, "fleet", fleet_json(o->fleet));
	return root;
}

static void h_stats(struct gw_http_conn *c, const struct gw_http_req *r)
{
	gw_http_respond_json(c, 200, stats_json(r->data));
}

int gw_api_start(struct gw_http *h, const struct gw_api_opts *o, char *err, size_t errlen)
{
	void *d = (void *)o;   /* the routes' data: read only */
	const struct gw_http_route routes[] = {
		{.method = "GET", .path = "/v1/stats", .handler = h_stats, .data = d},
		{.method = "GET", .path = "/v1/runs", .query = q_runs, .data = d},
		{.method = "GET", .path = "/v1/alerts", .query = q_alerts, .data = d},
		{.method = "POST", .path = "/v1/ingest", .body = &ingest_ops, .data = d, .scope = GW_SCOPE_INGEST},
		{.method = "GET", .path = "/v1/runs/", .prefix = true, .query = q_run, .data = d},
		{.method = "GET", .path = "/v1/runs/", .prefix = true, .suffix = "/alerts", .query = q_alerts, .data = d},
		{.method = "POST", .path = "/v1/runs/", .prefix = true, .suffix = "/resume-check", .query = q_resume_check, .data = d},
	};
	for (size_t i = 0; i < GW_ARRAY_SIZE(routes); i++) {
		int rc = gw_http_route(h, &routes[i]);
		if (rc < 0)
			return gw_errf(err, errlen, rc, "cannot register %s %s", routes[i].method,
			               routes[i].path);
	}
	return 0;
}
