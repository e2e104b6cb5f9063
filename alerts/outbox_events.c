/*
 * outbox_events: what comes into the outbox (see outbox.h): the engine's
 * alert events, acknowledgements, commits, deleted runs, and at start the
 * alerts left open by the daemon before.
 *
 * An alert event or an acknowledgement queues the alert's row in the
 * alerts table (alert_row.c), then its outbox row and one deliveries row
 * per sink that takes it (outbox_db.c), under one store hold: they commit
 * together or not at all, and nothing is sent before that commit.  The
 * table of known alerts (outbox.c) has every change decided so far,
 * committed or not: it is what an acknowledgement decides on.  A request
 * reads the alert's row after everything queued before it is committed;
 * another request's change decided after that read is not in the row but
 * is in the table, so the table decides, and the answer is the row with
 * the table's latest state over it, given once that state is committed.
 * Nothing is read again.
 */
#include "outbox_impl.h"
#include "outbox_db.h"

#include "alert_row.h"
#include "detector.h"
#include "log.h"
#include "registry.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
			gw__q_remove_free(o);
		} else if (!o->attempts && sk->cfg->group_wait_ms && o->due_ms > now && !ack_kind) {
			d->due_ms = o->due_ms;
			if (o->previous && !d->previous)
				d->previous = json_incref(o->previous);
			gw__put_state(sk, o, "superseded", 0, NULL);
			sk->n_superseded++;
			if (!at)
				at = o->prev;  /* take its place: the run's order stays */
			gw__q_remove_free(o);
		}
	}
	bool resolve = strcmp(ev->kind, "resolve") == 0;
	if (resolve) {
		gw__active_drop(sk, ev->alert_id);
	} else {
		json_t *prev = gw__active_set(sk, ev->alert_id, ev->version, ev->alert, UINT64_MAX);
		if (prev && sk->cfg->type == &gw_sink_alertmanager && !d->previous)
			d->previous = prev;
		else
			json_decref(prev);
		gw__active_ack(sk, ev->alert_id, gw__acked_in(ev->alert));
	}
	gw__q_insert_after(sk, at ? at : sk->q.prev, d);
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
		if (!gw_sink_matches(sk->cfg, run, det, gw__severity_of(snap)))
			continue;
		if (!ev) {
			ev = gw__event_new(id, version, kind, json_incref(snap), wall);
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
	gw__event_unref(ev);
	/* commit now rather than at the interval: the alert waits for it */
	request_flush(ob, seq);
	/* a group wait of 0 with an already-covered seq (never, in practice)
	 * would be sent on the next commit; arm the timers for the rest */
	for (size_t i = 0; i < ob->n; i++)
		gw__outbox_pump(&ob->sinks[i]);
	return seq;
}

/* Set the acknowledgement's fields of alert object a: kind, version,
 * raised_at, and acked_at/acked_by/ack_note (an ack) or unacked_by (an
 * unack) set or removed.  by and note may be NULL. */
static void ack_fields(json_t *a, bool ack, int64_t version, double at, const char *by,
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

void gw_outbox_alert(struct gw_outbox *ob, const struct gw_alert *a)
{
	/* the row first, also while closing: it commits with the record that
	 * raised it (the caller's hold), delivered or not */
	gw_store_hold(ob->store);
	uint64_t row = gw_alert_row_put(ob->store, a);
	if (!row)
		gw_log_err("alerts: out of memory storing %s %s", a->id, gw_alert_kind_name(a->kind));
	struct known *k = ob->closing ? NULL : gw__known_get(ob, a->id, a->run);
	if (!k) {
		if (!ob->closing)
			gw_log_err("alerts: out of memory; %s %s is not delivered", a->id,
			           gw_alert_kind_name(a->kind));
		gw_store_release(ob->store);
		return;
	}
	int64_t version = ++k->version;
	k->open = a->kind != GW_ALERT_RESOLVE;
	k->acked = false;   /* opened again or escalated: page again */
	gw__known_set(k, gw_alert_kind_name(a->kind), isnan(a->wall) ? gw_wall_now() : a->wall,
	              NULL, NULL);
	k->seq = row;
	json_t *snap = ob->n ? gw_alert_event_json(a, version, k->firing) : NULL;
	char *text = snap ? json_dumps(snap, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
	if (ob->n && !text) {
		gw_log_err("alerts: out of memory; %s %s is not delivered", a->id,
		           gw_alert_kind_name(a->kind));
	} else if (ob->n) {
		json_decref(k->firing);
		k->firing = a->kind == GW_ALERT_RESOLVE ? NULL : json_incref(snap);
		uint64_t sent = emit(ob, a->id, version, gw_alert_kind_name(a->kind), snap, text);
		k->seq = GW_MAX(k->seq, sent);
	}
	/* (no sink: only the table's state; nothing is sent) */
	gw_store_release(ob->store);
	free(text);
	json_decref(snap);
}

/* The alert as the table has it: row (as read) with what k says of the
 * latest event over it, when this daemon decided one.  New reference, or
 * NULL when out of memory. */
static json_t *as_now(const struct known *k, const json_t *row)
{
	json_t *a = json_deep_copy(row);
	if (!a || !k->kind)
		return a;
	bool ack = strcmp(k->kind, "ack") == 0;
	ack_fields(a, ack, k->version, k->raised_at, ack ? k->acked_by : k->unacked_by,
	           k->ack_note);
	if (!ack && strcmp(k->kind, "unack"))
		json_object_set_new(a, "kind", json_string(k->kind));
	json_object_set_new(a, "state", json_string(k->open ? "open" : "resolved"));
	return a;
}

int gw_outbox_ack(struct gw_outbox *ob, const char *id, bool ack, double at, const char *by,
                  const char *note, const json_t *row, json_t **answer, uint64_t *seq)
{
	*answer = NULL;
	*seq = 0;
	if (ob->closing)
		return -ESHUTDOWN;
	struct known *k = gw__known_open(ob, id);
	if (!k)
		return -ENOENT;
	if (k->acked == ack) {   /* already so: nothing written, nothing sent */
		*seq = k->seq;
		return (*answer = as_now(k, row)) ? -EALREADY : -ENOMEM;
	}
	/* the last snapshot sent, or (opened while no sink took it) the row;
	 * the answer is the row, as the table now has it */
	json_t *snap = ob->n ? json_deep_copy(k->firing ? k->firing : row) : NULL;
	char *text = NULL;
	int64_t version = k->version + 1;
	if (snap) {
		ack_fields(snap, ack, version, at, by, note);
		text = json_dumps(snap, JSON_COMPACT | JSON_REAL_PRECISION(17));
	}
	if (ob->n && !text) {
		json_decref(snap);
		return -ENOMEM;
	}
	gw_store_hold(ob->store);
	uint64_t s = gw_alert_row_ack(ob->store, id, ack, at, by, note);
	if (!s) {
		gw_store_release(ob->store);
		json_decref(snap);
		free(text);
		return -ENOMEM;
	}
	k->version = version;
	k->acked = ack;
	gw__known_set(k, ack ? "ack" : "unack", at, by, note);
	k->seq = s;
	if (snap) {
		json_decref(k->firing);
		k->firing = json_incref(snap);
		uint64_t sent = emit(ob, id, version, ack ? "ack" : "unack", snap, text);
		k->seq = GW_MAX(s, sent);
		/* sinks the alert does not go to still see it acknowledged (no
		 * event) */
		for (size_t i = 0; i < ob->n; i++)
			gw__active_ack(&ob->sinks[i], id, ack);
	}
	gw_store_release(ob->store);
	free(text);
	json_decref(snap);
	*seq = k->seq;
	*answer = as_now(k, row);
	return *answer ? 0 : -ENOMEM;
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
			gw__outbox_pump(&ob->sinks[i]);
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
					gw__q_remove_free(d);
			}
			gw__active_drop(sk, k->id);
			queued = queued || queued_at(sk, k->id);
		}
		k->open = k->acked = false;
		if (queued)
			i++;
		else
			gw__known_drop(ob, i);
	}
}

/* ---- after a restart ------------------------------------------------------------------ */

struct left_ctx {
	struct gw_outbox *ob;
	size_t n;
};

static void resolve_one(void *ctx, const struct gw_alert *open)
{
	struct left_ctx *c = ctx;
	struct gw_alert a = *open;
	a.summary = "gradwatchd restarted: the run's silence is no longer watched; it is judged "
	            "again from the run's next line";
	gw_outbox_alert(c->ob, &a);
	gw_log_info("alert %s resolve (%s, left open by the daemon before)", a.id, a.detector);
	c->n++;
}

void gw__outbox_resolve_left_open(struct gw_outbox *ob, const char *db_path)
{
	/* the wall-clock detectors: those with a tick */
	const char *names[GW_DET_MAX];
	size_t n = 0;
	for (size_t d = 0; gw_det_registry[d] && n < GW_DET_MAX; d++)
		if (gw_det_registry[d]->on_tick)
			names[n++] = gw_det_registry[d]->name;
	char err[256];
	struct left_ctx c = {.ob = ob};
	if (gw_alert_rows_open(db_path, names, n, resolve_one, &c, err, sizeof(err)) < 0)
		gw_log_warn("could not read the open silences of the daemon before: %s", err);
}
