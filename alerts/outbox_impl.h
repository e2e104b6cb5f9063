/*
 * outbox_impl: what the outbox's parts share (internal; users see
 * outbox.h).  outbox.c has the data and the small operations on it (the
 * known alerts, events, a sink's queue and its open alerts); the parts
 * build on it: outbox_send.c sends (the per-sink pump, retries, repeats,
 * the log's budget), outbox_events.c takes events in (alerts,
 * acknowledgements, commits, deleted runs), outbox_start.c starts from
 * the database, reports and stops.
 *
 * Data: an `event` is one alert event with its JSON snapshot, shared by
 * the sinks it goes to; a `delivery` is one event at one sink and sits in
 * that sink's queue in event order; an `active` is an alert open at a
 * sink, repeated; a `known` is an alert that can still change, with its
 * version and state.
 */
#ifndef GW_OUTBOX_IMPL_H
#define GW_OUTBOX_IMPL_H

#include "outbox.h"

#include "curl_uv.h"
#include "strtab.h"

#include <stdbool.h>
#include <stdint.h>

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

/* A run with deliveries in a sink's queue, and how many (outbox.c). */
struct qrun {
	char *run;
	size_t n;
};

struct sink {
	struct gw_outbox *ob;
	struct gw_sink_cfg *cfg;
	uv_timer_t timer;
	struct delivery q;         /* list head */
	size_t queued, inflight;
	/* the runs in the queue: the pump's walk stops once it has met every
	 * one, so a backlog of one run's deliveries (a sink down for long)
	 * costs a pump one step, not one step a delivery */
	struct gw_strtab qruns;    /* run -> index in qrun */
	struct qrun *qrun;
	size_t nqrun, qrun_cap;
	bool qruns_lost;           /* an allocation failed: walk it all */
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
	/* the latest event this daemon decided (none since its start: `kind`
	 * NULL, and the row as stored is the latest): what an acknowledgement
	 * answers with over a row read before it (outbox_events.c) */
	const char *kind;          /* "open", "update", "resolve", "ack", "unack" (static) */
	double raised_at;          /* its wall clock */
	double acked_at;           /* acknowledged: when (NaN: not) */
	char *acked_by, *ack_note; /* acknowledged: by whom, why (NULL: not said) */
	char *unacked_by;          /* withdrawn: by whom (NULL: not said) */
	uint64_t seq;              /* the store sequence of its rows (0: none queued) */
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

/* ---- outbox.c: the data --------------------------------------------------------- */

uint64_t gw__outbox_rng(struct gw_outbox *ob);

/* The entry of alert id of run `run`, created (version 0) if new; NULL
 * when out of memory. */
struct known *gw__known_get(struct gw_outbox *ob, const char *id, const char *run);
/* The entry of alert id while it is open; NULL when resolved or unknown. */
struct known *gw__known_open(const struct gw_outbox *ob, const char *id);
/* Drop entry i (the last one takes its place). */
void gw__known_drop(struct gw_outbox *ob, size_t i);
void gw__known_free(struct known *k);
/* What k says of its latest event: kind (static), its wall clock, and, for
 * an acknowledgement, when, by whom and why (a withdrawal: by whom). */
void gw__known_set(struct known *k, const char *kind, double at, const char *by,
                   const char *note);

/* A new event (one reference) around alert (reference taken over), or
 * NULL; and dropping a reference. */
struct event *gw__event_new(const char *id, int64_t version, const char *kind, json_t *alert,
                            double created);
void gw__event_unref(struct event *ev);
/* The severity an alert snapshot names (-1 if none). */
int gw__severity_of(const json_t *alert);

/* A sink's queue: insert after `at` (the list head: at the front), append,
 * remove and free. */
void gw__q_insert_after(struct sink *sk, struct delivery *at, struct delivery *d);
void gw__q_append(struct sink *sk, struct delivery *d);
void gw__q_remove_free(struct delivery *d);
/* Has a walk of sk's queue that met `met` distinct runs met every run in it
 * (false when the runs' count was given up)? */
bool gw__q_all_runs_met(const struct sink *sk, size_t met);
/* Record a delivery's state in SQLite (through the writer queue; not for a
 * repeat). */
void gw__put_state(struct sink *sk, const struct delivery *d, const char *state, long status,
                   const char *error);

/* The alerts open at a sink: find (and its link), drop, remember or
 * refresh (returns the snapshot it replaced if the severity differs, a new
 * reference, for Alertmanager), mark acknowledged or not. */
struct active *gw__active_find(struct sink *sk, const char *id, struct active ***link);
void gw__active_drop(struct sink *sk, const char *id);
json_t *gw__active_set(struct sink *sk, const char *id, int64_t version, json_t *alert,
                       uint64_t next_ms);
void gw__active_ack(struct sink *sk, const char *id, bool acked);
/* Does this snapshot say the alert is acknowledged? */
bool gw__acked_in(const json_t *alert);

/* ---- outbox_send.c: sending ------------------------------------------------------- */

/* Start what may start at sk and arm its timer for the next due time. */
void gw__outbox_pump(struct sink *sk);
/* The sink's timer callback (data: the sink). */
void gw__outbox_on_timer(uv_timer_t *t);
/* Say what the log's budget held back (at stop). */
void gw__outbox_log_held(struct sink *sk, uint64_t now);

/* ---- outbox_events.c: events in --------------------------------------------------- */

/* Resolve, saying why, the open alerts of the wall-clock detectors that
 * the daemon before left (their watcher, the run's live state, is gone);
 * the run's silence is judged again once it sends.  A start-up read. */
void gw__outbox_resolve_left_open(struct gw_outbox *ob, const char *db_path);

#endif
