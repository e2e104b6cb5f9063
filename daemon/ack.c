/*
 * ack: the on-call acknowledges an open alert (docs/alerts.md,
 * "Acknowledging"): POST /v1/alerts/{id}/ack with an optional body
 * {"by": "...", "note": "..."}, and DELETE /v1/alerts/{id}/ack to withdraw
 * it.  Both are writes (an ingest token; one limited to a run glob only for
 * the alerts of runs it matches).
 *
 * How: a handler on http.c's deferred path.  The body (at most
 * ACK_BODY_MAX bytes, the route's body_max) is checked on the loop; then,
 * like every read, the request waits until everything queued before it
 * is committed and reads the alert on the thread pool (gw_http_defer);
 * back on the loop, decide() answers 404 (no such alert), 409 (resolved)
 * or, when the alert already is in the asked state, 200 with it as it is
 * (idempotent: nothing is written, nothing is sent).  The row read can be
 * behind the outbox, which has every change decided so far: when another
 * request on the alert decided after our read and is not committed yet,
 * the alert is read again once it is (at most ACK_REREADS times, then 409:
 * nothing done), so requests on one alert act and answer in the order they
 * are decided; an alert whose run was deleted after our read is a 404.
 * Otherwise it queues the alerts-table row (GW_STORE_ALERT_ACK/UNACK) and
 * the outbox's event (gw_outbox_ack) under one store hold, so both commit
 * in one transaction, and answers 200 with the alert as it now is once that commit is done
 * (gw_http_answer_after_commit): what was answered is on disk, and its
 * notification is delivered at least once, across a crash.  A client that
 * goes away meanwhile is the transport's to handle.
 */
#include "ack.h"

#include "auth.h"
#include "http.h"
#include "ingest.h"
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
#define ACK_REREADS 8       /* reads again while other requests change the alert */

/* What the body asked (the request's state on the deferred path). */
struct ack {
	bool ack;                  /* POST (else DELETE) */
	char *by, *note;           /* checked, or NULL */
	int reads;                 /* reads again after a change still to commit */
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
static int parse_body(struct gw_http_conn *c, const struct gw_http_req *r, struct ack *q)
{
	const char *p = r->body;
	size_t n = r->body_len;
	while (n && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++, n--;
	if (!n)
		return 0;
	json_error_t je;
	json_t *j = json_loadb(p, n, 0, &je);
	if (!j) {
		gw_http_respond_error(c, 400, "the body is not JSON (line %d, column %d: %s); "
		                      "expected {\"by\": \"...\", \"note\": \"...\"} or nothing",
		                      je.line, je.column, je.text);
		return -EINVAL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		gw_http_respond_error(c, 400, "the body must be a JSON object "
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
			gw_http_respond_error(c, 400, "unknown field \"%.64s\" in the body: only \"by\" "
			                      "and \"note\" are allowed", key);
		} else if (json_is_null(v) || (json_is_string(v) && !json_string_length(v))) {
			continue;   /* absent, as an empty string */
		} else if (!json_is_string(v)) {
			gw_http_respond_error(c, 400, "field \"%s\" must be a string", key);
		} else if (json_string_length(v) > max) {
			gw_http_respond_error(c, 400, "field \"%s\" is %zu bytes; at most %zu", key,
			                      json_string_length(v), max);
		} else if (strlen(json_string_value(v)) != json_string_length(v) ||
		           (why = bad_text(json_string_value(v), is_note))) {
			gw_http_respond_error(c, 400, "field \"%s\" contains %s", key,
			                      why ? why : "a NUL byte");
		} else {
			char **to = is_by ? &q->by : &q->note;
			free(*to);
			if (!(*to = strdup(json_string_value(v)))) {
				gw_http_respond_error(c, 500, "out of memory");
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

static int read_alert(const struct gw_http_req *r, json_t **out);
static void ack_free(void *state);

static void respond_resolved(struct gw_http_conn *c, const char *id, bool ack)
{
	gw_http_respond_error(c, 409, "alert %s is resolved: there is nothing to %s", id,
	                      ack ? "acknowledge" : "withdraw");
}

/* The alert is read (loop thread): answer or write. */
static void decide(struct gw_http_conn *c, const struct gw_http_req *r, int status,
                   json_t *alert)
{
	const struct gw_ack_opts *d = r->data;
	struct ack *q = r->state;
	const char *id = r->arg;
	if (status != 200) {
		gw_http_respond_json(c, status, alert);
		return;
	}
	const char *run = json_string_value(json_object_get(alert, "run"));
	const char *state = json_string_value(json_object_get(alert, "state"));
	if (!run || !gw_auth_allows_run(r->token, run)) {
		gw_http_respond_error(c, 403, "this token may not acknowledge alerts of run \"%s\" "
		                      "(it may write only runs matching %s)", run ? run : "?",
		                      gw_auth_runs_glob(r->token));
		json_decref(alert);
		return;
	}
	if (!gw_ingest_run_known(d->ingest, run)) {
		/* its run was deleted after our read (DELETE /v1/runs, a prune):
		 * the alert is gone with it */
		gw_http_respond_error(c, 404, "no alert %s: its run \"%s\" was deleted", id, run);
		json_decref(alert);
		return;
	}
	if (!state || strcmp(state, "open")) {
		respond_resolved(c, id, q->ack);
		json_decref(alert);
		return;
	}
	bool acked = json_is_number(json_object_get(alert, "acked_at"));
	int now_acked = gw_outbox_acked(d->outbox, id);
	if (now_acked >= 0 && now_acked != acked) {
		json_decref(alert);
		if (q->reads++ < ACK_REREADS) {
			/* an ack or unack decided after our read is not committed
			 * yet: the row read is behind it; read again once it is
			 * committed, so that requests on one alert act, and answer,
			 * in the order decided */
			gw_http_defer(c, read_alert, decide, q, ack_free);
			return;
		}
		/* behind every time: deciding on a stale row would answer a state
		 * the alert does not have, or lose this request's change */
		gw_http_respond_error(c, 409, "alert %s was acknowledged or withdrawn by other "
		                      "requests each of the %d times this one read it; nothing was "
		                      "done: retry", id, ACK_REREADS + 1);
		return;
	}
	if (acked == q->ack) {   /* already so: idempotent, nothing written or sent */
		gw_http_respond_json(c, 200, alert);
		return;
	}
	double at = gw_wall_now();
	gw_store_hold(d->store);
	uint64_t seq = 0;
	int rc = gw_outbox_ack(d->outbox, id, q->ack, at, q->by, q->note, alert, &seq);
	if (rc == 0) {
		const struct gw_sv none = {.t = GW_SV_NULL};
		const struct gw_sv v[] = {
			gw_sv_text(id), gw_sv_real(at), q->by ? gw_sv_text(q->by) : none,
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
		respond_resolved(c, id, q->ack);
		json_decref(alert);
		return;
	}
	if (rc == -EALREADY) {
		gw_http_respond_json(c, 200, alert);
		return;
	}
	if (rc < 0) {
		gw_http_respond_error(c, 500, "cannot %s alert %s: %s",
		                      q->ack ? "acknowledge" : "withdraw the acknowledgement of", id,
		                      strerror(-rc));
		json_decref(alert);
		return;
	}
	if (q->ack)
		gw_log_info("alert %s acknowledged%s%s", id, q->by ? " by " : "", q->by ? q->by : "");
	else
		gw_log_info("alert %s: acknowledgement withdrawn%s%s", id, q->by ? " by " : "",
		            q->by ? q->by : "");
	/* the alert as it is after this request: the stored one with the event */
	gw_outbox_ack_event(alert, q->ack, json_integer_value(json_object_get(alert, "version")) + 1,
	                    at, q->by, q->note);
	gw_http_answer_after_commit(c, seq, 200, alert, q->ack ? "not acknowledged yet"
	                                                       : "not withdrawn yet");
}

static int read_alert(const struct gw_http_req *r, json_t **out)
{
	return gw_query_alert(r->db_path, r->arg, out);
}

static void ack_free(void *state)
{
	struct ack *q = state;
	free(q->by);
	free(q->note);
	free(q);
}

static void h_ack(struct gw_http_conn *c, const struct gw_http_req *r)
{
	if (r->body_over) {
		gw_http_respond_error(c, 413, "the body is over %d bytes; an acknowledgement takes "
		                      "{\"by\": ... (at most %d bytes), \"note\": ... (at most %d bytes)}",
		                      ACK_BODY_MAX, ACK_BY_MAX, ACK_NOTE_MAX);
		return;
	}
	struct ack *q = calloc(1, sizeof(*q));
	if (!q) {
		gw_http_respond_error(c, 500, "out of memory");
		return;
	}
	q->ack = strcmp(r->method, "POST") == 0;
	if (parse_body(c, r, q) < 0) {
		ack_free(q);
		return;
	}
	gw_http_defer(c, read_alert, decide, q, ack_free);
}

int gw_ack_start(struct gw_http *h, const struct gw_ack_opts *o, char *err, size_t errlen)
{
	void *d = (void *)o;   /* the routes' data: read only */
	const struct gw_http_route routes[] = {
		{.method = "POST", .path = "/v1/alerts/", .prefix = true, .suffix = "/ack",
		 .handler = h_ack, .body_max = ACK_BODY_MAX, .data = d, .scope = GW_SCOPE_INGEST,
		 .arg_name = "alert id"},
		{.method = "DELETE", .path = "/v1/alerts/", .prefix = true, .suffix = "/ack",
		 .handler = h_ack, .body_max = ACK_BODY_MAX, .data = d, .scope = GW_SCOPE_INGEST,
		 .arg_name = "alert id"},
	};
	for (size_t i = 0; i < GW_ARRAY_SIZE(routes); i++) {
		int rc = gw_http_route(h, &routes[i]);
		if (rc < 0)
			return gw_errf(err, errlen, rc, "cannot register %s /v1/alerts/{id}/ack",
			               routes[i].method);
	}
	return 0;
}
