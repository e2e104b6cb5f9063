/*
 * Unit tests of the detector engine (detectors/engine.c, verdict.c):
 * segmentation (resumed event, rewind, wall-clock gap, split lines of one
 * step), the timeline and replay copy at a restart, incidents (one alert
 * per incident, resolve), the precedence rules of the registry (each shown
 * to matter by turning its winner off), one alert per segment, thresholds
 * per run glob, runs in the order they appeared, and stable alert ids.
 */
#include "gwcheck.h"
#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "engine_opts.h"
#include "registry.h"
#include "hist.h"
#include "util.h"

struct seen {
	int segs;
	enum gw_seg_reason reason[16];
	int64_t restart[16];
	int alerts;
	char det[16][32];
	int kind[16];
	int64_t step[16];
	char id[16][24];
};

static void on_seg(void *d, const struct gw_segment_info *si)
{
	struct seen *s = d;
	if (s->segs < 16) {
		s->reason[s->segs] = si->reason;
		s->restart[s->segs] = si->restart_step;
	}
	s->segs++;
}

static void on_alert(void *d, const struct gw_alert *a)
{
	struct seen *s = d;
	if (s->alerts < 16) {
		snprintf(s->det[s->alerts], 32, "%s", a->detector);
		s->kind[s->alerts] = a->kind;
		s->step[s->alerts] = a->step;
		memcpy(s->id[s->alerts], a->id, 24);
	}
	s->alerts++;
}

static struct gw_engine *mk_off(struct seen *s, const struct gw_th_override *ov, size_t nov,
                                 const char *off)
{
	struct gw_engine_opts o = {0};
	gw_thresholds_default(&o.th);
	if (off)
		o.disabled = 1ull << gw_det_index(off);
	o.overrides = ov;
	o.n_overrides = nov;
	struct gw_engine_hooks h = {.data = s, .on_alert = on_alert, .on_segment = on_seg};
	return gw_engine_new(&o, &h);
}

static struct gw_engine *mk(struct seen *s, const struct gw_th_override *ov, size_t nov)
{
	return mk_off(s, ov, nov, NULL);
}

/* Alerts of a detector that opened an incident. */
static int opened(const struct seen *s, const char *det)
{
	int n = 0;
	for (int i = 0; i < s->alerts && i < 16; i++)
		n += strcmp(s->det[i], det) == 0 && s->kind[i] == GW_ALERT_OPEN;
	return n;
}

static void rec(struct gw_engine *e, const char *run, int64_t step, double ts, double loss,
                double gn, uint64_t line)
{
	struct gw_rec r = {.run = run, .run_len = strlen(run), .step = step, .ts = ts,
	                   .present = 1u << GW_ROLE_LOSS | 1u << GW_ROLE_GRAD_NORM};
	r.v[GW_ROLE_LOSS] = loss;
	r.v[GW_ROLE_GRAD_NORM] = gn;
	ck_assert_int_eq(gw_engine_feed(e, &r, line, NAN, NULL), 0);
}

START_TEST(segments_rewind_and_gap)
{
	struct seen s = {0};
	struct gw_engine *e = mk(&s, NULL, 0);
	uint64_t line = 0;
	for (int i = 1; i <= 100; i++)
		rec(e, "r", i, 1000 + i * 0.5, 2.0, 1.0, ++line);
	ck_assert_int_eq(s.segs, 1);
	ck_assert_int_eq(s.reason[0], GW_SEG_START);
	/* crash after 100, restart from the checkpoint at 80: steps 81.. again */
	rec(e, "r", 81, 1400, 2.0, 1.0, ++line);
	ck_assert_int_eq(s.segs, 2);
	ck_assert_int_eq(s.reason[1], GW_SEG_REWIND);
	ck_assert_int_eq(s.restart[1], 80);
	for (int i = 82; i <= 150; i++)
		rec(e, "r", i, 1400 + (i - 81) * 0.5, 2.0, 1.0, ++line);
	ck_assert_int_eq(s.segs, 2);
	/* no rewind, but a 10-minute gap: a restart at the checkpoint itself */
	rec(e, "r", 151, 1400 + 70 * 0.5 + 600, 2.0, 1.0, ++line);
	ck_assert_int_eq(s.segs, 3);
	ck_assert_int_eq(s.reason[2], GW_SEG_GAP);
	ck_assert_int_eq(s.restart[2], 150);
	/* a 30 s pause is not a restart (gap_min_seconds = 30: longer is) */
	rec(e, "r", 152, 1400 + 70 * 0.5 + 630, 2.0, 1.0, ++line);
	ck_assert_int_eq(s.segs, 3);
	struct gw_run_info ri;
	ck_assert_int_eq(gw_engine_run_info(e, "r", &ri), 0);
	ck_assert_int_eq(ri.seg, 3);
	ck_assert_int_eq(ri.last_step, 152);
	gw_engine_free(e);
}
END_TEST

START_TEST(a_line_that_arrives_late_is_no_restart)
{
	/* lines 101 and 102 swapped on the way (UDP, two writers): 101 comes
	 * after 102, with its own earlier ts.  No restart replays a step that
	 * was never logged, so it is no rewind: before, it opened a segment
	 * "restarted from step 100" and resume_regression compared what
	 * followed with that made-up checkpoint */
	struct seen s = {0};
	struct gw_engine *e = mk(&s, NULL, 0);
	uint64_t line = 0;
	for (int i = 1; i <= 100; i++)
		rec(e, "r", i, 1000 + i * 0.5, 2.0, 1.0, ++line);
	rec(e, "r", 102, 1000 + 102 * 0.5, 2.0, 1.0, ++line);
	rec(e, "r", 101, 1000 + 101 * 0.5, 2.0, 1.0, ++line);
	for (int i = 103; i <= 120; i++)
		rec(e, "r", i, 1000 + i * 0.5, 2.0, 1.0, ++line);
	/* the same without ts */
	rec(e, "r", 122, NAN, 2.0, 1.0, ++line);
	rec(e, "r", 121, NAN, 2.0, 1.0, ++line);
	rec(e, "r", 123, NAN, 2.0, 1.0, ++line);
	ck_assert_int_eq(s.segs, 1);
	struct gw_run_info ri;
	ck_assert_int_eq(gw_engine_run_info(e, "r", &ri), 0);
	ck_assert_int_eq(ri.last_step, 123);
	ck_assert_int_eq(ri.records, 123);
	/* a step back to one that was logged is a restart, as before */
	rec(e, "r", 111, 1000 + 123 * 0.5 + 300, 2.0, 1.0, ++line);
	ck_assert_int_eq(s.segs, 2);
	ck_assert_int_eq(s.reason[1], GW_SEG_REWIND);
	ck_assert_int_eq(s.restart[1], 110);
	/* and so is one whose ts jumps forward by a restart's gap, even into
	 * a step never logged (a lost line) */
	for (int i = 112; i <= 130; i++)
		if (i != 129)
			rec(e, "r", i, 1000 + 123 * 0.5 + 300 + (i - 111) * 0.5, 2.0, 1.0, ++line);
	rec(e, "r", 129, 1000 + 123 * 0.5 + 900, 2.0, 1.0, ++line);
	ck_assert_int_eq(s.segs, 3);
	ck_assert_int_eq(s.restart[2], 128);
	gw_engine_free(e);
}
END_TEST

START_TEST(slow_steps_are_not_gaps)
{
	/* a run whose steps take 5 minutes: 10 minutes between two steps is
	 * jitter, not a restart (gap_factor x typical interval) */
	struct seen s = {0};
	struct gw_engine *e = mk(&s, NULL, 0);
	for (int i = 1; i <= 20; i++)
		rec(e, "slow", i, i * 300.0, 2.0, 1.0, (uint64_t)i);
	rec(e, "slow", 21, 20 * 300.0 + 600, 2.0, 1.0, 21);
	ck_assert_int_eq(s.segs, 1);
	gw_engine_free(e);
}
END_TEST

static struct gw_rec event(const char *run, int64_t step, const char *name, json_t *attrs)
{
	struct gw_rec r = {.run = run, .run_len = strlen(run), .step = step, .ts = NAN,
	                   .event = name, .attrs = attrs};
	return r;
}

START_TEST(resumed_event_is_one_segment)
{
	struct seen s = {0};
	struct gw_engine *e = mk(&s, NULL, 0);
	for (int i = 1; i <= 60; i++)
		rec(e, "r", i, NAN, 2.0 + i * 0.01, 1.0, (uint64_t)i);
	json_t *ck = json_pack("{s:s}", "optimizer", "AdamW");
	struct gw_rec ev = event("r", 50, "checkpoint_saved", ck);
	ck_assert_int_eq(gw_engine_feed(e, &ev, 61, NAN, NULL), 0);
	json_t *rs = json_pack("{s:i, s:s}", "checkpoint_step", 50, "optimizer", "AdamW");
	ev = event("r", 50, "resumed", rs);
	int64_t seg = 0;
	ck_assert_int_eq(gw_engine_feed(e, &ev, 62, NAN, &seg), 0);
	ck_assert_int_eq(seg, 2);
	ck_assert_int_eq(s.reason[1], GW_SEG_RESUMED);
	ck_assert_int_eq(s.restart[1], 50);
	/* the rewound metric lines belong to the resumed segment */
	for (int i = 51; i <= 70; i++)
		rec(e, "r", i, NAN, 2.0, 1.0, (uint64_t)(62 + i - 50));
	ck_assert_int_eq(s.segs, 2);
	/* a checkpoint_step no step can be (1e300: its cast to int64_t was
	 * undefined) is not taken: the event's own step is the restart */
	json_t *huge = json_pack("{s:f}", "checkpoint_step", 1e300);
	ev = event("r", 70, "resumed", huge);
	ck_assert_int_eq(gw_engine_feed(e, &ev, 90, NAN, &seg), 0);
	ck_assert_int_eq(seg, 3);
	ck_assert_int_eq(s.restart[2], 70);
	json_decref(huge);
	json_decref(ck);
	json_decref(rs);
	gw_engine_free(e);
}
END_TEST

START_TEST(split_step_lines_merge)
{
	struct seen s = {0};
	struct gw_engine *e = mk(&s, NULL, 0);
	for (int i = 1; i <= 10; i++) {
		struct gw_rec a = {.run = "w", .run_len = 1, .step = i, .ts = NAN,
		                   .present = 1u << GW_ROLE_LOSS, .v = {[GW_ROLE_LOSS] = 2.0}};
		struct gw_rec b = {.run = "w", .run_len = 1, .step = i, .ts = NAN,
		                   .present = 1u << GW_ROLE_GRAD_NORM, .v = {[GW_ROLE_GRAD_NORM] = 1.0}};
		gw_engine_feed(e, &a, (uint64_t)(2 * i - 1), NAN, NULL);
		gw_engine_feed(e, &b, (uint64_t)(2 * i), NAN, NULL);
	}
	ck_assert_int_eq(s.segs, 1);
	struct gw_run_info ri;
	gw_engine_run_info(e, "w", &ri);
	ck_assert_uint_eq(ri.records, 10);
	/* the same field again for the same step is a repeat: a rewind */
	struct gw_rec c = {.run = "w", .run_len = 1, .step = 10, .ts = NAN,
	                   .present = 1u << GW_ROLE_LOSS, .v = {[GW_ROLE_LOSS] = 2.0}};
	gw_engine_feed(e, &c, 21, NAN, NULL);
	ck_assert_int_eq(s.segs, 2);
	gw_engine_free(e);
}
END_TEST

START_TEST(nonfinite_incident_and_ids)
{
	struct seen s = {0};
	struct gw_engine *e = mk(&s, NULL, 0);
	uint64_t line = 0;
	for (int i = 1; i <= 10; i++)
		rec(e, "n", i, NAN, 2.0, 1.0, ++line);
	for (int i = 11; i <= 14; i++)
		rec(e, "n", i, NAN, NAN, NAN, ++line);
	ck_assert_int_eq(s.alerts, 1);   /* one incident, not four alerts */
	ck_assert_str_eq(s.det[0], "nonfinite");
	ck_assert_int_eq(s.kind[0], GW_ALERT_OPEN);
	ck_assert_int_eq(s.step[0], 11);
	for (int i = 15; i <= 120; i++)
		rec(e, "n", i, NAN, 2.0, 1.0, ++line);
	ck_assert_int_eq(s.alerts, 2);
	ck_assert_int_eq(s.kind[1], GW_ALERT_RESOLVE);
	ck_assert_str_eq(s.id[1], s.id[0]);
	rec(e, "n", 121, NAN, INFINITY, 1.0, ++line);
	ck_assert_int_eq(s.alerts, 3);
	ck_assert_int_eq(s.kind[2], GW_ALERT_OPEN);
	ck_assert_str_ne(s.id[2], s.id[0]);
	char id[24];
	gw_alert_make_id(id, "n", 1, "nonfinite", 1);
	ck_assert_str_eq(id, s.id[0]);
	gw_engine_free(e);
}
END_TEST

START_TEST(prev_window)
{
	struct seen s = {0};
	struct gw_engine *e = mk(&s, NULL, 0);
	for (int i = 1; i <= 300; i++)
		rec(e, "p", i, NAN, (double)i, 1.0, (uint64_t)i);
	rec(e, "p", 251, NAN, 1000.0, 1.0, 301); /* rewind to the checkpoint at 250 */
	const struct gw_hist *h = gw_engine_hist(e, "p");
	ck_assert_ptr_nonnull(h);
	/* the timeline: 1..250, then the new 251; the pre-checkpoint regime is
	 * the 100 valid records up to 250, not the thrown-away 251..300 */
	double loss[128];
	int64_t step[128];
	ck_assert_uint_eq(gw_hist_last_valid(h, 100, 1, loss, NULL, NULL, step), 100);
	ck_assert_int_eq(step[0], 151);
	ck_assert_int_eq(step[99], 250);
	ck_assert_double_eq(loss[99], 250.0);
	struct gw_hist_rec r;
	ck_assert(gw_hist_at(h, 0, &r));
	ck_assert_int_eq(r.step, 251);
	ck_assert_double_eq(r.loss, 1000.0);
	/* the thrown-away copies, for the replayed-step comparison */
	ck_assert_uint_eq(gw_hist_replay_count(h), 50);
	ck_assert_double_eq(gw_hist_replayed(h, 251)->loss, 251.0);
	ck_assert_int_eq(gw_hist_replayed(h, 300)->step, 300);
	ck_assert_ptr_null(gw_hist_replayed(h, 301));
	/* logs are cached for valid records */
	struct gw_win lw = gw_hist_valid(h, GW_V_LOG_LOSS, 1, 0);
	ck_assert_uint_eq(gw_win_len(&lw), 1);
	ck_assert_double_eq_tol(gw_win_at(&lw, 0), log(1000.0), 1e-12);
	/* a ring wrap: 600 more records, a window in two spans */
	for (int i = 252; i <= 851; i++)
		rec(e, "p", i, NAN, (double)i, 1.0, (uint64_t)i + 50);
	struct gw_win w = gw_hist_recent(h, GW_COL_LOSS, GW_RING_CAP);
	ck_assert_uint_eq(gw_win_len(&w), GW_RING_CAP);
	ck_assert_double_eq(gw_win_at(&w, GW_RING_CAP - 1), 851.0);
	ck_assert_double_eq(gw_win_at(&w, 0), 851.0 - GW_RING_CAP + 1);
	gw_engine_free(e);
}
END_TEST

START_TEST(thresholds_by_glob)
{
	struct gw_th_override ov[1];
	ov[0].glob = "exp-*";
	gw_thresholds_default(&ov[0].th);
	ov[0].th.gap_min_seconds = 10;
	struct seen s = {0};
	struct gw_engine *e = mk(&s, ov, 1);
	for (int i = 1; i <= 5; i++) {
		rec(e, "exp-1", i, 100 + i, 2, 1, (uint64_t)i);
		rec(e, "prod-1", i, 100 + i, 2, 1, (uint64_t)i);
	}
	rec(e, "exp-1", 6, 130, 2, 1, 6);   /* 25 s: a gap for exp-* (min 10 s) */
	rec(e, "prod-1", 6, 130, 2, 1, 6);  /* not for others (min 30 s) */
	struct gw_run_info a, b;
	gw_engine_run_info(e, "exp-1", &a);
	gw_engine_run_info(e, "prod-1", &b);
	ck_assert_int_eq(a.seg, 2);
	ck_assert_int_eq(b.seg, 1);
	gw_engine_free(e);
}
END_TEST

START_TEST(seed_continues_segments)
{
	struct seen s = {0};
	struct gw_engine *e = mk(&s, NULL, 0);
	ck_assert_int_eq(gw_engine_seed_run(e, "old", 3, 500, NAN), 0);
	int64_t seg = 0;
	struct gw_rec r = {.run = "old", .run_len = 3, .step = 501, .ts = NAN,
	                   .present = 1, .v = {2.0}};
	gw_engine_feed(e, &r, 1, NAN, &seg);
	ck_assert_int_eq(seg, 3);
	r.step = 400;  /* the job restarted from an older checkpoint */
	gw_engine_feed(e, &r, 2, NAN, &seg);
	ck_assert_int_eq(seg, 4);
	gw_engine_free(e);
}
END_TEST

/* The on_ended hook: once per ending (a run_finished event, the declared
 * length reached, gw_engine_run_ended), with where and why; again only when
 * the run went on and ended anew; never while quiet. */
struct endings {
	int n;
	int64_t seg, step;
	char reason[32];
};

static void on_ended(void *d, const struct gw_end_info *en)
{
	struct endings *x = d;
	x->n++;
	x->seg = en->seg;
	x->step = en->step;
	snprintf(x->reason, sizeof(x->reason), "%s", en->reason);
}

static void end_line(struct gw_engine *e, const char *run, int64_t step, const char *event,
                     double max_steps)
{
	struct gw_metric m = {"max_steps", max_steps};
	struct gw_rec r = {.run = run, .run_len = strlen(run), .step = step, .ts = NAN,
	                   .present = event ? 0 : 1u << GW_ROLE_LOSS, .v = {1.0},
	                   .extra = &m, .n_extra = max_steps > 0 && !event, .event = event,
	                   .attrs = event ? json_object() : NULL};
	ck_assert_int_eq(gw_engine_feed(e, &r, (uint64_t)step, NAN, NULL), 0);
	json_decref((json_t *)r.attrs);
}

START_TEST(run_endings_are_said_once_each)
{
	struct endings x = {0};
	struct gw_engine_opts o = {0};
	gw_thresholds_default(&o.th);
	struct gw_engine_hooks h = {.data = &x, .on_ended = on_ended};
	struct gw_engine *e = gw_engine_new(&o, &h);
	end_line(e, "f", 1, NULL, 0);
	end_line(e, "f", 2, "run_finished", 0);
	ck_assert_int_eq(x.n, 1);
	ck_assert_str_eq(x.reason, "run_finished");
	ck_assert_int_eq(x.step, 2);
	end_line(e, "f", 2, "run_finished", 0);   /* again at the same step: nothing new */
	ck_assert_int_eq(x.n, 1);
	end_line(e, "f", 3, NULL, 0);                      /* it went on ... */
	ck_assert_int_eq(gw_engine_run_ended(e, "f", "file_rotated", 10.0), 0);   /* ... and ended */
	ck_assert_int_eq(x.n, 2);
	ck_assert_str_eq(x.reason, "file_rotated");
	ck_assert_int_eq(x.step, 3);

	end_line(e, "m", 1, NULL, 5);   /* declared once, on the first line */
	for (int64_t i = 2; i <= 4; i++)
		end_line(e, "m", i, NULL, 0);
	ck_assert_int_eq(x.n, 2);
	end_line(e, "m", 5, NULL, 0);
	ck_assert_int_eq(x.n, 3);
	ck_assert_str_eq(x.reason, "max_steps");
	ck_assert_int_eq(x.step, 5);
	ck_assert_int_eq(x.seg, 1);

	bool was = gw_engine_quiet(e, true);   /* re-feeding: said before */
	end_line(e, "q", 1, NULL, 0);
	end_line(e, "q", 1, "run_finished", 0);
	gw_engine_run_ended(e, "q", "evicted", 10.0);
	gw_engine_quiet(e, was);
	ck_assert_int_eq(x.n, 3);
	gw_engine_free(e);
}
END_TEST

START_TEST(max_runs)
{
	struct gw_engine_opts o = {0};
	gw_thresholds_default(&o.th);
	o.max_runs = 2;
	struct gw_engine *e = gw_engine_new(&o, NULL);
	struct gw_rec r = {.step = 1, .ts = NAN};
	const char *names[] = {"a", "b", "c"};
	for (int i = 0; i < 3; i++) {
		r.run = names[i];
		r.run_len = 1;
		ck_assert_int_eq(gw_engine_feed(e, &r, 1, NAN, NULL), i < 2 ? 0 : -ENOSPC);
	}
	gw_engine_free(e);
}
END_TEST

/* A flat run of 300 steps, then a restart from step 200 whose loss is three
 * times the regime's: resume_regression reports the level jump once, and
 * the loss spike the same jump shows ten lines later is its, not news. */
static void explained_restart(struct gw_engine *e)
{
	uint64_t line = 0;
	for (int i = 1; i <= 300; i++)
		rec(e, "x", i, NAN, 2.0, 1.0, ++line);
	for (int i = 201; i <= 300; i++)
		rec(e, "x", i, NAN, 6.0, 1.0, ++line);
}

START_TEST(restart_explanation_silences_spikes)
{
	struct seen s = {0};
	struct gw_engine *e = mk(&s, NULL, 0);
	explained_restart(e);
	ck_assert_int_eq(opened(&s, "resume_regression"), 1);   /* once per segment */
	ck_assert_int_eq(opened(&s, "loss_spike"), 0);
	gw_engine_free(e);
	/* the rule is what keeps it quiet: without its winner it speaks */
	memset(&s, 0, sizeof(s));
	e = mk_off(&s, NULL, 0, "resume_regression");
	explained_restart(e);
	ck_assert_int_eq(opened(&s, "loss_spike"), 1);
	gw_engine_free(e);
}
END_TEST

/* 300 flat steps; an explosion (loss x1.3, grad norm x3 for 5 steps);
 * then loss stays up while the grad norm settles below where it was -- the
 * mid-run reset signature, but in a divergence's aftermath. */
static void explosion_aftermath(struct gw_engine *e)
{
	uint64_t line = 0;
	int i = 1;
	for (; i <= 300; i++)
		rec(e, "g", i, NAN, 2.0, 1.0, ++line);
	for (; i <= 305; i++)
		rec(e, "g", i, NAN, 2.6, 3.0, ++line);
	for (; i <= 500; i++)
		rec(e, "g", i, NAN, 2.6, 0.7, ++line);
}

START_TEST(explosion_aftermath_is_not_a_reset)
{
	struct seen s = {0};
	struct gw_engine *e = mk(&s, NULL, 0);
	explosion_aftermath(e);
	ck_assert_int_eq(opened(&s, "grad_explosion"), 1);
	ck_assert_int_eq(opened(&s, "optimizer_reset"), 0);
	gw_engine_free(e);
	memset(&s, 0, sizeof(s));
	e = mk_off(&s, NULL, 0, "grad_explosion");
	explosion_aftermath(e);
	ck_assert_int_eq(opened(&s, "optimizer_reset"), 1);
	gw_engine_free(e);
}
END_TEST

/* A noisy small-batch run (log loss and log grad norm uniform +-0.6 around
 * their levels: a per-step noise of about 0.3 in log), 300 steps, then the
 * loss multiplied by `mult` for 40 steps, the grad norm's level unchanged. */
static void noisy_loss_jump(struct gw_engine *e, double mult)
{
	uint64_t line = 0, x = 12345;
	for (int i = 1; i <= 340; i++) {
		double u[2];
		for (int k = 0; k < 2; k++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			u[k] = (double)(x >> 11) / 9007199254740992.0 * 2 - 1;
		}
		double lvl = i > 300 ? mult : 1.0;
		rec(e, "n", i, NAN, 0.7 * lvl * exp(0.6 * u[0]), 2.0 * exp(0.6 * u[1]), ++line);
	}
}

/* On such a run 8 sigma is a x10 rise: a loss that quadruples (5 sigma) is
 * caught by the second rule (x3 at 4 sigma) -- with it off, by nothing --
 * and one that rises x1.7 (below x3) is left alone. */
START_TEST(noisy_run_loss_jump)
{
	struct seen s = {0};
	struct gw_engine *e = mk(&s, NULL, 0);
	noisy_loss_jump(e, 4.0);
	ck_assert_int_eq(opened(&s, "loss_spike"), 1);
	gw_engine_free(e);
	struct gw_th_override ov[1];
	ov[0].glob = "*";
	gw_thresholds_default(&ov[0].th);
	ov[0].th.sp_big_loss_rel = 1000; /* the second rule off */
	memset(&s, 0, sizeof(s));
	e = mk(&s, ov, 1);
	noisy_loss_jump(e, 4.0);
	ck_assert_int_eq(opened(&s, "loss_spike"), 0);
	gw_engine_free(e);
	memset(&s, 0, sizeof(s));
	e = mk(&s, NULL, 0);
	noisy_loss_jump(e, 1.7);
	ck_assert_int_eq(opened(&s, "loss_spike"), 0);
	gw_engine_free(e);
}
END_TEST

static void collect_run(void *data, const struct gw_run_info *ri)
{
	char *out = data;
	strcat(out, ri->run);
}

START_TEST(runs_in_order_of_appearance)
{
	struct seen s = {0};
	struct gw_engine *e = mk(&s, NULL, 0);
	const char *names[] = {"delta", "alpha", "charlie", "bravo"};
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < 4; i++)
			rec(e, names[i], k + 1, NAN, 2.0, 1.0, (uint64_t)k + 1);
	ck_assert_uint_eq(gw_engine_run_count(e), 4);
	char order[64] = "";
	gw_engine_foreach_run(e, collect_run, order);
	ck_assert_str_eq(order, "deltaalphacharliebravo");
	struct gw_run_info ri;
	ck_assert_int_eq(gw_engine_run_info(e, "charlie", &ri), 0);
	ck_assert_int_eq(ri.last_step, 3);
	ck_assert_int_eq(gw_engine_run_info(e, "charli", &ri), -ENOENT);
	gw_engine_free(e);
}
END_TEST

/* Found while fuzzing the resume check: the resume_mismatch summary joins
 * the differences' messages into 512 bytes, and the cut could fall inside a
 * UTF-8 character of a quoted hyperparameter; the alert then could not be
 * written as JSON and was never delivered.  Every alert's texts are UTF-8. */
static bool texts_utf8 = true;

static void check_texts(void *d, const struct gw_alert *a)
{
	const char *t[] = {a->summary, a->cause, a->action};
	for (size_t i = 0; i < 3; i++) {
		json_t *j = t[i] ? json_string(t[i]) : json_null();
		texts_utf8 &= j != NULL;
		json_decref(j);
	}
	on_alert(d, a);
}

START_TEST(alert_texts_stay_utf8)
{
	struct seen s = {0};
	struct gw_engine_opts o = {0};
	gw_thresholds_default(&o.th);
	struct gw_engine_hooks h = {.data = &s, .on_alert = check_texts, .on_segment = on_seg};
	struct gw_engine *e = gw_engine_new(&o, &h);
	for (int i = 1; i <= 60; i++)
		rec(e, "r", i, NAN, 2.0, 1.0, (uint64_t)i);
	json_t *ck = json_pack("{s:s, s:{}}", "optimizer", "AdamW", "hparams");
	json_t *rs = json_pack("{s:i, s:s, s:{}}", "checkpoint_step", 50, "optimizer", "AdamW", "hparams");
	/* hyperparameters whose names and values are long runs of e-acute,
	 * each differing: several messages of about 250 bytes */
	for (int k = 0; k < 4; k++) {
		char name[128] = "", val[200] = "";
		for (int i = 0; i < 30 + k; i++)
			strcat(name, "\xc3\xa9");
		for (int i = 0; i < 90; i++)
			strcat(val, "\xc3\xa9");
		json_object_set_new(json_object_get(ck, "hparams"), name, json_string(val));
		val[1] = '\0';
		val[0] = 'x';
		json_object_set_new(json_object_get(rs, "hparams"), name, json_string(val));
	}
	struct gw_rec ev = event("r", 50, "checkpoint_saved", ck);
	ck_assert_int_eq(gw_engine_feed(e, &ev, 61, NAN, NULL), 0);
	ev = event("r", 50, "resumed", rs);
	ck_assert_int_eq(gw_engine_feed(e, &ev, 62, NAN, NULL), 0);
	ck_assert_int_eq(opened(&s, "resume_mismatch"), 1);
	ck_assert_msg(texts_utf8, "an alert's summary, cause or action is not UTF-8");
	json_decref(ck);
	json_decref(rs);
	gw_engine_free(e);
}
END_TEST

/* Evidence with NaN and infinities (a detector's ratio of two values that
 * underflowed, a baseline of zero): written as null, the rest of the
 * evidence and the alert intact.  With json_pack "f" the evidence was lost
 * (json_pack returned NULL); gw_json_num is the one way numbers go in. */
START_TEST(non_finite_evidence_is_null_not_lost)
{
	const double bad[] = {NAN, INFINITY, -INFINITY};
	for (size_t i = 0; i < 3; i++) {
		ck_assert_ptr_null(json_pack("{s:f}", "x", bad[i]));   /* why the helper exists */
		json_t *ev = json_pack("{s:s, s:o, s:o, s:[o, o]}", "rule", "r", "ratio",
		                       gw_json_num(bad[i]), "ok", gw_json_num(0.25), "v",
		                       gw_json_num(bad[i]), gw_json_num(-bad[i]));
		ck_assert_ptr_nonnull(ev);
		struct gw_alert a = {.id = "gw-0123456789abcdef", .kind = GW_ALERT_OPEN, .run = "r",
		                     .seg = 1, .step = 7, .detector = "spikes",
		                     .severity = GW_SEV_WARNING, .summary = "s", .evidence = ev,
		                     .ts = bad[i], .wall = bad[i]};
		json_t *o = gw_alert_event_json(&a, 1, NULL);
		ck_assert_ptr_nonnull(o);
		char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
		ck_assert_ptr_nonnull(text);
		ck_assert_msg(strstr(text, "\"evidence\":{\"ok\":0.25,\"ratio\":null,\"rule\":\"r\","
		                           "\"v\":[null,null]}"), "%s", text);
		ck_assert_ptr_null(strstr(text, "\"ts\""));
		free(text);
		json_decref(o);
		json_decref(ev);
	}
	json_t *one = gw_json_num(1.5);
	ck_assert(json_is_real(one) && json_real_value(one) == 1.5);
	json_decref(one);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("engine");
	TCase *tc = tcase_create("engine");
	tcase_add_test(tc, segments_rewind_and_gap);
	tcase_add_test(tc, non_finite_evidence_is_null_not_lost);
	tcase_add_test(tc, slow_steps_are_not_gaps);
	tcase_add_test(tc, a_line_that_arrives_late_is_no_restart);
	tcase_add_test(tc, resumed_event_is_one_segment);
	tcase_add_test(tc, split_step_lines_merge);
	tcase_add_test(tc, nonfinite_incident_and_ids);
	tcase_add_test(tc, prev_window);
	tcase_add_test(tc, thresholds_by_glob);
	tcase_add_test(tc, seed_continues_segments);
	tcase_add_test(tc, max_runs);
	tcase_add_test(tc, run_endings_are_said_once_each);
	tcase_add_test(tc, restart_explanation_silences_spikes);
	tcase_add_test(tc, explosion_aftermath_is_not_a_reset);
	tcase_add_test(tc, noisy_run_loss_jump);
	tcase_add_test(tc, runs_in_order_of_appearance);
	tcase_add_test(tc, alert_texts_stay_utf8);
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
