/*
 * Unit tests of the detector engine (detectors/engine.c): segmentation
 * (resumed event, rewind, wall-clock gap, slow steps, a late line, split
 * lines of one step), seeding segments, run endings said once, the most
 * runs, and runs in the order they appeared.  Incidents, precedence and
 * alert texts: test_engine_alerts.c.
 */
#include "gwcheck.h"
#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "enginefix.h"
#include "engine.h"
#include "engine_opts.h"
#include "registry.h"
#include "hist.h"
#include "util.h"

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

int main(void)
{
	Suite *s = suite_create("engine");
	TCase *tc = tcase_create("engine");
	tcase_add_test(tc, segments_rewind_and_gap);
	tcase_add_test(tc, slow_steps_are_not_gaps);
	tcase_add_test(tc, a_line_that_arrives_late_is_no_restart);
	tcase_add_test(tc, resumed_event_is_one_segment);
	tcase_add_test(tc, split_step_lines_merge);
	tcase_add_test(tc, seed_continues_segments);
	tcase_add_test(tc, max_runs);
	tcase_add_test(tc, run_endings_are_said_once_each);
	tcase_add_test(tc, runs_in_order_of_appearance);
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
