/*
 * outbox_start: the outbox's start from the database, what it reports, and
 * its stop (see outbox.h).  At start the alerts that can still change
 * (their versions, states and last snapshots) and the deliveries still
 * pending are read (outbox_db.c: one blocking read each, before the loop
 * runs), the open alerts are repeated from now on, the pending deliveries
 * are sent first, and the alerts of wall-clock detectors that the daemon
 * before left open are resolved (outbox_events.c).  Stop aborts what is in
 * flight (it stays pending in the database) and closes every handle.
 */
#include "outbox_impl.h"
#include "outbox_db.h"

#include "log.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct load_ctx {
	struct gw_outbox *ob;
	struct event *last;        /* rows of one event come one after another */
	uint64_t now;
	size_t loaded;
	int err;
};

static void load_version(void *data, const char *alert_id, const char *run, int64_t version,
                         bool open, bool acked, const char *alert_json)
{
	struct load_ctx *L = data;
	struct known *k = gw__known_get(L->ob, alert_id, run);
	if (!k) {
		L->err = -ENOMEM;
		return;
	}
	k->version = version;
	json_decref(k->firing);
	/* (without sinks no snapshot is ever sent: not kept) */
	k->firing = open && alert_json && L->ob->n ? json_loads(alert_json, 0, NULL) : NULL;
	k->open = open;
	k->acked = open && acked;
}

static struct sink *sink_named(struct gw_outbox *ob, const char *name)
{
	for (size_t i = 0; i < ob->n; i++)
		if (strcmp(ob->sinks[i].cfg->name, name) == 0)
			return &ob->sinks[i];
	return NULL;
}

static void load_pending(void *data, const char *sink, const char *alert_id, int64_t version,
                         const char *kind, const char *run, double created,
                         const char *alert_json, int64_t attempts)
{
	struct load_ctx *L = data;
	struct sink *sk = sink_named(L->ob, sink);
	(void)run;
	if (!sk) {
		L->ob->orphans++;
		return;
	}
	if (!L->last || strcmp(L->last->alert_id, alert_id) || L->last->version != version) {
		gw__event_unref(L->last);
		json_t *alert = json_loads(alert_json, 0, NULL);
		L->last = alert ? gw__event_new(alert_id, version, kind, alert, created) : NULL;
		if (!L->last) {
			gw_log_err("alerts: cannot load the pending delivery %s-v%" PRId64, alert_id,
			           version);
			return;
		}
	}
	struct delivery *d = calloc(1, sizeof(*d));
	if (!d) {
		L->err = -ENOMEM;
		return;
	}
	d->ev = L->last;
	L->last->refs++;
	d->attempts = (unsigned)attempts;
	d->due_ms = L->now;
	gw__q_append(sk, d);
	if (strcmp(kind, "resolve") == 0) {
		gw__active_drop(sk, alert_id);
	} else {
		json_decref(gw__active_set(sk, alert_id, version, L->last->alert, UINT64_MAX));
		gw__active_ack(sk, alert_id, gw__acked_in(L->last->alert));
	}
	L->loaded++;
}

/* Open alerts with no pending delivery are repeated from now on. */
static void seed_active(struct gw_outbox *ob, uint64_t now)
{
	for (size_t i = 0; i < ob->known_n; i++) {
		struct known *k = ob->known[i];
		if (!k->firing)
			continue;
		const char *run = json_string_value(json_object_get(k->firing, "run"));
		const char *det = json_string_value(json_object_get(k->firing, "detector"));
		for (size_t s = 0; run && det && s < ob->n; s++) {
			struct sink *sk = &ob->sinks[s];
			if (!sk->cfg->repeat_ms || gw__active_find(sk, k->id, NULL) ||
			    !gw_sink_matches(sk->cfg, run, det, gw__severity_of(k->firing)))
				continue;
			/* Alertmanager: refresh at once (it may have expired them
			 * while we were down); chat sinks: at the next interval */
			uint64_t at = sk->cfg->type == &gw_sink_alertmanager ? now : now + sk->cfg->repeat_ms;
			json_decref(gw__active_set(sk, k->id, k->version, k->firing, at));
			gw__active_ack(sk, k->id, k->acked);
		}
	}
}

int gw_outbox_start(const struct gw_outbox_opts *o, struct gw_outbox **out, char *err,
                   size_t errlen)
{
	*out = NULL;
	struct gw_outbox *ob = calloc(1, sizeof(*ob));
	if (!ob) {
		gw_sink_free_all(o->sinks, o->n_sinks);
		return -ENOMEM;
	}
	ob->loop = o->loop;
	ob->store = o->store;
	ob->cfgs = o->sinks;
	ob->n = o->n_sinks;
	ob->api_base = o->api_base ? strdup(o->api_base) : NULL;
	ob->rng = (uint64_t)gw_mono_ms() * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid();
	if (!ob->rng)
		ob->rng = 1;
	ob->sinks = calloc(ob->n ? ob->n : 1, sizeof(*ob->sinks));
	if (!ob->sinks) {
		gw_outbox_free(ob);
		return -ENOMEM;
	}
	uint64_t now = gw_mono_ms();
	for (size_t i = 0; i < ob->n; i++) {
		struct sink *sk = &ob->sinks[i];
		sk->ob = ob;
		sk->cfg = &ob->cfgs[i];
		sk->q.next = sk->q.prev = &sk->q;
		sk->tokens = sk->cfg->rate_count;
		sk->tokens_ms = now;
	}
	if (ob->n && curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(err, errlen, "alerts: libcurl failed to initialise");
		ob->n = 0;   /* (nothing to clean up) */
		gw_outbox_free(ob);
		return -EIO;
	}
	ob->curl_up = ob->n > 0;
	/* what the database says first, then the handles */
	struct load_ctx L = {.ob = ob, .now = now};
	int rc = gw_outbox_db_read_versions(o->db_path, load_version, &L, err, errlen);
	if (rc == 0 && L.err == 0)
		rc = gw_outbox_db_read_pending(o->db_path, load_pending, &L, err, errlen);
	gw__event_unref(L.last);
	if (rc == 0 && L.err < 0) {
		rc = L.err;
		snprintf(err, errlen, "alerts: out of memory loading the outbox");
	}
	if (rc < 0) {
		gw_outbox_free(ob);
		return rc;
	}
	seed_active(ob, now);
	if (!ob->n) {   /* the known alerts only: nothing to send, no handle */
		*out = ob;
		gw__outbox_resolve_left_open(ob, o->db_path);
		return 0;
	}
	if ((rc = gw_alert_http_start(&ob->http, ob->loop)) < 0) {
		snprintf(err, errlen, "alerts: cannot set up the HTTP client: %s", strerror(-rc));
		gw_alert_http_stop(&ob->http, NULL);
		/* the handles close as the loop runs; gw_outbox_free after it */
		ob->closing = true;
		*out = ob;
		return rc;
	}
	ob->http_up = true;
	ob->http.data = ob;
	for (size_t i = 0; i < ob->n; i++) {
		struct sink *sk = &ob->sinks[i];
		uv_timer_init(ob->loop, &sk->timer);
		sk->timer.data = sk;
		gw_log_info("alerts: sink %s (%s) -> %s%s%s", sk->cfg->name, sk->cfg->type->name,
		            sk->cfg->url_log, sk->cfg->secret ? ", signed" : "",
		            sk->cfg->tls_verify ? "" : ", TLS NOT VERIFIED");
		if (sk->cfg->type == &gw_sink_webhook && !sk->cfg->secret)
			gw_log_warn("alerts: sink %s has no secret: its requests are not signed",
			            sk->cfg->name);
		if (sk->queued)
			gw_log_info("alerts: sink %s: %zu undelivered alert event(s) from before the "
			            "restart", sk->cfg->name, sk->queued);
		gw__outbox_pump(sk);
	}
	if (ob->orphans)
		gw_log_warn("alerts: %zu pending deliveries belong to sinks no longer configured; "
		            "they stay in the database", ob->orphans);
	*out = ob;
	gw__outbox_resolve_left_open(ob, o->db_path);   /* the timers are up: it may send */
	return 0;
}

/* ---- stats, shutdown ------------------------------------------------------------ */

void gw_outbox_open_alerts(const struct gw_outbox *ob, size_t *open, size_t *acked)
{
	*open = *acked = 0;
	for (size_t i = 0; ob && i < ob->known_n; i++) {
		*open += ob->known[i]->open;
		*acked += ob->known[i]->open && ob->known[i]->acked;
	}
}

size_t gw_outbox_sinks(const struct gw_outbox *ob)
{
	return ob ? ob->n : 0;
}

uint64_t gw_outbox_depth(const struct gw_outbox *ob)
{
	uint64_t n = 0;
	for (size_t i = 0; ob && i < ob->n; i++)
		n += ob->sinks[i].queued + ob->sinks[i].inflight;
	return n;
}

bool gw_outbox_sink_counts(const struct gw_outbox *ob, size_t i, struct gw_outbox_counts *out)
{
	if (!ob || i >= ob->n)
		return false;
	const struct sink *sk = &ob->sinks[i];
	*out = (struct gw_outbox_counts){
		.name = sk->cfg->name, .type = sk->cfg->type->name,
		.pending = sk->queued + sk->inflight,
		.delivered = sk->n_delivered, .failed = sk->n_failed, .retries = sk->n_retries,
	};
	return true;
}

bool gw_outbox_sink_failing(const struct gw_outbox *ob, size_t i, size_t *n, double *oldest,
                            const char **last_error)
{
	*n = 0;
	*oldest = NAN;
	*last_error = NULL;
	if (!ob || i >= ob->n)
		return false;
	const struct sink *sk = &ob->sinks[i];
	for (const struct delivery *d = sk->q.next; d != &sk->q; d = d->next) {
		/* attempts counts the one in flight: failed ones only */
		if (d->repeat_no || d->attempts <= (d->inflight ? 1u : 0u))
			continue;
		(*n)++;
		if (isnan(*oldest) || d->ev->created < *oldest)
			*oldest = d->ev->created;
	}
	*last_error = sk->last_error[0] ? sk->last_error : NULL;
	return true;
}

json_t *gw_outbox_stats(const struct gw_outbox *ob)
{
	json_t *arr = json_array();
	for (size_t i = 0; ob && i < ob->n; i++) {
		const struct sink *sk = &ob->sinks[i];
		size_t active = 0;
		for (const struct active *a = sk->active; a; a = a->next)
			active++;
		json_array_append_new(arr, json_pack(
			"{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:s}",
			"name", sk->cfg->name, "type", sk->cfg->type->name, "url", sk->cfg->url_log,
			"queued", (json_int_t)sk->queued, "in_flight", (json_int_t)sk->inflight,
			"open_alerts", (json_int_t)active,
			"delivered", (json_int_t)sk->n_delivered, "failed", (json_int_t)sk->n_failed,
			"retries", (json_int_t)sk->n_retries, "superseded", (json_int_t)sk->n_superseded,
			"repeats", (json_int_t)sk->n_repeats, "last_status", sk->last_status,
			"last_error", sk->last_error));
	}
	return arr;
}

static void on_closed_one(struct gw_outbox *ob)
{
	GW_REQUIRE(ob->closing_handles > 0);
	ob->closing_handles--;
}

static void on_timer_closed(uv_handle_t *h)
{
	struct sink *sk = h->data;
	on_closed_one(sk->ob);
}

static void on_http_closed(struct gw_alert_http *h)
{
	on_closed_one(h->data);
}

void gw_outbox_stop(struct gw_outbox *ob)
{
	if (!ob || (ob->closing && !ob->http_up))
		return;
	ob->closing = true;
	if (!ob->http_up)
		return;
	ob->http_up = false;
	size_t pending = 0;
	for (size_t i = 0; i < ob->n; i++) {
		pending += ob->sinks[i].queued;
		gw__outbox_log_held(&ob->sinks[i], gw_mono_ms());
		ob->closing_handles++;
		uv_close((uv_handle_t *)&ob->sinks[i].timer, on_timer_closed);
	}
	ob->closing_handles++;
	gw_alert_http_stop(&ob->http, on_http_closed);
	if (pending)
		gw_log_info("alerts: %zu alert event(s) not delivered yet; they are sent after the "
		            "next start", pending);
}

void gw_outbox_free(struct gw_outbox *ob)
{
	if (!ob)
		return;
	GW_REQUIRE(ob->closing_handles == 0 && !ob->http_up);
	for (size_t i = 0; ob->sinks && i < ob->n; i++) {
		struct sink *sk = &ob->sinks[i];
		while (sk->q.next != &sk->q)
			gw__q_remove_free(sk->q.next);
		while (sk->active)
			gw__active_drop(sk, sk->active->alert_id);
	}
	for (size_t i = 0; i < ob->known_n; i++)
		gw__known_free(ob->known[i]);
	free(ob->known);
	gw_strtab_free(&ob->known_by_id);
	free(ob->sinks);
	gw_sink_free_all(ob->cfgs, ob->n);
	free(ob->api_base);
	if (ob->curl_up)
		curl_global_cleanup();
	free(ob);
}
