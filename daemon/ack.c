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
 * is committed and reads the alert on the thread pool (gw_http_defer):
 * whether it exists (404), its run (the token may write it? 403; deleted
 * since the read: 404) and what the answer shows.  Back on the loop the
 * outbox decides (gw_outbox_ack, alerts/): its table has every change to
 * the alert decided so far, committed or not, so another request that
 * decided after our read is not missed and nothing is read again; 409
 * when it has the alert resolved, 200 with the alert as it now is when it
 * already is in the asked state (idempotent: nothing written, nothing
 * sent), else the acknowledgement's row and its deliveries are queued in
 * one transaction.  Either 200 is answered once what it reports is
 * committed (gw_http_answer_after_commit): what was answered is on disk,
 * and the notification is delivered at least once, across a crash.  A
 * client that goes away meanwhile is the transport's to handle.
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
#include <stdlib.h>
#include <string.h>

#define ACK_BODY_MAX 8192
#define ACK_BY_MAX 128      /* bytes of "by" */
#define ACK_NOTE_MAX 1024   /* bytes of "note" */

/* What the body asked (the request's state on the deferred path). */
struct ack {
	bool ack;                  /* POST (else DELETE) */
	char *by, *note;           /* checked, or NULL */
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

/* The alert is read (loop thread): the outbox decides. */
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
	json_t *answer = NULL;
	uint64_t seq = 0;
	int rc = gw_outbox_ack(d->outbox, id, q->ack, gw_wall_now(), q->by, q->note, alert, &answer,
	                       &seq);
	json_decref(alert);
	if (rc == -ENOENT) {
		gw_http_respond_error(c, 409, "alert %s is resolved: there is nothing to %s", id,
		                      q->ack ? "acknowledge" : "withdraw");
		return;
	}
	if (rc == -ESHUTDOWN) {
		gw_http_respond_error(c, 503, "the daemon is stopping; retry once it is back");
		return;
	}
	if (rc < 0 && rc != -EALREADY) {
		gw_http_respond_error(c, 500, "cannot %s alert %s: %s",
		                      q->ack ? "acknowledge" : "withdraw the acknowledgement of", id,
		                      strerror(-rc));
		return;
	}
	if (rc == 0 && q->ack)
		gw_log_info("alert %s acknowledged%s%s", id, q->by ? " by " : "", q->by ? q->by : "");
	else if (rc == 0)
		gw_log_info("alert %s: acknowledgement withdrawn%s%s", id, q->by ? " by " : "",
		            q->by ? q->by : "");
	/* done or already so: the alert as it is, once that is on disk */
	gw_http_answer_after_commit(c, seq, 200, answer, q->ack ? "not acknowledged yet"
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
