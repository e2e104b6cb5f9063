/*
 * outbox_send: the outbox's sending, per sink (see outbox.c for the data).
 *
 * A sink sends a delivery only when it is the first of its run in the
 * queue (per-run order), it is committed, its due time has come (group
 * wait, retry back-off), the sink is not paused by a Retry-After, fewer
 * than max_in_flight requests are out and the token bucket (rate limit)
 * has a token.  One uv_timer_t per sink wakes
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
 */
#include "outbox_impl.h"

#include "log.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RETRY_AFTER_MAX_S 3600

void gw__outbox_on_timer(uv_timer_t *t)
{
	gw__outbox_pump(t->data);
}

static void arm(struct sink *sk, uint64_t at_ms, uint64_t now)
{
	if (at_ms == UINT64_MAX) {
		uv_timer_stop(&sk->timer);
		return;
	}
	uv_timer_start(&sk->timer, gw__outbox_on_timer, at_ms > now ? at_ms - now : 0, 0);
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
	return d - half + (half ? gw__outbox_rng(sk->ob) % (half + 1) : 0);
}

static bool retryable(const struct gw_alert_http_result *res)
{
	if (res->rc < 0)
		return true;  /* network, TLS, timeouts: the receiver may come back */
	return res->status == 408 || res->status == 425 || res->status == 429 ||
	       res->status >= 500;
}

/* What of a receiver's answer goes into the log and /v1/sinks last_error:
 * the status and at most this many characters of the body's first line.
 * A receiver may answer with a page of HTML or echo the whole request. */
#define EXCERPT_MAX 96

/* Copy text into out (cap bytes) with every piece of c's URL that the
 * log does not show (user info, path segments, query keys and values:
 * the pieces of 4 characters or more not in url_log) and the signing
 * secret replaced by "REDACTED": a receiver that echoes its request URL
 * must not hand the webhook token to every holder of a read token. */
static void redact_text(const struct gw_sink_cfg *c, const char *text, char *out, size_t cap)
{
	const char *pieces[32];
	size_t lens[32], np = 0;
	const char *u = strstr(c->url, "://");
	u = u ? u + 3 : c->url;
	while (*u && np < 31) {
		size_t n = strcspn(u, "/?&=#@:;,");
		char piece[256];
		if (n >= 4 && n < sizeof(piece)) {
			memcpy(piece, u, n);
			piece[n] = '\0';
			if (!strstr(c->url_log, piece)) {
				pieces[np] = u;
				lens[np++] = n;
			}
		}
		u += n + (u[n] != '\0');
	}
	if (c->secret && c->secret_len >= 4) {
		pieces[np] = c->secret;
		lens[np++] = c->secret_len;
	}
	size_t o = 0;
	for (const char *p = text; *p && o + 1 < cap;) {
		size_t k = 0;
		while (k < np && strncmp(p, pieces[k], lens[k]))
			k++;
		if (k < np) {
			o += (size_t)snprintf(out + o, cap - o, "REDACTED");
			o = o < cap ? o : cap - 1;
			p += lens[k];
		} else {
			out[o++] = *p++;
		}
	}
	out[o] = '\0';
}

static void describe(const struct gw_sink_cfg *c, const struct gw_alert_http_result *res,
                     char *buf, size_t cap)
{
	char line[1024], red[2048];
	size_t n = 0;
	if (res->rc < 0) {
		snprintf(line, sizeof(line), "%s", res->error ? res->error : strerror(-res->rc));
	} else {
		/* the first line of the body, printable characters only */
		for (size_t i = 0; i < res->body_len && n + 1 < sizeof(line); i++) {
			char ch = res->body[i];
			if (ch == '\n' || ch == '\r')
				break;
			line[n++] = (ch >= 0x20 && ch < 0x7f) ? ch : '?';
		}
		line[n] = '\0';
	}
	redact_text(c, line, red, sizeof(red));
	size_t rn = strlen(red);
	const char *more = rn > EXCERPT_MAX ? "..." : "";
	if (res->rc < 0)
		snprintf(buf, cap, "%.*s%s", EXCERPT_MAX, red, more);
	else
		snprintf(buf, cap, "HTTP %ld%s%.*s%s", res->status, rn ? ": " : "", EXCERPT_MAX, red,
		         more);
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
		struct event *ev = gw__event_new(a->alert_id, a->version, kind ? kind : "open",
		                             json_incref(a->alert), gw_wall_now());
		struct delivery *d = ev ? calloc(1, sizeof(*d)) : NULL;
		if (!d) {
			gw__event_unref(ev);
			a->next_ms = now + sk->cfg->repeat_ms;
			continue;
		}
		d->ev = ev;
		d->repeat_no = ++a->repeats;
		d->due_ms = now;
		gw__q_append(sk, d);
		sk->n_repeats++;
	}
	return next;
}

/* The walk stops at the first delivery not committed yet (all after it are
 * newer), when max_in_flight requests are out (a finished one pumps
 * again), and once it has met the first delivery of every run in the queue
 * (the others wait behind those), so a stuck sink's backlog costs a pump
 * a step a run, not a step a delivery. */
void gw__outbox_pump(struct sink *sk)
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
			/* every run's first delivery met: the rest wait behind them */
			if (seen.count && gw__q_all_runs_met(sk, seen.count))
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

void gw__outbox_log_held(struct sink *sk, uint64_t now)
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
		gw__outbox_log_held(sk, now);
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
	describe(sk->cfg, res, what, sizeof(what));
	d->inflight = false;
	sk->inflight--;
	sk->last_status = (int)res->status;
	if (res->rc == 0 && res->status >= 200 && res->status < 300) {
		sk->n_delivered++;
		sk->last_error[0] = '\0';
		gw__put_state(sk, d, "delivered", res->status, NULL);
		if (d->attempts > 1) {
			if (log_ok(sk, now))
				gw_log_info("alerts: %s: delivered %s (%s) after %u attempts", sk->cfg->name,
				            id, d->repeat_no ? "repeat" : d->ev->kind, d->attempts);
			else
				sk->held_ok++;
			/* it answers again: what the outage held back, at once */
			if (sk->held_fail)
				gw__outbox_log_held(sk, now);
		} else
			gw_log_debug("alerts: %s: delivered %s (%s) in %.1f ms", sk->cfg->name, id,
			             d->repeat_no ? "repeat" : d->ev->kind, res->seconds * 1000.0);
		struct active *a = gw__active_find(sk, d->ev->alert_id, NULL);
		if (a && sk->cfg->repeat_ms && strcmp(d->ev->kind, "resolve"))
			a->next_ms = now + sk->cfg->repeat_ms;
		gw__q_remove_free(d);
		gw__outbox_pump(sk);
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
		gw__put_state(sk, d, "failed", res->status, what);
		struct active *a = gw__active_find(sk, d->ev->alert_id, NULL);
		if (a && sk->cfg->repeat_ms)
			a->next_ms = now + sk->cfg->repeat_ms;
		gw__q_remove_free(d);
		gw__outbox_pump(sk);
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
	gw__put_state(sk, d, "pending", res->status, what);
	if (log_ok(sk, now))
		gw_log_warn("alerts: %s (%s): attempt %u of %s failed: %s; retrying in %.1f s",
		            sk->cfg->name, sk->cfg->url_log, d->attempts, id, what,
		            (double)delay / 1000.0);
	else
		sk->held_fail++;
	gw__outbox_pump(sk);
}
