/*
 * ingest: parse, detect, queue; acknowledgement and back-pressure (see
 * ingest.h for the contract; the counters are ingest_counters.c's).
 *
 * Order matters: the engine's hooks queue a segment's row and an alert
 * (with its outbox rows) before the record that caused them, and all of
 * them before the next line, so the database reads in the order things
 * happened; the store is held from the engine's feed to the record's row,
 * so all of them commit in one transaction and an alert is never committed
 * without the record it cites (tests/integration/test_crash.py).
 * (Some 620 lines: the record path from one line to its acknowledgement;
 * each step holds the store for the next, so they stay in one file.)
 */
#include "ingest.h"

#include "auth.h"
#include "config.h"
#include "log.h"
#include "outbox.h"
#include "outbox_db.h"
#include "sink.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STREAM_SHARE_PCT 50   /* of max_pending_bytes, for streams, files and UDP */

/* ---- engine hooks ------------------------------------------------------------- */

static void on_segment(void *data, const struct gw_segment_info *si)
{
	struct gw_ingest *in = data;
	in->n.segments++;
	if (in->o.observe.on_segment)
		in->o.observe.on_segment(in->o.observe.data, si);
	if (!in->store)
		return;
	gw_store_put_segment(in->store, si->run, si->seg, gw_seg_reason_name(si->reason),
	                     si->first_step, si->restart_step, si->line, si->ts, gw_wall_now());
	if (si->seg > 1)
		gw_log_info("run %s: segment %" PRId64 " starts at step %" PRId64 " (%s%s)", si->run,
		            si->seg, si->first_step, gw_seg_reason_name(si->reason),
		            si->restart_step >= 0 ? ", restart from a checkpoint" : "");
}

/* A run's lines were recognised as several processes' (engine.h
 * "Interleaved writers"): said once in the log and noted on the run. */
static void on_writers(void *data, const struct gw_writers_info *w)
{
	struct gw_ingest *in = data;
	gw_log_warn("run %s: from step %" PRId64 " (line %" PRIu64 ") its lines look like several "
	            "processes logging the same run (every step repeated by several writers: "
	            "one line per rank of a distributed job?); from now on their repeats are kept "
	            "apart: they open no segment and do not reach the detectors. Send from rank 0 "
	            "only, or add \"rank\" to each line (docs/wire-format.md)", w->run, w->step, w->line);
	if (!in->store)
		return;
	char note[160];
	snprintf(note, sizeof(note),
	         "{\"interleaved\":true,\"step\":%" PRId64 ",\"line\":%" PRIu64
	         ",\"segment\":%" PRId64 ",\"noticed\":%.3f}",
	         w->step, w->line, w->seg, gw_wall_now());
	gw_store_put_writers(in->store, w->run, note);
}

/* A run ended: kept on its row, so a restart does not watch its silence
 * (runs.c). */
static void on_ended(void *data, const struct gw_end_info *en)
{
	struct gw_ingest *in = data;
	if (!in->store)
		return;
	gw_store_put_run_end(in->store, en->run, en->seg, en->step, en->reason, gw_wall_now());
	gw_log_debug("run %s ended at step %" PRId64 " (%s)", en->run, en->step, en->reason);
}

/* The alert's row in the alerts table: open (insert or reopen), update or
 * resolve. */
static uint64_t put_alert(struct gw_store *st, const struct gw_alert *a)
{
	double wall = isnan(a->wall) ? gw_wall_now() : a->wall;
	char *ev = a->evidence ? json_dumps(a->evidence, JSON_COMPACT | JSON_REAL_PRECISION(12))
	                       : strdup("{}");
	if (!ev)
		return 0;
	const struct gw_sv id = gw_sv_text(a->id), summary = gw_sv_text(a->summary ? a->summary : ""),
	                   cause = gw_sv_text(a->cause), action = gw_sv_text(a->action),
	                   evidence = gw_sv_text(ev), sev = gw_sv_text(gw_severity_name(a->severity));
	uint64_t seq;
	if (a->kind == GW_ALERT_OPEN) {
		const struct gw_sv v[] = {
			id, gw_sv_run(a->run, strlen(a->run)), gw_sv_int(a->seg), gw_sv_int(a->step),
			gw_sv_int((int64_t)a->line), gw_sv_text(a->detector), sev, summary, cause, action,
			evidence, gw_sv_real(a->ts), gw_sv_real(wall),
		};
		seq = gw_store_put(st, NULL, GW_STORE_ALERT_OPEN, v, GW_ARRAY_SIZE(v));
	} else if (a->kind == GW_ALERT_UPDATE) {
		const struct gw_sv v[] = {
			id, sev, summary, cause, action, evidence, gw_sv_real(wall), gw_sv_int(a->step),
			gw_sv_int((int64_t)a->line),
		};
		seq = gw_store_put(st, NULL, GW_STORE_ALERT_UPDATE, v, GW_ARRAY_SIZE(v));
	} else {
		const struct gw_sv v[] = {id, gw_sv_real(wall), gw_sv_int(a->step),
		                          gw_sv_text(a->summary && *a->summary ? a->summary : NULL)};
		seq = gw_store_put(st, NULL, GW_STORE_ALERT_RESOLVE, v, GW_ARRAY_SIZE(v));
	}
	free(ev);
	return seq;
}

static void on_alert(void *data, const struct gw_alert *a)
{
	struct gw_ingest *in = data;
	if (in->o.observe.on_alert)
		in->o.observe.on_alert(in->o.observe.data, a);
	if (!in->store)
		return;
	/* the alert and its outbox rows commit together or not at all: an
	 * alert stored without them would never be delivered */
	gw_store_hold(in->store);
	put_alert(in->store, a);
	gw_outbox_alert(in->outbox, a);   /* after the alert: it is stored first */
	gw_store_release(in->store);
	if (a->kind == GW_ALERT_OPEN) {
		int k = gw_det_index(a->detector);
		if (k >= 0)
			in->n.alerts[k][a->severity]++;
		gw_log_info("alert %s [%s] %s run %s step %" PRId64 ": %s", a->id,
		            gw_severity_name(a->severity), a->detector, a->run, a->step, a->summary);
	} else {
		gw_log_info("alert %s %s", a->id, gw_alert_kind_name(a->kind));
	}
}


/* ---- commit notifications --------------------------------------------------------- */

static void on_commit(uv_async_t *a)
{
	struct gw_ingest *in = a->data;
	uint64_t done = gw_store_committed(in->store);
	gw_outbox_committed(in->outbox, done);
	struct gw_store_stats st;
	gw_store_stats(in->store, &st);
	/* answer every waiter that is now covered, or all of them with the
	 * cause when the last commit failed (they must not hang on a full disk) */
	struct gw_commit_waiter *ready = NULL;
	for (struct gw_commit_waiter **p = &in->waiters; *p;) {
		struct gw_commit_waiter *w = *p;
		if (w->seq <= done || st.last_error) {
			*p = w->next;
			w->next = ready;
			ready = w;
		} else {
			p = &w->next;
		}
	}
	while (ready) {
		struct gw_commit_waiter *w = ready;
		ready = w->next;
		w->error = w->seq <= done ? 0 : st.last_error;
		w->why = w->error ? st.last_error_msg : NULL;
		w->fn(w);
	}
	if (!gw_ingest_congested(in)) {
		while (in->paused.next != &in->paused) {
			struct gw_paused *p = in->paused.next;
			gw_ingest_unpause(in, p);
			p->resume(p);
		}
	}
}

static void store_notify(void *data)
{
	uv_async_send(data);
}

void gw_ingest_wait_commit(struct gw_ingest *in, struct gw_commit_waiter *w)
{
	w->error = 0;
	w->why = NULL;
	if (gw_store_committed(in->store) >= w->seq) {
		w->fn(w);
		return;
	}
	w->next = in->waiters;
	in->waiters = w;
}

void gw_ingest_cancel_wait(struct gw_ingest *in, struct gw_commit_waiter *w)
{
	for (struct gw_commit_waiter **p = &in->waiters; *p; p = &(*p)->next) {
		if (*p == w) {
			*p = w->next;
			return;
		}
	}
}

void gw_ingest_barrier(struct gw_ingest *in, struct gw_commit_waiter *w)
{
	/* every write queued, not only lines: a route's own (an ack, a
	 * deletion) is what a read again after it must see */
	w->seq = gw_store_queued(in->store);
	if (gw_store_committed(in->store) < w->seq)
		gw_store_flush(in->store);
	gw_ingest_wait_commit(in, w);
}

bool gw_ingest_congested(const struct gw_ingest *in)
{
	return gw_store_over(in->store, STREAM_SHARE_PCT);
}

bool gw_ingest_full(const struct gw_ingest *in)
{
	return gw_store_over(in->store, 100);
}

int gw_ingest_store_error(const struct gw_ingest *in, char *why, size_t whylen)
{
	struct gw_store_stats st;
	gw_store_stats(in->store, &st);
	if (st.last_error && why)
		gw_strlcpy(why, st.last_error_msg, whylen);
	return st.last_error;
}

void gw_ingest_pause(struct gw_ingest *in, struct gw_paused *p)
{
	if (p->linked)
		return;
	p->next = in->paused.next;
	p->prev = &in->paused;
	in->paused.next->prev = p;
	in->paused.next = p;
	p->linked = true;
}

void gw_ingest_unpause(struct gw_ingest *in, struct gw_paused *p)
{
	if (!p->linked)
		return;
	p->prev->next = p->next;
	p->next->prev = p->prev;
	p->linked = false;
}

/* ---- set-up ---------------------------------------------------------------------- */

static int open_outbox(struct gw_ingest *in, char *err, size_t errlen)
{
	struct gw_sink_cfg *sinks;
	size_t n;
	int rc = gw_sink_parse(in->cfg->sinks, &sinks, &n, err, errlen);
	if (rc < 0)
		return rc;
	char api[256];
	gw_cfg_link_base(in->cfg, api, sizeof(api));
	struct gw_outbox_opts o = {
		.loop = in->loop,
		.store = in->store,
		.db_path = in->cfg->db_path,
		.sinks = sinks,
		.n_sinks = n,
		.api_base = api[0] ? api : NULL,
	};
	return gw_outbox_start(&o, &in->outbox, err, errlen);
}

/* Stall alerts left open by the daemon that ran before: the silence of a
 * run is watched by the live state of the run, which is gone, so the alert
 * would stay open (and be re-posted to Alertmanager) for ever.  They are
 * resolved, saying why; the run's silence is judged again once it sends. */
static void orphan_row(void *ctx, sqlite3_stmt *row)
{
	struct gw_ingest *in = ctx;
	const char *id = (const char *)sqlite3_column_text(row, 0);
	const char *run = (const char *)sqlite3_column_text(row, 1);
	const char *det = (const char *)sqlite3_column_text(row, 5);
	if (!id || !run || !det || strlen(id) >= sizeof(((struct gw_alert *)0)->id))
		return;
	struct gw_alert a = {
		.kind = GW_ALERT_RESOLVE,
		.run = run,
		.seg = sqlite3_column_int64(row, 2),
		.step = sqlite3_column_int64(row, 3),
		.line = (uint64_t)sqlite3_column_int64(row, 4),
		.detector = det,
		.severity = (enum gw_severity)gw_severity_parse((const char *)sqlite3_column_text(row, 6)),
		.summary = "gradwatchd restarted: the run's silence is no longer watched; it is judged "
		           "again from the run's next line",
		.ts = NAN,
		.wall = NAN,
	};
	gw_strlcpy(a.id, id, sizeof(a.id));
	if ((int)a.severity < 0)
		a.severity = GW_SEV_WARNING;
	on_alert(in, &a);
}

static void resolve_orphan_silences(struct gw_ingest *in)
{
	char names[256] = "", err[256];
	size_t o = 0;
	/* the wall-clock detectors: those with a tick */
	for (size_t d = 0; gw_det_registry[d]; d++)
		if (gw_det_registry[d]->on_tick && o + 80 < sizeof(names))
			o += (size_t)snprintf(names + o, sizeof(names) - o, "%s'%s'", o ? "," : "",
			                      gw_det_registry[d]->name);
	if (!o)
		return;
	char sql[512];
	snprintf(sql, sizeof(sql), "SELECT a.id, r.name, a.seg, a.step, a.line, a.detector, a.severity "
	         "FROM alerts a JOIN runs r ON r.id = a.run_id WHERE a.state = 'open' AND "
	         "a.detector IN (%s)", names);
	if (gw_store_read_each(in->cfg->db_path, sql, NULL, 0, orphan_row, in, err, sizeof(err)) < 0)
		gw_log_warn("could not read the open silences of the daemon before: %s", err);
}

int gw_ingest_start(struct gw_ingest *in, const struct gw_ingest_opts *o, char *err,
                   size_t errlen)
{
	const struct gw_cfg *cfg = o->cfg;
	memset(in, 0, sizeof(*in));
	in->o = *o;
	in->loop = o->loop;
	in->cfg = cfg;
	in->store = o->store;
	in->paused.next = in->paused.prev = &in->paused;
	if (in->loop) {
		uv_async_init(in->loop, &in->commit_async, on_commit);
		in->commit_async.data = in;
	}
	if (in->store)
		gw_store_set_notify(in->store, store_notify, &in->commit_async);

	struct gw_engine_opts eo = cfg->engine;
	eo.overrides = cfg->overrides;
	eo.n_overrides = cfg->n_overrides;
	eo.live = !o->replay;
	eo.max_runs = 0;   /* live: runs.c keeps the active runs under limits.max_runs */
	struct gw_engine_hooks hooks = {.data = in, .on_alert = on_alert, .on_segment = on_segment,
	                                .on_writers = on_writers, .on_ended = on_ended};
	in->engine = gw_engine_new(&eo, &hooks);
	in->wire = gw_wire_new(cfg->aliases);
	if (!in->engine || !in->wire)
		return gw_errf(err, errlen, -ENOMEM, "out of memory");
	if (o->replay)
		return 0;
	char rerr[256];
	if (gw_runs_load(&in->runs, cfg->db_path, rerr, sizeof(rerr)) < 0)
		gw_log_warn("could not read where known runs stood: %s", rerr);
	int rc = open_outbox(in, err, errlen);
	if (rc == 0) {
		resolve_orphan_silences(in);
		gw_runs_restore(in, gw_wall_now());
	}
	return rc;
}

void gw_ingest_tick(struct gw_ingest *in, double now)
{
	gw_engine_tick(in->engine, now);
	gw_runs_tick(in, now);
}

void gw_ingest_stop(struct gw_ingest *in)
{
	gw_outbox_stop(in->outbox);
	if (in->store)
		gw_store_set_notify(in->store, NULL, NULL);
	if (in->loop && !uv_is_closing((uv_handle_t *)&in->commit_async))
		uv_close((uv_handle_t *)&in->commit_async, NULL);
}

void gw_ingest_free(struct gw_ingest *in)
{
	gw_outbox_free(in->outbox);
	in->outbox = NULL;
	gw_engine_free(in->engine);
	in->engine = NULL;
	gw_runs_free(&in->runs);
	gw_wire_free(in->wire);
	in->wire = NULL;
	in->waiters = NULL;
}

/* ---- one line --------------------------------------------------------------------- */

static void count_reject(struct gw_ingest *in, enum gw_transport t, struct gw_wire_err *e,
                         enum gw_wire_reason r)
{
	e->reason = r;
	in->n.rejected[t][r]++;
}

int gw_ingest_record(struct gw_ingest_src *s, const struct gw_rec *rec, uint64_t lineno,
                     struct gw_wire_err *e)
{
	struct gw_ingest *in = s->in;
	if (s->token && !gw_auth_allows_run(s->token, rec->run)) {
		*e = (struct gw_wire_err){.column = 0};
		gw_strlcpy(e->field, "run", sizeof(e->field));
		snprintf(e->msg, sizeof(e->msg), "unauthorized: this token may not write run \"%.*s\"",
		         (int)gw_utf8_cut(rec->run, GW_MIN(rec->run_len, 100)), rec->run);
		count_reject(in, s->t, e, GW_REJ_UNAUTHORIZED);
		return -EINVAL;
	}
	double now = !in->o.replay ? gw_wall_now() : in->o.live_clock ? rec->ts : NAN;
	int64_t seg = 0;
	uint64_t seq = 0;
	int rc = in->o.replay ? 0 : gw_runs_activate(in, rec->run, rec->run_len);
	/* what the engine queues because of this line (a new segment's row, an
	 * alert with its outbox rows) commits in one transaction with the line
	 * itself: a crash never leaves an alert citing a record it lost */
	if (in->store)
		gw_store_hold(in->store);
	if (rc == 0)
		rc = gw_engine_feed(in->engine, rec, lineno, now, &seg);
	if (rc == 0 && in->store)
		seq = gw_engine_kept_apart(in->engine) ? gw_store_put_rank_line(in->store, rec, lineno, now)
		    : rec->event ? gw_store_put_event(in->store, rec, seg, lineno, now)
		                 : gw_store_put_record(in->store, rec, seg, lineno, now);
	if (in->store)
		gw_store_release(in->store);
	if (rc < 0) {
		*e = (struct gw_wire_err){.column = 0};
		gw_strlcpy(e->field, "run", sizeof(e->field));
		snprintf(e->msg, sizeof(e->msg), "%s",
		         rc == -ENOSPC ? "bad_run: too many runs (limits.max_runs reached)"
		                       : "bad_run: out of memory for a new run");
		count_reject(in, s->t, e, GW_REJ_BAD_RUN);
		return -EINVAL;
	}
	if (in->store) {
		if (!seq) {
			*e = (struct gw_wire_err){.column = 0};
			snprintf(e->msg, sizeof(e->msg), "out of memory queueing the line");
			count_reject(in, s->t, e, GW_REJ_SYNTAX);
			return -EINVAL;
		}
		s->last_seq = seq;
	}
	if (rec->event)
		in->n.events[s->t]++;
	in->n.accepted[s->t]++;
	s->last_seg = seg;
	if (rec->run_len < sizeof(s->last_run) &&
	    (s->last_run[rec->run_len] != '\0' || memcmp(s->last_run, rec->run, rec->run_len) != 0)) {
		memcpy(s->last_run, rec->run, rec->run_len);
		s->last_run[rec->run_len] = '\0';
	}
	return 0;
}

/* Parse, detect, queue one NDJSON line; 0 accepted, -EINVAL rejected (*e
 * filled), -ENODATA blank. */
static int ingest_line(struct gw_ingest_src *s, const char *line, size_t len, uint64_t lineno,
                       struct gw_wire_err *e)
{
	struct gw_ingest *in = s->in;
	struct gw_rec rec;
	int rc = gw_wire_parse(in->wire, line, len, s->default_run, &rec, e);
	if (rc == -ENODATA)
		return rc;
	if (rc < 0) {
		if (rc == -ENOMEM) {
			e->column = 0;
			e->field[0] = '\0';
			snprintf(e->msg, sizeof(e->msg), "out of memory");
			e->reason = GW_REJ_SYNTAX;
		}
		in->n.rejected[s->t][e->reason]++;
		return -EINVAL;
	}
	return gw_ingest_record(s, &rec, lineno, e);
}

/* The outcome of one line: counted on the source, a rejection reported. */
static void outcome(struct gw_ingest_src *s, int rc, uint64_t lineno, const struct gw_wire_err *e)
{
	if (rc == 0) {
		s->accepted++;
	} else if (rc == -EINVAL) {
		s->rejected++;
		if (s->on_reject)
			s->on_reject(s, lineno, e);
	}
}

static int on_line(void *data, const char *line, size_t len, uint64_t lineno,
                   enum gw_line_status st)
{
	struct gw_ingest_src *s = data;
	struct gw_ingest *in = s->in;
	struct gw_wire_err e = {.reason = GW_REJ_SYNTAX};
	int rc;
	if (st == GW_LINE_TOO_LONG) {
		snprintf(e.msg, sizeof(e.msg),
		         "line_too_long: the line is longer than %zu bytes (limits.max_line_bytes); skipped",
		         len);
		count_reject(in, s->t, &e, GW_REJ_TOO_LONG);
		rc = -EINVAL;
	} else {
		rc = ingest_line(s, line, len, lineno, &e);
		if (rc == -EINVAL && st == GW_LINE_TRUNCATED && !s->eof_ends_line) {
			/* the peer went away inside this line: count it as truncated
			 * rather than as whatever the parser tripped over */
			char m[sizeof(e.msg) + 64];
			snprintf(m, sizeof(m), "truncated: the connection closed inside this line (%s)",
			         e.msg);
			in->n.rejected[s->t][e.reason]--;
			count_reject(in, s->t, &e, GW_REJ_TRUNCATED);
			gw_strlcpy(e.msg, m, sizeof(e.msg));
		}
	}
	outcome(s, rc, lineno, &e);
	return 0;
}

/* ---- sources ------------------------------------------------------------------------ */

void gw_ingest_src_init(struct gw_ingest_src *s, struct gw_ingest *in, enum gw_transport t,
                        uint64_t first_line)
{
	memset(s, 0, sizeof(*s));
	s->in = in;
	s->t = t;
	gw_lines_init(&s->lines, in->cfg->max_line);
	s->lines.lineno = first_line;
}

static int reader_rec(void *data, const struct gw_rec *rec, uint64_t line)
{
	struct gw_ingest_src *s = data;
	struct gw_wire_err e = {.reason = GW_REJ_SYNTAX};
	int rc = gw_ingest_record(s, rec, line, &e);
	outcome(s, rc, line, &e);
	return rc == -EINVAL ? 0 : rc;
}

static void reader_error(void *data, uint64_t line, const struct gw_wire_err *e)
{
	struct gw_ingest_src *s = data;
	s->in->n.rejected[s->t][e->reason]++;
	outcome(s, -EINVAL, line, e);
}

int gw_ingest_src_reader(struct gw_ingest_src *s, const char *format, bool follow, char *err,
                         size_t errlen)
{
	const struct gw_reader_opts ro = {
		.aliases = s->in->cfg->aliases,
		.run = s->default_run,
		.format = format,
		.max_line = s->in->cfg->max_line,
		.follow = follow,
		.first_line = s->lines.lineno,
	};
	const struct gw_reader_sink sink = {.data = s, .on_rec = reader_rec, .on_error = reader_error};
	gw_reader_free(s->reader);
	s->reader = NULL;
	return gw_reader_new(&ro, &sink, &s->reader, err, errlen);
}

void gw_ingest_src_deinit(struct gw_ingest_src *s)
{
	gw_lines_free(&s->lines);
	gw_reader_free(s->reader);
	s->reader = NULL;
}

int gw_ingest_src_feed(struct gw_ingest_src *s, const char *p, size_t n)
{
	s->in->n.bytes[s->t] += n;
	s->fed += n;
	if (s->reader)
		return gw_reader_feed(s->reader, p, n);
	return gw_lines_feed(&s->lines, p, n, on_line, s);
}

int gw_ingest_src_finish(struct gw_ingest_src *s)
{
	if (s->reader)
		return gw_reader_finish(s->reader);
	return gw_lines_finish(&s->lines, on_line, s);
}

uint64_t gw_ingest_src_consumed(const struct gw_ingest_src *s)
{
	if (s->reader)
		return gw_reader_consumed(s->reader);
	return s->lines.discarding ? s->fed : s->fed - s->lines.len;
}

uint64_t gw_ingest_src_lines(const struct gw_ingest_src *s)
{
	return s->reader ? s->lines.lineno + gw_reader_lines(s->reader) : s->lines.lineno;
}

json_t *gw_ingest_err_json(uint64_t lineno, const struct gw_wire_err *e)
{
	/* a message quotes the input (field and run names, the bytes of a log
	 * file): what is not UTF-8 is written \xNN, or jansson would refuse
	 * the text and the client would never hear of the error */
	char msg[sizeof(e->msg) * 4], field[sizeof(e->field) * 4];
	gw_utf8_clean(msg, sizeof(msg), e->msg, strnlen(e->msg, sizeof(e->msg)));
	gw_utf8_clean(field, sizeof(field), e->field, strnlen(e->field, sizeof(e->field)));
	json_t *j = json_pack("{s:I, s:s, s:s}", "line", (json_int_t)lineno,
	                      "reason", gw_wire_reason_name(e->reason), "message", msg);
	if (j && field[0])
		json_object_set_new(j, "field", json_string(field));
	if (j && e->column)
		json_object_set_new(j, "column", json_integer((json_int_t)e->column));
	return j;
}

void gw_ingest_alloc_slab(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	static char slab[256 * 1024];
	(void)h;
	(void)hint;
	buf->base = slab;
	buf->len = sizeof(slab);
}
