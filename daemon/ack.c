/*
 * ack: the on-call acknowledges an open alert (docs/alerts.md,
 * "Acknowledging"): POST /v1/alerts/{id}/ack with an optional body
 * {"by": "...", "note": "..."}, and DELETE /v1/alerts/{id}/ack to withdraw
 * it.  Both are writes (an ingest token; one limited to a run glob only for
 * the alerts of runs it matches).
 *
 * How: the body is read (at most ACK_BODY_MAX bytes) and checked; then,
 * like every read, the request waits until everything received before it
 * is committed and reads the alert on the thread pool; back on the loop it
 * answers 404 (no such alert), 409 (resolved) or, when the alert already is
 * in the asked state, 200 with it as it is (idempotent: nothing is written,
 * nothing is sent).  Otherwise it queues the alerts-table row
 * (GW_STORE_ALERT_ACK/UNACK) and the outbox's event (gw_outbox_ack) under
 * one store hold, so both commit in one transaction, and answers 200 with
 * the alert as it now is once that commit is done: what was answered is on
 * disk, and its notification is delivered at least once, across a crash.
 */
#include "daemon.h"
#include "http.h"

#include "buf.h"
#include "log.h"
#include "outbox.h"
#include "query.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ACK_BODY_MAX 8192
#define ACK_BY_MAX 128      /* bytes of "by" */
#define ACK_NOTE_MAX 1024   /* bytes of "note" */

struct read;

struct req {
	struct gw_http_conn *c;
	struct gw_daemon *d;
	const struct gw_token *token;
	bool ack;                  /* POST (else DELETE) */
	char id[257];
	struct gw_buf body;
	bool too_large;
	char *by, *note;           /* checked, or NULL */
	struct gw_commit_waiter waiter;
	bool waiting;
	struct read *rd;           /* the read on the thread pool, while it runs */
	json_t *answer;            /* what to answer after the commit */
};

/* The alert read on the thread pool; outlives its request if that goes. */
struct read {
	uv_work_t work;
	struct req *q;             /* NULL once the request went away */
	const char *db_path;
	char id[257];
	int status;
	json_t *alert;             /* the alert, or {"error"} */
};

/* A control character (other than newline and tab in a note) or a string
 * that is not there: which, for the error. */
static const char *bad_text(const char *s, bool multiline)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if ((*p < 0x20 || *p == 0x7f) && !(multiline && (*p == '\n' || *p == '\t')))
			return "a control character";
	return NULL;
}

/* Check the body: empty, or an object with nothing but "by" and "note"
 * (strings of bounded length, no control characters; jansson refuses text
 * that is not UTF-8).  0, or a negative errno after answering 400. */
static int parse_body(struct req *q)
{
	const char *p = q->body.p ? q->body.p : "";
	size_t n = q->body.len;
	while (n && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++, n--;
	if (!n)
		return 0;
	json_error_t je;
	json_t *j = json_loadb(p, n, 0, &je);
	if (!j) {
		gw_http_respond_error(q->c, 400, "the body is not JSON (line %d, column %d: %s); "
		                      "expected {\"by\": \"...\", \"note\": \"...\"} or nothing",
		                      je.line, je.column, je.text);
		return -EINVAL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		gw_http_respond_error(q->c, 400, "the body must be a JSON object "
		                      "{\"by\": \"...\", \"note\": \"...\"} (both optional)");
		return -EINVAL;
	}
	const char *key;
	json_t *v;
	json_object_foreach(j, key, v) {
		bool is_by = strcmp(key, "by") == 0, is_note = strcmp(key, "note") == 0;
		size_t max = is_by ? ACK_BY_MAX : ACK_NOTE_MAX;
		const char *why = NULL;
		if (!is_by && !is_note) {
			gw_http_respond_error(q->c, 400, "unknown field \"%.64s\" in the body: only \"by\" "
			                      "and \"note\" are allowed", key);
		} else if (json_is_null(v) || (json_is_string(v) && !json_string_length(v))) {
			continue;   /* absent, as an empty string */
		} else if (!json_is_string(v)) {
			gw_http_respond_error(q->c, 400, "field \"%s\" must be a string", key);
		} else if (json_string_length(v) > max) {
			gw_http_respond_error(q->c, 400, "field \"%s\" is %zu bytes; at most %zu", key,
			                      json_string_length(v), max);
		} else if (strlen(json_string_value(v)) != json_string_length(v) ||
		           (why = bad_text(json_string_value(v), is_note))) {
			gw_http_respond_error(q->c, 400, "field \"%s\" contains %s", key,
			                      why ? why : "a NUL byte");
		} else {
			char **to = is_by ? &q->by : &q->note;
			free(*to);
			if (!(*to = strdup(json_string_value(v)))) {
				gw_http_respond_error(q->c, 500, "out of memory");
			} else {
				continue;
			}
		}
		json_decref(j);
		return -EINVAL;
	}
	json_decref(j);
	return 0;
}

static void answered(struct gw_commit_waiter *w)
{
	struct req *q = gw_container_of(w, struct req, waiter);
	q->waiting = false;
	if (w->error) {
		gw_http_respond_error(q->c, 503, "not %s yet: the database cannot be written (%s)",
		                      q->ack ? "acknowledged" : "withdrawn", w->why);
		return;
	}
	gw_http_respond_json(q->c, 200, q->answer);
	q->answer = NULL;
}

/* The alert as it is after this request: the stored one with the event. */
static void apply(json_t *a, bool ack, double at, const char *by, const char *note)
{
	json_int_t v = json_integer_value(json_object_get(a, "version"));
	json_object_set_new(a, "version", json_integer(v + 1));
	json_object_set_new(a, "kind", json_string(ack ? "ack" : "unack"));
	json_object_set_new(a, "raised_at", gw_json_num(at));
	json_object_del(a, "acked_at");
	json_object_del(a, "acked_by");
	json_object_del(a, "ack_note");
	if (ack) {
		json_object_set_new(a, "acked_at", gw_json_num(at));
		if (by && *by)
			json_object_set_new(a, "acked_by", json_string(by));
		if (note && *note)
			json_object_set_new(a, "ack_note", json_string(note));
	}
}

/* The alert is read (loop thread): answer or write. */
static void decide(struct req *q, int status, json_t *alert)
{
	struct gw_daemon *d = q->d;
	if (status != 200) {
		gw_http_respond_json(q->c, status, alert);
		return;
	}
	const char *run = json_string_value(json_object_get(alert, "run"));
	const char *state = json_string_value(json_object_get(alert, "state"));
	if (!run || !gw_auth_allows_run(q->token, run)) {
		gw_http_respond_error(q->c, 403, "this token may not acknowledge alerts of run \"%s\" "
		                      "(it may write only runs matching %s)", run ? run : "?",
		                      gw_auth_runs_glob(q->token));
		json_decref(alert);
		return;
	}
	if (!state || strcmp(state, "open")) {
		gw_http_respond_error(q->c, 409, "alert %s is resolved: there is nothing to %s", q->id,
		                      q->ack ? "acknowledge" : "withdraw");
		json_decref(alert);
		return;
	}
	bool acked = json_is_number(json_object_get(alert, "acked_at"));
	if (acked == q->ack) {   /* already so: idempotent, nothing written or sent */
		gw_http_respond_json(q->c, 200, alert);
		return;
	}
	double at = gw_wall_now();
	gw_store_hold(d->store);
	uint64_t seq = 0;
	int rc = gw_outbox_ack(d->ingest.outbox, q->id, q->ack, at, q->by, q->note, alert, &seq);
	if (rc == 0) {
		const struct gw_sv none = {.t = GW_SV_NULL};
		const struct gw_sv v[] = {
			gw_sv_text(q->id), gw_sv_real(at), q->by ? gw_sv_text(q->by) : none,
			q->note ? gw_sv_text(q->note) : none,
		};
		uint64_t s = gw_store_put(d->store, NULL, q->ack ? GW_STORE_ALERT_ACK : GW_STORE_ALERT_UNACK,
		                          v, q->ack ? 4 : 2);
		seq = s ? GW_MAX(seq, s) : 0;
		if (!s)
			rc = -ENOMEM;
	}
	gw_store_release(d->store);
	if (rc == -ENOENT) {   /* it resolved while we read it */
		gw_http_respond_error(q->c, 409, "alert %s is resolved: there is nothing to %s", q->id,
		                      q->ack ? "acknowledge" : "withdraw");
		json_decref(alert);
		return;
	}
	if (rc == -EALREADY) {
		gw_http_respond_json(q->c, 200, alert);
		return;
	}
	if (rc < 0) {
		gw_http_respond_error(q->c, 500, "cannot %s alert %s: %s",
		                      q->ack ? "acknowledge" : "withdraw the acknowledgement of", q->id,
		                      strerror(-rc));
		json_decref(alert);
		return;
	}
	if (q->ack)
		gw_log_info("alert %s acknowledged%s%s", q->id, q->by ? " by " : "", q->by ? q->by : "");
	else
		gw_log_info("alert %s: acknowledgement withdrawn", q->id);
	apply(alert, q->ack, at, q->by, q->note);
	q->answer = alert;
	q->waiter.seq = seq;
	q->waiter.fn = answered;
	q->waiting = true;
	gw_store_flush(d->store);
	gw_ingest_wait_commit(&d->ingest, &q->waiter);
}

static void work_read(uv_work_t *w)
{
	struct read *rd = gw_container_of(w, struct read, work);
	rd->status = gw_query_alert(rd->db_path, rd->id, &rd->alert);
}

static void work_done(uv_work_t *w, int status)
{
	struct read *rd = gw_container_of(w, struct read, work);
	struct req *q = rd->q;
	if (q) {
		q->rd = NULL;
		if (status < 0) {
			gw_http_respond_error(q->c, 503, "the daemon is stopping");
			json_decref(rd->alert);
		} else {
			decide(q, rd->status, rd->alert);
		}
	} else {
		json_decref(rd->alert);
	}
	free(rd);
}

/* Everything received before the request is committed: read the alert. */
static void on_barrier(struct gw_commit_waiter *w)
{
	struct req *q = gw_container_of(w, struct req, waiter);
	q->waiting = false;
	struct read *rd = calloc(1, sizeof(*rd));
	if (!rd) {
		gw_http_respond_error(q->c, 500, "out of memory");
		return;
	}
	rd->q = q;
	rd->db_path = q->d->cfg->db_path;
	memcpy(rd->id, q->id, sizeof(rd->id));
	if (uv_queue_work(q->d->loop, &rd->work, work_read, work_done) < 0) {
		free(rd);
		gw_http_respond_error(q->c, 500, "cannot read the alert");
		return;
	}
	q->rd = rd;
}

static int req_begin(struct gw_http_conn *c, const struct gw_http_req *r)
{
	struct req *q = calloc(1, sizeof(*q));
	if (!q) {
		gw_http_respond_error(c, 500, "out of memory");
		return -ENOMEM;
	}
	q->c = c;
	q->d = r->data;
	q->token = r->token;
	q->ack = strcmp(r->method, "POST") == 0;
	gw_strlcpy(q->id, r->arg, sizeof(q->id));
	gw_http_conn_set_state(c, q);
	return 0;
}

static int req_data(struct gw_http_conn *c, const char *p, size_t n)
{
	struct req *q = gw_http_conn_state(c);
	if (q->too_large || q->body.len + n > ACK_BODY_MAX) {
		q->too_large = true;
		return 0;
	}
	gw_buf_add(&q->body, p, n);
	return 0;
}

static void req_end(struct gw_http_conn *c)
{
	struct req *q = gw_http_conn_state(c);
	if (q->too_large) {
		gw_http_respond_error(c, 413, "the body is over %d bytes; an acknowledgement takes "
		                      "{\"by\": ... (at most %d bytes), \"note\": ... (at most %d bytes)}",
		                      ACK_BODY_MAX, ACK_BY_MAX, ACK_NOTE_MAX);
		return;
	}
	if (q->body.err) {
		gw_http_respond_error(c, 500, "out of memory");
		return;
	}
	if (parse_body(q) < 0)
		return;
	q->waiter.fn = on_barrier;
	q->waiting = true;
	gw_ingest_barrier(&q->d->ingest, &q->waiter);
}

static void req_free(struct gw_http_conn *c, bool complete)
{
	struct req *q = gw_http_conn_state(c);
	(void)complete;
	if (!q)
		return;
	if (q->waiting)
		gw_ingest_cancel_wait(&q->d->ingest, &q->waiter);
	if (q->rd)
		q->rd->q = NULL;   /* it finishes without an answer */
	gw_buf_free(&q->body);
	free(q->by);
	free(q->note);
	json_decref(q->answer);
	free(q);
}

static const struct gw_http_body_ops req_ops = {
	.begin = req_begin,
	.data = req_data,
	.end = req_end,
	.free = req_free,
};

int gw_ack_start(struct gw_daemon *d, char *err, size_t errlen)
{
	const struct gw_http_route routes[] = {
		{.method = "POST", .path = "/v1/alerts/", .prefix = true, .suffix = "/ack",
		 .body = &req_ops, .data = d, .scope = GW_SCOPE_INGEST, .arg_name = "alert id"},
		{.method = "DELETE", .path = "/v1/alerts/", .prefix = true, .suffix = "/ack",
		 .body = &req_ops, .data = d, .scope = GW_SCOPE_INGEST, .arg_name = "alert id"},
	};
	for (size_t i = 0; i < GW_ARRAY_SIZE(routes); i++) {
		int rc = gw_http_route(d->http, &routes[i]);
		if (rc < 0)
			return gw_errf(err, errlen, rc, "cannot register %s /v1/alerts/{id}/ack",
			               routes[i].method);
	}
	return 0;
}
