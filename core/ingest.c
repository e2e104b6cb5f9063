/*
 * ingest: one record's way through the record path: detect, then queue,
 * and what the engine's hooks queue on the way (see ingest.h for the
 * contract).  The other parts build on this one through ingest_impl.h:
 * the sources that parse lines into records (ingest_src.c), commits and
 * back-pressure (ingest_commit.c), the counters' table
 * (ingest_counters.c), and the set-up with the run operations
 * (ingest_start.c).
 *
 * Order matters: the engine's hooks queue a segment's row and an alert
 * (with its outbox rows) before the record that caused them, and all of
 * them before the next line, so the database reads in the order things
 * happened; the store is held from the engine's feed to the record's row,
 * so all of them commit in one transaction and an alert is never committed
 * without the record it cites (tests/integration/test_crash.py).
 */
#include "ingest_impl.h"

#include "auth.h"
#include "clock.h"
#include "config.h"
#include "log.h"
#include "outbox.h"
#include "runs.h"
#include "store.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- engine hooks ------------------------------------------------------------- */

/* A run that rewinds in a loop must not write a log line per segment. */
static struct gw_log_budget seg_lines = GW_LOG_BUDGET(
	"\"segment starts\" line(s)", "gradwatch_segments_total counts every segment", 30);

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
	if (si->seg > 1) {
		gw_seg_cap_opened(&in->seg_cap, si->run, gw_mono_ms());
		gw_log_budgeted(&seg_lines, GW_LOG_INFO, "run %s: segment %" PRId64 " starts at step %"
		                PRId64 " (%s%s)", si->run, si->seg, si->first_step,
		                gw_seg_reason_name(si->reason),
		                si->restart_step >= 0 ? ", restart from a checkpoint" : "");
	}
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

static void on_alert(void *data, const struct gw_alert *a)
{
	struct gw_ingest *in = data;
	if (in->o.observe.on_alert)
		in->o.observe.on_alert(in->o.observe.data, a);
	/* its row and its deliveries (one transaction with this line's) */
	if (in->outbox)
		gw_outbox_alert(in->outbox, a);
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


void gw__ingest_hooks(struct gw_ingest *in, struct gw_engine_hooks *h)
{
	*h = (struct gw_engine_hooks){.data = in, .on_alert = on_alert, .on_segment = on_segment,
	                              .on_writers = on_writers, .on_ended = on_ended};
}

/* ---- one line --------------------------------------------------------------------- */

void gw__ingest_reject(struct gw_ingest *in, enum gw_transport t, struct gw_wire_err *e,
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
		gw__ingest_reject(in, s->t, e, GW_REJ_UNAUTHORIZED);
		return -EINVAL;
	}
	double now = !in->o.replay ? gw_wall_now() : in->o.live_clock ? rec->ts : NAN;
	int64_t seg = 0;
	uint64_t seq = 0;
	int rc = in->o.replay ? 0 : gw_runs_activate(in->runs, rec->run, rec->run_len);
	if (rc == 0 && gw_seg_cap_capped(&in->seg_cap, rec->run, rec->run_len) &&
	    gw_engine_would_open_segment(in->engine, rec)) {
		gw_seg_cap_refused(&in->seg_cap, rec->run, rec->run_len);
		*e = (struct gw_wire_err){.column = 0};
		gw_strlcpy(e->field, "step", sizeof(e->field));
		snprintf(e->msg, sizeof(e->msg), "segment_flood: run \"%.*s\" opened %u segments "
		         "within a minute (limits.max_segments_per_minute); a line that would open "
		         "another is refused until the minute is over",
		         (int)gw_utf8_cut(rec->run, GW_MIN(rec->run_len, 100)), rec->run,
		         in->seg_cap.per_min);
		gw__ingest_reject(in, s->t, e, GW_REJ_SEG_FLOOD);
		return -EINVAL;
	}
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
		                       : "out_of_memory: no memory for the run's detector state; "
		                         "send it again later");
		gw__ingest_reject(in, s->t, e, rc == -ENOSPC ? GW_REJ_BAD_RUN : GW_REJ_NO_MEMORY);
		return -EINVAL;
	}
	if (in->store) {
		if (!seq) {
			*e = (struct gw_wire_err){.column = 0};
			snprintf(e->msg, sizeof(e->msg), "out_of_memory: the line could not be queued "
			         "for the database; send it again later");
			gw__ingest_reject(in, s->t, e, GW_REJ_NO_MEMORY);
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
