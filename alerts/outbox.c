/*
 * The outbox (see outbox.h for the life of an event): its data and the
 * small operations on it, which the parts build on (outbox_impl.h: the
 * structs; outbox_send.c, outbox_events.c, outbox_start.c).
 *
 * Data: an `event` is one alert event with its JSON snapshot, shared by
 * the sinks it goes to; a `delivery` is one event at one sink and sits in
 * that sink's queue in event order; an `active` is an alert open at a
 * sink (repeated); a `known` is an alert that can still change, its
 * version and state, by id (the lib's string table over an array): the
 * authority an acknowledgement decides on.  How they are sent is
 * outbox_send.c's.
 */
#include "outbox_impl.h"
#include "outbox_db.h"

#include "buf.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

uint64_t gw__outbox_rng(struct gw_outbox *ob)
{
	uint64_t x = ob->rng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return ob->rng = x;
}

void gw__known_free(struct known *k)
{
	json_decref(k->firing);
	free(k->run);
	free(k->acked_by);
	free(k->ack_note);
	free(k->unacked_by);
	free(k);
}

struct known *gw__known_get(struct gw_outbox *ob, const char *id, const char *run)
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
	k->acked_at = NAN;
	if (gw_strtab_put(&ob->known_by_id, k->id, strlen(k->id), (uint32_t)ob->known_n) < 0) {
		gw__known_free(k);
		return NULL;
	}
	ob->known[ob->known_n++] = k;
	return k;
}

void gw__known_drop(struct gw_outbox *ob, size_t i)
{
	struct known *k = ob->known[i];
	gw_strtab_del(&ob->known_by_id, k->id, strlen(k->id), NULL);
	struct known *moved = ob->known[--ob->known_n];
	if (moved != k) {
		ob->known[i] = moved;
		gw_strtab_set(&ob->known_by_id, moved->id, strlen(moved->id), (uint32_t)i);
	}
	gw__known_free(k);
}

struct known *gw__known_open(const struct gw_outbox *ob, const char *id)
{
	uint32_t i;
	if (gw_strtab_find(&ob->known_by_id, id, strlen(id), &i) < 0 || !ob->known[i]->open)
		return NULL;
	return ob->known[i];
}

/* A copy of s, or NULL for NULL or "" (and when out of memory: the detail
 * is lost, not the event). */
static char *dup_said(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

void gw__known_set(struct known *k, const char *kind, double at, const char *by,
                   const char *note)
{
	bool ack = strcmp(kind, "ack") == 0, unack = strcmp(kind, "unack") == 0;
	k->kind = kind;
	k->raised_at = at;
	free(k->acked_by);
	free(k->ack_note);
	free(k->unacked_by);
	k->acked_at = ack ? at : NAN;
	k->acked_by = ack ? dup_said(by) : NULL;
	k->ack_note = ack ? dup_said(note) : NULL;
	k->unacked_by = unack ? dup_said(by) : NULL;
}

void gw__event_unref(struct event *ev)
{
	if (!ev || --ev->refs)
		return;
	free(ev->run);
	free(ev->detector);
	json_decref(ev->alert);
	free(ev);
}

struct event *gw__event_new(const char *id, int64_t version, const char *kind, json_t *alert,
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

int gw__severity_of(const json_t *alert)
{
	const char *s = json_string_value(json_object_get(alert, "severity"));
	return s ? gw_severity_parse(s) : -1;
}

/* One more delivery of run in sk's queue.  Without memory for it the
 * count is given up (qruns_lost) until the queue is empty again. */
static void qrun_add(struct sink *sk, const char *run)
{
	size_t len = strlen(run);
	uint32_t i;
	char *copy = NULL;
	if (sk->qruns_lost)
		return;
	if (gw_strtab_find(&sk->qruns, run, len, &i) == 0) {
		sk->qrun[i].n++;
		return;
	}
	if (gw_grow((void **)&sk->qrun, &sk->qrun_cap, sk->nqrun + 1, sizeof(*sk->qrun)) < 0 ||
	    !(copy = strdup(run)) || gw_strtab_put(&sk->qruns, copy, len, (uint32_t)sk->nqrun) < 0) {
		free(copy);
		sk->qruns_lost = true;
		return;
	}
	sk->qrun[sk->nqrun++] = (struct qrun){.run = copy, .n = 1};
}

static void qrun_del(struct sink *sk, const char *run)
{
	size_t len = strlen(run);
	uint32_t i;
	if (sk->qruns_lost || gw_strtab_find(&sk->qruns, run, len, &i) < 0 || --sk->qrun[i].n)
		return;
	gw_strtab_del(&sk->qruns, run, len, NULL);
	free(sk->qrun[i].run);
	if (i != --sk->nqrun) {
		sk->qrun[i] = sk->qrun[sk->nqrun];
		gw_strtab_set(&sk->qruns, sk->qrun[i].run, strlen(sk->qrun[i].run), i);
	}
}

/* The runs' counts of an empty queue (a given-up count starts again). */
static void qruns_reset(struct sink *sk)
{
	for (size_t i = 0; i < sk->nqrun; i++)
		free(sk->qrun[i].run);
	gw_strtab_free(&sk->qruns);
	free(sk->qrun);
	sk->qrun = NULL;
	sk->nqrun = sk->qrun_cap = 0;
	sk->qruns_lost = false;
}

bool gw__q_all_runs_met(const struct sink *sk, size_t met)
{
	return !sk->qruns_lost && met >= sk->nqrun;
}

void gw__q_insert_after(struct sink *sk, struct delivery *at, struct delivery *d)
{
	d->sk = sk;
	d->prev = at;
	d->next = at->next;
	at->next->prev = d;
	at->next = d;
	sk->queued++;
	qrun_add(sk, d->ev->run);
}

void gw__q_append(struct sink *sk, struct delivery *d)
{
	gw__q_insert_after(sk, sk->q.prev, d);
}

void gw__q_remove_free(struct delivery *d)
{
	d->prev->next = d->next;
	d->next->prev = d->prev;
	if (--d->sk->queued)
		qrun_del(d->sk, d->ev->run);
	else
		qruns_reset(d->sk);
	gw__event_unref(d->ev);
	json_decref(d->previous);
	free(d);
}

void gw__put_state(struct sink *sk, const struct delivery *d, const char *state, long status,
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

struct active *gw__active_find(struct sink *sk, const char *id, struct active ***link)
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

void gw__active_drop(struct sink *sk, const char *id)
{
	struct active **link, *a = gw__active_find(sk, id, &link);
	if (!a)
		return;
	*link = a->next;
	json_decref(a->alert);
	free(a);
}

json_t *gw__active_set(struct sink *sk, const char *id, int64_t version, json_t *alert,
                       uint64_t next_ms)
{
	struct active *a = gw__active_find(sk, id, NULL);
	json_t *prev = NULL;
	if (!a) {
		a = calloc(1, sizeof(*a));
		if (!a)
			return NULL;
		gw_strlcpy(a->alert_id, id, sizeof(a->alert_id));
		a->next = sk->active;
		sk->active = a;
	} else if (gw__severity_of(a->alert) != gw__severity_of(alert)) {
		prev = json_incref(a->alert);
	}
	json_decref(a->alert);
	a->alert = json_incref(alert);
	a->version = version;
	a->next_ms = next_ms;
	return prev;
}

/* (An ack's snapshot says so; an open's, an update's or an unack's does
 * not.) */
bool gw__acked_in(const json_t *alert)
{
	return json_is_number(json_object_get(alert, "acked_at"));
}

/* (An open or update clears it.) */
void gw__active_ack(struct sink *sk, const char *id, bool acked)
{
	struct active *a = gw__active_find(sk, id, NULL);
	if (a)
		a->acked = acked;
}
