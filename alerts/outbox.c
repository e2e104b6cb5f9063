/*
 * The outbox (see outbox.h for the life of an event).
 *
 * Data: an `event` is one alert event with its JSON snapshot, shared by
 * the sinks it goes to; a `delivery` is one event at one sink and sits in
 * that sink's queue in event order.  A sink sends a delivery only when it
 * is the first of its run in the queue (per-run order), it is committed,
 * its due time has come (group wait, retry back-off), the sink is not
 * paused by a Retry-After, fewer than max_in_flight requests are out and
 * the token bucket (rate limit) has a token.  One uv_timer_t per sink wakes
 * it at the next due time; commits and finished requests wake it too.
 *
 * Grouping: a new event of an alert whose previous event at this sink is
 * still in its group wait (never attempted) replaces it, keeping the
 * earlier due time; the replaced one is recorded as "superseded".  So a
 * burst of updates to one incident is one message.
 *
 * Repeats: an alert that is open at a sink (its open/update delivered, no
 * resolve yet) is sent again every repeat_interval as event "repeat" (for
 * Alertmanager this is the resend that keeps it firing).  Repeats are not
 * stored; after a restart they start again from the alerts still open in
 * the database.  An acknowledged alert (gw_outbox_ack) is not repeated to
 * chat and webhook sinks; Alertmanager keeps getting its resends (with the
 * acknowledgement in the snapshot) so that it does not expire it.  An
 * update (escalation) clears the acknowledgement, and repeats start again.
 *
 * Retries: network errors, 408, 425, 429 and 5xx are retried with
 * exponential back-off and equal jitter (half the delay fixed, half
 * random) from retry_initial up to retry_max, until give_up_after since the
 * event; a Retry-After on 429/503 sets the delay and, for 429, pauses the
 * whole sink that long.  Other statuses are final ("failed", logged once).
 *
 * Logging an outage: a receiver that is down fails every attempt of every
 * pending event, so a sink logs at most LOG_BUDGET failed attempts (and
 * deliveries after retries) a minute; the rest are counted and said in one
 * line when the minute is over and the sink logs again, when it delivers
 * again, or at stop.
 *
 * (Over 1,000 lines: queueing, retries, grouping, repeats, rate limits and
 * the known-alert table are one state machine per sink over shared structs;
 * the SQL is in outbox_db.c, the payloads in sink_*.c.  The next split would
 * put the known-alert table and the per-sink pump apart behind an internal
 * header.)
 */
#include "outbox.h"
#include "outbox_db.h"

#include "buf.h"
#include "curl_uv.h"
#include "log.h"
#include "strtab.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RETRY_AFTER_MAX_S 3600

struct event {
	unsigned refs;
	char alert_id[24];
	int64_t version;
	char kind[8];              /* "open", "update", "resolve" */
	char *run;
	char *detector;
	json_t *alert;             /* snapshot, docs/alerts.md "alert object" */
	double created;            /* wall clock */
};

struct sink;

struct delivery {
	struct event *ev;
	struct sink *sk;
	struct delivery *next, *prev;  /* the sink's queue */
	json_t *previous;          /* alertmanager: label set to end with this one */
	uint64_t wait_seq;         /* send only once the store committed this */
	uint64_t due_ms;           /* monotonic; not before */
	unsigned attempts;
	unsigned repeat_no;        /* > 0: a repeat, not stored */
	bool inflight;
	struct gw_alert_req req;
};

/* An alert open at a sink: repeated every repeat_ms. */
struct active {
	char alert_id[24];
	json_t *alert;             /* last firing snapshot */
	int64_t version;
	uint64_t next_ms;          /* next repeat; UINT64_MAX until delivered */
	unsigned repeats;
	bool acked;                /* acknowledged: no repeats (but Alertmanager's) */
	struct active *next;
};

struct sink {
	struct gw_outbox *ob;
	struct gw_sink_cfg *cfg;
	uv_timer_t timer;
	struct delivery q;         /* list head */
	size_t queued, inflight;
	uint64_t paused_until_ms;
	double tokens;
	uint64_t tokens_ms;
	struct active *active;
	uint64_t n_delivered, n_failed, n_retries, n_superseded, n_repeats;
	int last_status;
	char last_error[128];
	/* the log's budget (see the top): the minute's start, lines used,
	 * what was held back */
	uint64_t log_win_ms;
	unsigned log_used;
	uint64_t held_fail, held_ok;
};

/* Version and last firing snapshot of every alert that can still change.
 * Each is allocated on its own, so its id stays put while known_by_id
 * borrows it as the key. */
struct known {
	char id[24];
	char *run;                 /* the alert's run (gw_outbox_forget_run) */
	int64_t version;
	json_t *firing;            /* NULL once resolved; the ack/unack snapshot after one */
	bool open, acked;
};

struct gw_outbox {
	uv_loop_t *loop;
	struct gw_store *store;
	char *api_base;
	struct gw_sink_cfg *cfgs;
	size_t n;
	struct sink *sinks;
	struct gw_alert_http http;
	bool http_up;
	uint64_t committed;
	uint64_t want_seq;         /* last alert row that waits for a commit */
	uint64_t flush_seq;        /* what the outstanding flush request covers */
	struct known **known;      /* in the order first met */
	size_t known_cap, known_n;
	struct gw_strtab known_by_id;  /* id -> index into known */
	uint64_t rng;
	unsigned closing_handles;
	bool closing;
	size_t orphans;            /* pending rows of sinks no longer configured */
	bool curl_up;              /* curl_global_init done (there are sinks) */
};

/* ---- small helpers ------------------------------------------------------------ */

static uint64_t rng_next(struct gw_outbox *ob)
{
	uint64_t x = ob->rng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return ob->rng = x;
}

static void known_free(struct known *k)
{
	json_decref(k->firing);
	free(k->run);
	free(k);
}

/* The entry of alert id of run `run`, created (version 0) if new; NULL
 * when out of memory. */
static struct known *known_get(struct gw_outbox *ob, const char *id, const char *run)
{
	uint32_t i;
	if (gw_strtab_find(&ob->known_by_id, id, strlen(id), &i) == 0)
		return ob->known[i];
	struct known *k = NULL;
	if (gw_grow((void **)&ob->known, &ob->known_cap, ob->known_n + 1, sizeof(*ob->known)) < 0 ||
	    !(k = calloc(1, sizeof(*k))) || !(k->run = strdup(run ? run : ""))) {
		free(k);
		return NULL;
	}
	gw_strlcpy(k->id, id, sizeof(k->id));
	if (gw_strtab_put(&ob->known_by_id, k->id, strlen(k->id), (uint32_t)ob->known_n) < 0) {
		known_free(k);
		return NULL;
	}
	ob->known[ob->known_n++] = k;
	return k;
}

/* Drop entry i (the last one takes its place). */
static void known_drop(struct gw_outbox *ob, size_t i)
{
	struct known *k = ob->known[i];
	gw_strtab_del(&ob->known_by_id, k->id, strlen(k->id), NULL);
	struct known *moved = ob->known[--ob->known_n];
	if (moved != k) {
		ob->known[i] = moved;
		gw_strtab_set(&ob->known_by_id, moved->id, strlen(moved->id), (uint32_t)i);
	}
	known_free(k);
}

static void event_unref(struct event *ev)
{
	if (!ev || --ev->refs)
		return;
	free(ev->run);
	free(ev->detector);
	json_decref(ev->alert);
	free(ev);
}

/* A new event (one reference) around alert (reference taken over). */
static struct event *event_new(const char *id, int64_t version, const char *kind, json_t *alert,
                               double created)
{
	struct event *ev = calloc(1, sizeof(*ev));
	const char *run = json_string_value(json_object_get(alert, "run"));
	const char *det = json_string_value(json_object_get(alert, "detector"));
	if (!ev || !(ev->run = strdup(run ? run : "")) || !(ev->detector = strdup(det ? det : ""))) {
		if (ev) {
			free(ev->run);
			free(ev);
		}
		json_decref(alert);
		return NULL;
	}
	ev->refs = 1;
	gw_strlcpy(ev->alert_id, id, sizeof(ev->alert_id));
	ev->version = version;
	gw_strlcpy(ev->kind, kind, sizeof(ev->kind));
	ev->alert = alert;
	ev->created = created;
	return ev;
}

static int severity_of(const json_t *alert)
{
	const char *s = json_string_value(json_object_get(alert, "severity"));
	return s ? gw_severity_parse(s) : -1;
}

/* Put d in sk's queue right after `at` (the list head: at the front). */
static void q_insert_after(struct sink *sk, struct delivery *at, struct delivery *d)
{
	d->sk = sk;
	d->prev = at;
	d->next = at->next;
	at->next->prev = d;
	at->next = d;
	sk->queued++;
}

static void q_append(struct sink *sk, struct delivery *d)
{
	q_insert_after(sk, sk->q.prev, d);
}

static void q_remove_free(struct delivery *d)
{
	d->prev->next = d->next;
	d->next->prev = d->prev;
	d->sk->queued--;
	event_unref(d->ev);
	json_decref(d->previous);
	free(d);
}

/* Record a delivery's state in SQLite (through the writer queue). */
static void put_state(struct sink *sk, const struct delivery *d, const char *state, long status,
                      const char *error)
{
	if (d->repeat_no)
		return;
	double now = gw_wall_now();
	struct gw_outbox_delivery dv = {
		.alert_id = d->ev->alert_id,
		.version = d->ev->version,
		.sink = sk->cfg->name,
		.state = state,
		.attempts = d->attempts,
		.last_status = status,
		.last_error = error,
		.updated = now,
		.delivered = strcmp(state, "delivered") == 0 ? now : NAN,
	};
	if (!gw_outbox_db_put_delivery(sk->ob->store, &dv))
		gw_log_err("alerts: out of memory recording a delivery of %s", d->ev->alert_id);
}

static struct active *active_find(struct sink *sk, const char *id, struct active ***link)
{
	struct active **p = &sk->active;
	for (; *p; p = &(*p)->next) {
		if (strcmp((*p)->alert_id, id) == 0) {
			if (link)
				*link = p;
			return *p;
		}
	}
	return NULL;
}

static void active_drop(struct sink *sk, const char *id)
{
	struct active **link, *a = active_find(sk, id, &link);
	if (!a)
		return;
	*link = a->next;
	json_decref(a->alert);
	free(a);
}

/* Remember (or refresh) an open alert at a sink.  Returns the snapshot it
 * replaced if the severity differs (a new reference), for Alertmanager. */
static json_t *active_set(struct sink *sk, const char *id, int64_t version, json_t *alert,
                          uint64_t next_ms)
{
	struct active *a = active_find(sk, id, NULL);
	json_t *prev = NULL;
	if (!a) {
		a = calloc(1, sizeof(*a));
		if (!a)
			return NULL;
		gw_strlcpy(a->alert_id, id, sizeof(a->alert_id));
		a->next = sk->active;
		sk->active = a;
	} else if (severity_of(a->alert) != severity_of(alert)) {
		prev = json_incref(a->alert);
	}
	json_decref(a->alert);
	a->alert = json_incref(alert);
	a->version = version;
	a->next_ms = next_ms;
	return prev;
}

/* Does this snapshot say the alert is acknowledged?  (An ack's does; an
 * open's, an update's or an unack's does not.) */
static bool acked_in(const json_t *alert)
{
	return json_is_number(json_object_get(alert, "acked_at"));
}

/* Mark an alert open at sk acknowledged or not (an open or update clears it). */
static void active_ack(struct sink *sk, const char *id, bool acked)
{
	struct active *a = active_find(sk, id, NULL);
	if (a)
		a->acked = acked;
}

/* ---- sending ------------------------------------------------------------------ */

static void pump(struct sink *sk);

static void on_sink_timer(uv_timer_t *t)
{
	pump(t->data);
}

static void arm(struct sink *sk, uint64_t at_ms, uint64_t now)
{
	if (at_ms == UINT64_MAX) {
		uv_timer_stop(&sk->timer);
		return;
	}
	uv_timer_start(&sk->timer, on_sink_timer, at_ms > now ? at_ms - now : 0, 0);
}

/* 0 if a token was taken, else the ms until one is there. */
static uint64_t rate_take(struct sink *sk, uint64_t now)
{
	const struct gw_sink_cfg *c = sk->cfg;
	if (!c->rate_per_ms || !c->rate_count)
		return 0;
	double per_ms = (double)c->rate_count / (double)c->rate_per_ms;
	sk->tokens += (double)(now - sk->tokens_ms) * per_ms;
	if (sk->tokens > c->rate_count)
		sk->tokens = c->rate_count;
	sk->tokens_ms = now;
	if (sk->tokens >= 1.0) {
		sk->tokens -= 1.0;
		return 0;
	}
	return (uint64_t)ceil((1.0 - sk->tokens) / per_ms);
}

static uint64_t backoff_ms(struct sink *sk, unsigned attempts)
{
	const struct gw_sink_cfg *c = sk->cfg;
	uint64_t d = c->retry_initial_ms;
	for (unsigned i = 1; i < attempts && d < c->retry_max_ms; i++)
		d *= 2;
	if (d > c->retry_max_ms)
		d = c->retry_max_ms;
	uint64_t half = d / 2;
	return d - half + (half ? rng_next(sk->ob) % (half + 1) : 0);
}

static bool retryable(const struct gw_alert_http_result *res)
{
	if (res->rc < 0)
		return true;  /* network, TLS, timeouts: the receiver may come back */
	return res->status == 408 || res->status == 425 || res->status == 429 ||
	       res->status >= 500;
}

static void describe(const struct gw_alert_http_result *res, char *buf, size_t cap)
{
	if (res->rc < 0) {
		snprintf(buf, cap, "%s", res->error ? res->error : strerror(-res->rc));
		return;
	}
	/* the first line of the body, printable characters only */
	char snip[96];
	size_t n = 0;
	for (size_t i = 0; i < res->body_len && n + 1 < sizeof(snip); i++) {
		char ch = res->body[i];
		if (ch == '\n' || ch == '\r')
			break;
		snip[n++] = (ch >= 0x20 && ch < 0x7f) ? ch : '?';
	}
	snip[n] = '\0';
	snprintf(buf, cap, "HTTP %ld%s%s", res->status, n ? ": " : "", snip);
}

static void on_done(struct gw_alert_req *r, const struct gw_alert_http_result *res);

static void delivery_id(const struct delivery *d, char *buf, size_t cap)
{
	if (d->repeat_no)
		snprintf(buf, cap, "%s-v%" PRId64 "-r%u", d->ev->alert_id, d->ev->version, d->repeat_no);
	else
		snprintf(buf, cap, "%s-v%" PRId64, d->ev->alert_id, d->ev->version);
}

/* Build and start the request of d.  Returns 0 or a negative errno (then
 * nothing is in flight). */
static int start(struct sink *sk, struct delivery *d)
{
	char id[64], ts[32], hdr[160];
	delivery_id(d, id, sizeof(id));
	double now = gw_wall_now();
	struct gw_sink_msg m = {
		.alert = d->ev->alert,
		.event = d->repeat_no ? "repeat" : d->ev->kind,
		.version = d->ev->version,
		.delivery_id = id,
		.now = now,
		.previous = d->previous,
		.resend_s = (double)sk->cfg->repeat_ms / 1000.0,
		.api_base = sk->ob->api_base,
	};
	char *body = NULL;
	size_t len = 0;
	int rc = sk->cfg->type->format(sk->cfg, &m, &body, &len);
	if (rc < 0)
		return rc;
	struct curl_slist *h = NULL, *t;
	snprintf(ts, sizeof(ts), "%lld", (long long)floor(now));
	const char *fixed[] = {"Content-Type: application/json", "Expect:"};
	bool ok = true;
	for (size_t i = 0; ok && i < GW_ARRAY_SIZE(fixed); i++)
		ok = (t = curl_slist_append(h, fixed[i])) && (h = t);
	const char *named[][2] = {
		{"X-Gradwatch-Delivery", id}, {"X-Gradwatch-Event", m.event}, {"X-Gradwatch-Timestamp", ts},
	};
	for (size_t i = 0; ok && i < GW_ARRAY_SIZE(named); i++) {
		snprintf(hdr, sizeof(hdr), "%s: %s", named[i][0], named[i][1]);
		ok = (t = curl_slist_append(h, hdr)) && (h = t);
	}
	if (ok && sk->cfg->secret) {
		char hex[65];
		ok = gw_sink_hmac_sha256_hex(sk->cfg->secret, sk->cfg->secret_len, body, len, hex) == 0;
		snprintf(hdr, sizeof(hdr), "X-Gradwatch-Signature-256: sha256=%s", hex);
		ok = ok && (t = curl_slist_append(h, hdr)) && (h = t);
	}
	if (!ok) {
		curl_slist_free_all(h);
		free(body);
		return -ENOMEM;
	}
	struct gw_alert_post p = {
		.url = sk->cfg->url,
		.headers = h,
		.body = body,
		.len = len,
		.connect_timeout_ms = sk->cfg->connect_timeout_ms,
		.timeout_ms = sk->cfg->timeout_ms,
		.tls_verify = sk->cfg->tls_verify,
		.ca_file = sk->cfg->ca_file,
	};
	d->req.data = d;
	if ((rc = gw_alert_http_post(&sk->ob->http, &d->req, &p, on_done)) < 0)
		return rc;
	d->inflight = true;
	d->attempts++;
	sk->inflight++;
	gw_log_debug("alerts: %s: sending %s (%s) to %s", sk->cfg->name, id, m.event,
	             sk->cfg->url_log);
	return 0;
}

/* Queue a repeat of every open alert whose time has come and that has
 * nothing queued; returns the next repeat time. */
static uint64_t queue_repeats(struct sink *sk, uint64_t now)
{
	uint64_t next = UINT64_MAX;
	if (!sk->cfg->repeat_ms)
		return next;
	bool keepalive = sk->cfg->type == &gw_sink_alertmanager;
	for (struct active *a = sk->active; a; a = a->next) {
		if (a->acked && !keepalive)
			continue;
		if (a->next_ms > now) {
			next = GW_MIN(next, a->next_ms);
			continue;
		}
		bool queued = false;
		for (struct delivery *d = sk->q.next; d != &sk->q && !queued; d = d->next)
			queued = strcmp(d->ev->alert_id, a->alert_id) == 0;
		a->next_ms = UINT64_MAX;  /* re-armed when this one is delivered */
		if (queued)
			continue;
		const char *kind = json_string_value(json_object_get(a->alert, "kind"));
		struct event *ev = event_new(a->alert_id, a->version, kind ? kind : "open",
		                             json_incref(a->alert), gw_wall_now());
		struct delivery *d = ev ? calloc(1, sizeof(*d)) : NULL;
		if (!d) {
			event_unref(ev);
			a->next_ms = now + sk->cfg->repeat_ms;
			continue;
		}
		d->ev = ev;
		d->repeat_no = ++a->repeats;
		d->due_ms = now;
		q_append(sk, d);
		sk->n_repeats++;
	}
	return next;
}

/* Start what may start and arm the timer for the next due time.  The walk
 * stops at the first delivery not committed yet (all after it are newer)
 * and when max_in_flight requests are out (a finished one pumps again), so
 * a stuck sink costs nothing per alert. */
static void pump(struct sink *sk)
{
	struct gw_outbox *ob = sk->ob;
	if (ob->closing)
		return;
	uint64_t now = gw_mono_ms();
	uint64_t next = queue_repeats(sk, now);
	if (now < sk->paused_until_ms) {
		arm(sk, GW_MIN(next, sk->paused_until_ms), now);
		return;
	}
	if (sk->inflight < sk->cfg->max_in_flight && sk->queued) {
		/* the runs met in this walk (keys: the queued events' names) */
		struct gw_strtab_slot seen_slots[128];
		struct gw_strtab seen;
		gw_strtab_init(&seen, seen_slots, GW_ARRAY_SIZE(seen_slots));
		for (struct delivery *d = sk->q.next; d != &sk->q; d = d->next) {
			if (d->wait_seq > ob->committed)
				break;
			/* only the first delivery of a run may go: per-run order */
			int first = gw_strtab_put(&seen, d->ev->run, strlen(d->ev->run), 0);
			if (first == -ENOMEM) {
				next = GW_MIN(next, now + 100);  /* try again soon */
				break;
			}
			if (first == -EEXIST || d->inflight)
				continue;
			if (d->due_ms > now) {
				next = GW_MIN(next, d->due_ms);
				continue;
			}
			uint64_t wait = rate_take(sk, now);
			if (wait) {
				next = GW_MIN(next, now + wait);
				break;
			}
			int rc = start(sk, d);
			if (rc < 0) {
				gw_log_err("alerts: %s: cannot start a request: %s", sk->cfg->name,
				           strerror(-rc));
				d->due_ms = now + backoff_ms(sk, ++d->attempts);
				next = GW_MIN(next, d->due_ms);
			}
			if (sk->inflight >= sk->cfg->max_in_flight)
				break;
		}
		gw_strtab_free(&seen);
	}
	arm(sk, next, now);
}

#define LOG_WINDOW_MS 60000
#define LOG_BUDGET 5

/* Say what the budget held back. */
static void log_held(struct sink *sk, uint64_t now)
{
	double s = (double)(now - sk->log_win_ms) / 1000.0;
	if (sk->held_fail)
		gw_log_warn("alerts: %s (%s): %" PRIu64 " more failed attempt(s) not logged in the "
		            "last %.0f s (at most %d a minute are); last error: %s", sk->cfg->name,
		            sk->cfg->url_log, sk->held_fail, s, LOG_BUDGET,
		            sk->last_error[0] ? sk->last_error : "none");
	if (sk->held_ok)
		gw_log_info("alerts: %s: %" PRIu64 " more event(s) delivered after retries in the last "
		            "%.0f s", sk->cfg->name, sk->held_ok, s);
	sk->held_fail = sk->held_ok = 0;
}

/* May sk log one more line about an attempt now?  Opens a new minute (and
 * says what the last one held back) when it is over. */
static bool log_ok(struct sink *sk, uint64_t now)
{
	if (!sk->log_win_ms || now - sk->log_win_ms >= LOG_WINDOW_MS) {
		log_held(sk, now);
		sk->log_win_ms = now;
		sk->log_used = 0;
	}
	if (sk->log_used >= LOG_BUDGET)
		return false;
	sk->log_used++;
	return true;
}

static void on_done(struct gw_alert_req *r, const struct gw_alert_http_result *res)
{
	struct delivery *d = r->data;
	struct sink *sk = d->sk;
	uint64_t now = gw_mono_ms();
	char id[64], what[192];
	delivery_id(d, id, sizeof(id));
	describe(res, what, sizeof(what));
	d->inflight = false;
	sk->inflight--;
	sk->last_status = (int)res->status;
	if (res->rc == 0 && res->status >= 200 && res->status < 300) {
		sk->n_delivered++;
		sk->last_error[0] = '\0';
		put_state(sk, d, "delivered", res->status, NULL);
		if (d->attempts > 1) {
			if (log_ok(sk, now))
				gw_log_info("alerts: %s: delivered %s (%s) after %u attempts", sk->cfg->name,
				            id, d->repeat_no ? "repeat" : d->ev->kind, d->attempts);
			else
				sk->held_ok++;
			/* it answers again: what the outage held back, at once */
			if (sk->held_fail)
				log_held(sk, now);
		} else
			gw_log_debug("alerts: %s: delivered %s (%s) in %.1f ms", sk->cfg->name, id,
			             d->repeat_no ? "repeat" : d->ev->kind, res->seconds * 1000.0);
		struct active *a = active_find(sk, d->ev->alert_id, NULL);
		if (a && sk->cfg->repeat_ms && strcmp(d->ev->kind, "resolve"))
			a->next_ms = now + sk->cfg->repeat_ms;
		q_remove_free(d);
		pump(sk);
		return;
	}
	gw_strlcpy(sk->last_error, what, sizeof(sk->last_error));
	double age_ms = (gw_wall_now() - d->ev->created) * 1000.0;
	bool give_up = sk->cfg->give_up_ms && age_ms > (double)sk->cfg->give_up_ms;
	if (!retryable(res) || give_up) {
		sk->n_failed++;
		gw_log_err("alerts: %s (%s): giving up on %s (%s) after %u attempt(s): %s%s",
		           sk->cfg->name, sk->cfg->url_log, id, d->repeat_no ? "repeat" : d->ev->kind,
		           d->attempts, what, give_up ? " (give_up_after passed)" : " (not retryable)");
		put_state(sk, d, "failed", res->status, what);
		struct active *a = active_find(sk, d->ev->alert_id, NULL);
		if (a && sk->cfg->repeat_ms)
			a->next_ms = now + sk->cfg->repeat_ms;
		q_remove_free(d);
		pump(sk);
		return;
	}
	sk->n_retries++;
	uint64_t delay = backoff_ms(sk, d->attempts);
	if (res->retry_after_s >= 0 && (res->status == 429 || res->status == 503)) {
		delay = (uint64_t)GW_MIN(res->retry_after_s, RETRY_AFTER_MAX_S) * 1000u;
		if (res->status == 429)
			sk->paused_until_ms = now + delay;
	}
	d->due_ms = now + delay;
	put_state(sk, d, "pending", res->status, what);
	if (log_ok(sk, now))
		gw_log_warn("alerts: %s (%s): attempt %u of %s failed: %s; retrying in %.1f s",
		            sk->cfg->name, sk->cfg->url_log, d->attempts, id, what,
		            (double)delay / 1000.0);
	else
		sk->held_fail++;
	pump(sk);
}

/* ---- events in ------------------------------------------------------------------ */

/* Queue ev at sk: group-wait replacement, Alertmanager's previous labels,
 * the open-alert set. */
static void enqueue(struct sink *sk, struct event *ev, uint64_t wait_seq, uint64_t now)
{
	struct delivery *d = calloc(1, sizeof(*d));
	if (!d) {
		gw_log_err("alerts: %s: out of memory queueing %s", sk->cfg->name, ev->alert_id);
		return;
	}
	d->ev = ev;
	ev->refs++;
	d->wait_seq = wait_seq;
	d->due_ms = now + sk->cfg->group_wait_ms;
	/* with neither grouping nor repeats there is nothing to replace; an
	 * ack or unack replaces only repeats (the alert it is about must be
	 * sent first, not swallowed by its acknowledgement) */
	bool scan = sk->cfg->group_wait_ms || sk->cfg->repeat_ms;
	bool ack_kind = strcmp(ev->kind, "ack") == 0 || strcmp(ev->kind, "unack") == 0;
	struct delivery *at = NULL;
	for (struct delivery *o = scan ? sk->q.next : &sk->q, *nx; o != &sk->q; o = nx) {
		nx = o->next;
		if (o->inflight || strcmp(o->ev->alert_id, ev->alert_id))
			continue;
		if (o->repeat_no) {
			q_remove_free(o);
		} else if (!o->attempts && sk->cfg->group_wait_ms && o->due_ms > now && !ack_kind) {
			d->due_ms = o->due_ms;
			if (o->previous && !d->previous)
				d->previous = json_incref(o->previous);
			put_state(sk, o, "superseded", 0, NULL);
			sk->n_superseded++;
			if (!at)
				at = o->prev;  /* take its place: the run's order stays */
			q_remove_free(o);
		}
	}
	bool resolve = strcmp(ev->kind, "resolve") == 0;
	if (resolve) {
		active_drop(sk, ev->alert_id);
	} else {
		json_t *prev = active_set(sk, ev->alert_id, ev->version, ev->alert, UINT64_MAX);
		if (prev && sk->cfg->type == &gw_sink_alertmanager && !d->previous)
			d->previous = prev;
		else
			json_decref(prev);
		active_ack(sk, ev->alert_id, acked_in(ev->alert));
	}
	q_insert_after(sk, at ? at : sk->q.prev, d);
}

/* Ask the writer to commit up to seq now.  At most one such request is
 * outstanding: while the writer works on one, later alert rows wait for it
 * to finish and are flushed from gw_outbox_committed(), so a burst of
 * alerts does not turn into a burst of tiny transactions. */
static void request_flush(struct gw_outbox *ob, uint64_t seq)
{
	if (seq > ob->want_seq)
		ob->want_seq = seq;
	if (ob->flush_seq > ob->committed)
		return;
	ob->flush_seq = ob->want_seq;
	gw_store_flush(ob->store);
}

/* Queue event (id, version, kind) of snapshot snap (its JSON text `text`)
 * at every sink that takes it: the outbox row, one deliveries row per sink,
 * then the in-memory queues; ask for a commit.  Returns the last row's
 * sequence number (0: no sink takes it, or out of memory). */
static uint64_t emit(struct gw_outbox *ob, const char *id, int64_t version, const char *kind,
                     json_t *snap, const char *text)
{
	const char *run = json_string_value(json_object_get(snap, "run"));
	const char *det = json_string_value(json_object_get(snap, "detector"));
	double wall = gw_wall_now();
	struct event *ev = NULL;
	uint64_t seq = 0;
	for (size_t i = 0; run && det && i < ob->n; i++) {
		struct sink *sk = &ob->sinks[i];
		if (!gw_sink_matches(sk->cfg, run, det, severity_of(snap)))
			continue;
		if (!ev) {
			ev = event_new(id, version, kind, json_incref(snap), wall);
			if (!ev)
				break;
			seq = gw_outbox_db_put_event(ob->store, id, version, kind, run, text, wall);
		}
		struct gw_outbox_delivery dv = {
			.alert_id = id, .version = version, .sink = sk->cfg->name, .state = "pending",
			.updated = wall, .delivered = NAN,
		};
		uint64_t s = gw_outbox_db_put_delivery(ob->store, &dv);
		if (!seq || !s)
			gw_log_err("alerts: out of memory storing the delivery of %s to %s; "
			           "sending it anyway", id, sk->cfg->name);
		seq = GW_MAX(seq, s);
		enqueue(sk, ev, seq, gw_mono_ms());
	}
	if (!ev)
		return 0;
	event_unref(ev);
	/* commit now rather than at the interval: the alert waits for it */
	request_flush(ob, seq);
	/* a group wait of 0 with an already-covered seq (never, in practice)
	 * would be sent on the next commit; arm the timers for the rest */
	for (size_t i = 0; i < ob->n; i++)
		pump(&ob->sinks[i]);
	return seq;
}

void gw_outbox_alert(struct gw_outbox *ob, const struct gw_alert *a)
{
	if (!ob || ob->closing)
		return;
	struct known *k = known_get(ob, a->id, a->run);
	if (!k) {
		gw_log_err("alerts: out of memory; %s %s is not delivered", a->id,
		           gw_alert_kind_name(a->kind));
		return;
	}
	int64_t version = ++k->version;
	if (!ob->n) {   /* no sink: only whether it is open */
		k->open = a->kind != GW_ALERT_RESOLVE;
		k->acked = false;
		return;
	}
	json_t *snap = gw_alert_event_json(a, version, k->firing);
	char *text = snap ? json_dumps(snap, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
	if (!text) {
		json_decref(snap);
		gw_log_err("alerts: out of memory; %s %s is not delivered", a->id,
		           gw_alert_kind_name(a->kind));
		return;
	}
	json_decref(k->firing);
	k->firing = a->kind == GW_ALERT_RESOLVE ? NULL : json_incref(snap);
	k->open = a->kind != GW_ALERT_RESOLVE;
	k->acked = false;   /* opened again or escalated: page again */
	emit(ob, a->id, version, gw_alert_kind_name(a->kind), snap, text);
	free(text);
	json_decref(snap);
}

void gw_outbox_ack_event(json_t *a, bool ack, int64_t version, double at, const char *by,
                         const char *note)
{
	json_object_set_new(a, "kind", json_string(ack ? "ack" : "unack"));
	json_object_set_new(a, "version", json_integer(version));
	json_object_set_new(a, "raised_at", gw_json_num(at));
	static const char *const fields[] = {"acked_at", "acked_by", "ack_note", "unacked_by"};
	for (size_t f = 0; f < GW_ARRAY_SIZE(fields); f++)
		json_object_del(a, fields[f]);
	if (ack) {
		json_object_set_new(a, "acked_at", gw_json_num(at));
		if (by && *by)
			json_object_set_new(a, "acked_by", json_string(by));
		if (note && *note)
			json_object_set_new(a, "ack_note", json_string(note));
	} else if (by && *by) {
		json_object_set_new(a, "unacked_by", json_string(by));
	}
}

/* The entry of alert id while it is open; NULL when resolved or unknown. */
static struct known *known_open(const struct gw_outbox *ob, const char *id)
{
	uint32_t i;
	if (gw_strtab_find(&ob->known_by_id, id, strlen(id), &i) < 0 || !ob->known[i]->open)
		return NULL;
	return ob->known[i];
}

int gw_outbox_acked(const struct gw_outbox *ob, const char *id)
{
	const struct known *k = ob ? known_open(ob, id) : NULL;
	return k ? k->acked : -ENOENT;
}

int gw_outbox_ack(struct gw_outbox *ob, const char *id, bool ack, double at, const char *by,
                  const char *note, const json_t *row, uint64_t *seq)
{
	*seq = 0;
	if (!ob || ob->closing)
		return 0;
	struct known *k = known_open(ob, id);
	if (!k)
		return -ENOENT;
	if (k->acked == ack)
		return -EALREADY;
	if (!ob->n) {   /* no sink: nothing to send */
		k->version++;
		k->acked = ack;
		return 0;
	}
	/* the last snapshot sent, or (opened while no sink took it) the row */
	json_t *snap = json_deep_copy(k->firing ? k->firing : row);
	if (!snap)
		return -ENOMEM;
	int64_t version = k->version + 1;
	const char *kind = ack ? "ack" : "unack";
	gw_outbox_ack_event(snap, ack, version, at, by, note);
	char *text = json_dumps(snap, JSON_COMPACT | JSON_REAL_PRECISION(17));
	if (!text) {
		json_decref(snap);
		return -ENOMEM;
	}
	k->version = version;
	k->acked = ack;
	json_decref(k->firing);
	k->firing = json_incref(snap);
	*seq = emit(ob, id, version, kind, snap, text);
	/* sinks the alert does not go to still see it acknowledged (no event) */
	for (size_t s = 0; s < ob->n; s++)
		active_ack(&ob->sinks[s], id, ack);
	free(text);
	json_decref(snap);
	return 0;
}

void gw_outbox_committed(struct gw_outbox *ob, uint64_t seq)
{
	if (!ob || seq <= ob->committed)
		return;
	ob->committed = seq;
	/* alert rows queued after the writer took its last batch: ask again */
	if (ob->want_seq > seq)
		request_flush(ob, ob->want_seq);
	for (size_t i = 0; i < ob->n; i++)
		if (ob->sinks[i].queued)
			pump(&ob->sinks[i]);
}

/* ---- a run deleted ---------------------------------------------------------------- */

static bool queued_at(const struct sink *sk, const char *id)
{
	for (const struct delivery *d = sk->q.next; d != &sk->q; d = d->next)
		if (!d->repeat_no && strcmp(d->ev->alert_id, id) == 0)
			return true;
	return false;
}

void gw_outbox_forget_run(struct gw_outbox *ob, const char *run)
{
	if (!ob)
		return;
	for (size_t i = 0; i < ob->known_n;) {
		struct known *k = ob->known[i];
		if (strcmp(k->run, run) != 0) {
			i++;
			continue;
		}
		/* no more repeats of it; an event still queued goes out (at
		 * least once) and keeps the entry, so the alert's versions go on
		 * should the run come back and raise it again before */
		bool queued = false;
		for (size_t s = 0; s < ob->n; s++) {
			struct sink *sk = &ob->sinks[s];
			for (struct delivery *d = sk->q.next, *nx; d != &sk->q; d = nx) {
				nx = d->next;
				if (d->repeat_no && !d->inflight && strcmp(d->ev->alert_id, k->id) == 0)
					q_remove_free(d);
			}
			active_drop(sk, k->id);
			queued = queued || queued_at(sk, k->id);
		}
		k->open = k->acked = false;
		if (queued)
			i++;
		else
			known_drop(ob, i);
	}
}

/* ---- start-up ------------------------------------------------------------------- */

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
	struct known *k = known_get(L->ob, alert_id, run);
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
		event_unref(L->last);
		json_t *alert = json_loads(alert_json, 0, NULL);
		L->last = alert ? event_new(alert_id, version, kind, alert, created) : NULL;
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
	q_append(sk, d);
	if (strcmp(kind, "resolve") == 0) {
		active_drop(sk, alert_id);
	} else {
		json_decref(active_set(sk, alert_id, version, L->last->alert, UINT64_MAX));
		active_ack(sk, alert_id, acked_in(L->last->alert));
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
			if (!sk->cfg->repeat_ms || active_find(sk, k->id, NULL) ||
			    !gw_sink_matches(sk->cfg, run, det, severity_of(k->firing)))
				continue;
			/* Alertmanager: refresh at once (it may have expired them
			 * while we were down); chat sinks: at the next interval */
			uint64_t at = sk->cfg->type == &gw_sink_alertmanager ? now : now + sk->cfg->repeat_ms;
			json_decref(active_set(sk, k->id, k->version, k->firing, at));
			active_ack(sk, k->id, k->acked);
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
	event_unref(L.last);
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
		pump(sk);
	}
	if (ob->orphans)
		gw_log_warn("alerts: %zu pending deliveries belong to sinks no longer configured; "
		            "they stay in the database", ob->orphans);
	*out = ob;
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
		log_held(&ob->sinks[i], gw_mono_ms());
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
			q_remove_free(sk->q.next);
		while (sk->active)
			active_drop(sk, sk->active->alert_id);
	}
	for (size_t i = 0; i < ob->known_n; i++)
		known_free(ob->known[i]);
	free(ob->known);
	gw_strtab_free(&ob->known_by_id);
	free(ob->sinks);
	gw_sink_free_all(ob->cfgs, ob->n);
	free(ob->api_base);
	if (ob->curl_up)
		curl_global_cleanup();
	free(ob);
}
