/*
 * Unit tests of the stall detector's silence rule and of run endings
 * (detectors/det_stall.c, engine.c "Run endings"), through a real live
 * engine fed with explicit wall-clock times: a silent run alerts and
 * resolves when it logs again, saying for how long it was silent; every
 * way a run ends (a run_finished event, max_steps / total_steps reached,
 * gw_engine_run_ended) stops it from alerting and resolves an open alert;
 * a run that goes on after its end is watched again; a backlog of old
 * lines (`gradwatch send` of an old log) raises nothing, while a live job
 * whose clock is off, or whose lines carry no ts, still does.  After a
 * daemon restart (gw_engine_restarted) a run that was live is watched from
 * the daemon's start, the alert giving the downtime, while a finished run or
 * an old backlog is not; the downtime is no interval of the run's.
 */
#include "gwcheck.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "engine_opts.h"

#define T0 1.8e9   /* the wall clock at the start of each test */

struct got {
	int n;
	int kind[32];
	int64_t step[32];
	char summary[32][512];
	char evidence[32][512];
};

static void on_alert(void *d, const struct gw_alert *a)
{
	struct got *g = d;
	if (strcmp(a->detector, "stall") != 0 || g->n >= 32)
		return;
	g->kind[g->n] = a->kind;
	g->step[g->n] = a->step;
	snprintf(g->summary[g->n], sizeof(g->summary[0]), "%s", a->summary);
	char *ev = a->evidence ? json_dumps(a->evidence, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	snprintf(g->evidence[g->n], sizeof(g->evidence[0]), "%s", ev ? ev : "");
	free(ev);
	g->n++;
}

static struct gw_engine *mk(struct got *g)
{
	struct gw_engine_opts o = {.live = true};
	gw_thresholds_default(&o.th);   /* stall after max(120 s, 30 x interval), 20 lines */
	struct gw_engine_hooks h = {.data = g, .on_alert = on_alert};
	return gw_engine_new(&o, &h);
}

/* A metric line of step `step`, with ts (NaN: none), arriving at `now`;
 * extra metric `xname` = xv if xname. */
static void rec_x(struct gw_engine *e, const char *run, int64_t step, double ts, double now,
                  const char *xname, double xv)
{
	struct gw_metric x = {xname, xv};
	struct gw_rec r = {.run = run, .run_len = strlen(run), .step = step, .ts = ts,
	                   .present = 1u << GW_ROLE_LOSS | 1u << GW_ROLE_GRAD_NORM,
	                   .extra = xname ? &x : NULL, .n_extra = xname ? 1 : 0};
	r.v[GW_ROLE_LOSS] = 2.0 - 1e-4 * (double)step;
	r.v[GW_ROLE_GRAD_NORM] = 0.5 + 0.01 * (double)(step % 3);
	ck_assert_int_eq(gw_engine_feed(e, &r, (uint64_t)step, now, NULL), 0);
}

static void rec(struct gw_engine *e, const char *run, int64_t step, double ts, double now)
{
	rec_x(e, run, step, ts, now, NULL, 0);
}

static void event(struct gw_engine *e, const char *run, int64_t step, const char *name,
                  json_t *attrs, double now)
{
	struct gw_rec r = {.run = run, .run_len = strlen(run), .step = step, .ts = now,
	                   .event = name, .attrs = attrs};
	ck_assert_int_eq(gw_engine_feed(e, &r, 0, now, NULL), 0);
	json_decref(attrs);
}

/* Steps 1..n, one a second, live (ts = arrival); returns the last arrival. */
static double live_run(struct gw_engine *e, const char *run, int n)
{
	for (int i = 1; i <= n; i++)
		rec(e, run, i, T0 + i, T0 + i);
	return T0 + n;
}

/* Ticks every 10 s from `from` for `seconds`. */
static void ticks(struct gw_engine *e, double from, double seconds)
{
	for (double t = from; t <= from + seconds; t += 10)
		gw_engine_tick(e, t);
}

START_TEST(silence_alerts_and_resolves_with_its_length)
{
	struct got g = {0};
	struct gw_engine *e = mk(&g);
	double last = live_run(e, "r", 30);
	ticks(e, last, 110);           /* 110 s < 120 s: quiet */
	ck_assert_int_eq(g.n, 0);
	ticks(e, last + 120, 200);     /* past 120 s: one alert, not repeated */
	ck_assert_int_eq(g.n, 1);
	ck_assert_int_eq(g.kind[0], GW_ALERT_OPEN);
	ck_assert_int_eq(g.step[0], 30);
	ck_assert_ptr_nonnull(strstr(g.summary[0], "has logged nothing for 130 s"));
	/* lines come back 300 s after the last one */
	rec(e, "r", 31, last + 300, last + 300);
	ck_assert_int_eq(g.n, 2);
	ck_assert_int_eq(g.kind[1], GW_ALERT_RESOLVE);
	ck_assert_int_eq(g.step[1], 31);
	ck_assert_str_eq(g.summary[1], "the run logged again at step 31 after 300 s of silence "
	                               "(last step before it 30)");
	ck_assert_ptr_nonnull(strstr(g.evidence[1], "\"ended_by\":\"line\""));
	ck_assert_ptr_nonnull(strstr(g.evidence[1], "\"silent_seconds\":300"));
	gw_engine_free(e);
}
END_TEST

START_TEST(run_finished_event_ends_the_run)
{
	struct got g = {0};
	struct gw_engine *e = mk(&g);
	double last = live_run(e, "r", 30);
	event(e, "r", 30, "run_finished", json_pack("{s:s}", "reason", "completed"), last + 0.5);
	struct gw_run_info ri;
	ck_assert_int_eq(gw_engine_run_info(e, "r", &ri), 0);
	ck_assert(ri.ended);
	ticks(e, last, 3600);
	ck_assert_int_eq(g.n, 0);
	/* a late part of the step it ended at (a field it did not have yet)
	 * does not start it again */
	struct gw_rec lr = {.run = "r", .run_len = 1, .step = 30, .ts = last,
	                    .present = 1u << GW_ROLE_LR, .v = {[GW_ROLE_LR] = 1e-4}};
	ck_assert_int_eq(gw_engine_feed(e, &lr, 99, last + 3700, NULL), 0);
	ck_assert_int_eq(gw_engine_run_info(e, "r", &ri), 0);
	ck_assert(ri.ended);
	ticks(e, last + 3700, 3600);
	ck_assert_int_eq(g.n, 0);
	gw_engine_free(e);
}
END_TEST

START_TEST(run_finished_resolves_an_open_stall)
{
	struct got g = {0};
	struct gw_engine *e = mk(&g);
	double last = live_run(e, "r", 30);
	ticks(e, last, 200);
	ck_assert_int_eq(g.n, 1);
	event(e, "r", 30, "run_finished", json_pack("{s:s}", "reason", "killed"), last + 250);
	ck_assert_int_eq(g.n, 2);
	ck_assert_int_eq(g.kind[1], GW_ALERT_RESOLVE);
	ck_assert_str_eq(g.summary[1], "the run finished (killed) after 250 s of silence (last step before it 30)");
	ck_assert_ptr_nonnull(strstr(g.evidence[1], "\"ended_by\":\"run_finished\""));
	ticks(e, last + 250, 3600);
	ck_assert_int_eq(g.n, 2);
	gw_engine_free(e);
}
END_TEST

/* A run that goes on after it said it finished (a second train() call, a
 * restart under the same name) is watched again. */
START_TEST(a_run_that_goes_on_is_watched_again)
{
	struct got g = {0};
	struct gw_engine *e = mk(&g);
	double last = live_run(e, "r", 30);
	event(e, "r", 30, "run_finished", NULL, last);
	double t = last + 600;
	for (int i = 31; i <= 40; i++)
		rec(e, "r", i, t + (i - 31), t + (i - 31));
	struct gw_run_info ri;
	ck_assert_int_eq(gw_engine_run_info(e, "r", &ri), 0);
	ck_assert(!ri.ended);
	ticks(e, t + 9, 200);
	ck_assert_int_eq(g.n, 1);
	ck_assert_int_eq(g.step[0], 40);
	/* and a restart from a checkpoint (a rewind) after an end, too */
	struct got g2 = {0};
	struct gw_engine *e2 = mk(&g2);
	last = live_run(e2, "q", 30);
	event(e2, "q", 30, "run_finished", NULL, last);
	for (int i = 21; i <= 25; i++)
		rec(e2, "q", i, last + 100 + i, last + 100 + i);
	ticks(e2, last + 125, 400);
	ck_assert_int_eq(g2.n, 1);
	gw_engine_free(e);
	gw_engine_free(e2);
}
END_TEST

START_TEST(max_steps_reached_ends_the_run)
{
	static const char *const names[] = {"max_steps", "total_steps"};
	for (int k = 0; k < 2; k++) {
		struct got g = {0};
		struct gw_engine *e = mk(&g);
		for (int i = 1; i <= 30; i++)
			rec_x(e, "r", i, T0 + i, T0 + i, names[k], 30);
		struct gw_run_info ri;
		ck_assert_int_eq(gw_engine_run_info(e, "r", &ri), 0);
		ck_assert(ri.ended);
		ck_assert_int_eq(ri.max_steps, 30);
		ticks(e, T0 + 30, 3600);
		ck_assert_int_eq(g.n, 0);
		gw_engine_free(e);
	}
	/* short of it: expected to continue, so its silence is a stall */
	struct got g = {0};
	struct gw_engine *e = mk(&g);
	for (int i = 1; i <= 30; i++)
		rec_x(e, "r", i, T0 + i, T0 + i, "max_steps", 1000);
	ticks(e, T0 + 30, 200);
	ck_assert_int_eq(g.n, 1);
	gw_engine_free(e);
	/* the length given once, by an event's attribute */
	struct got g3 = {0};
	e = mk(&g3);
	event(e, "r", 0, "run_started", json_pack("{s:i}", "max_steps", 30), T0);
	live_run(e, "r", 30);
	ticks(e, T0 + 30, 3600);
	ck_assert_int_eq(g3.n, 0);
	/* a length that is no count is ignored */
	struct got g4 = {0};
	struct gw_engine *e4 = mk(&g4);
	for (int i = 1; i <= 30; i++)
		rec_x(e4, "r", i, T0 + i, T0 + i, "max_steps", i == 30 ? 2.5 : -1);
	ck_assert_int_eq(gw_engine_run_info(e4, "r", &(struct gw_run_info){0}), 0);
	ticks(e4, T0 + 30, 200);
	ck_assert_int_eq(g4.n, 1);
	gw_engine_free(e);
	gw_engine_free(e4);
}
END_TEST

START_TEST(engine_run_ended_api)
{
	struct got g = {0};
	struct gw_engine *e = mk(&g);
	ck_assert_int_eq(gw_engine_run_ended(e, "nobody", "file_closed", T0), -ENOENT);
	double last = live_run(e, "a", 30);
	live_run(e, "b", 30);
	ck_assert_int_eq(gw_engine_run_ended(e, "a", "file_closed", last + 1), 0);
	ck_assert_int_eq(gw_engine_run_ended(e, "a", "file_closed", last + 2), 0);  /* harmless twice */
	ticks(e, last, 200);
	/* b alerts, a does not */
	ck_assert_int_eq(g.n, 1);
	ck_assert_ptr_nonnull(strstr(g.summary[0], "logged nothing"));
	/* an open alert resolves when the follower says the file is gone */
	ck_assert_int_eq(gw_engine_run_ended(e, "b", "file_rotated", last + 400), 0);
	ck_assert_int_eq(g.n, 2);
	ck_assert_int_eq(g.kind[1], GW_ALERT_RESOLVE);
	ck_assert_str_eq(g.summary[1], "the run finished (file_rotated) after 400 s of silence (last step before it 30)");
	struct gw_run_info ri;
	ck_assert_int_eq(gw_engine_run_info(e, "b", &ri), 0);
	ck_assert(ri.ended);
	ck_assert_uint_eq(ri.events, 0);   /* not a line */
	gw_engine_free(e);
}
END_TEST

/* `gradwatch send` of an old log: a day-old backlog arrives within a
 * second, then nothing. */
START_TEST(backlog_of_an_old_log_raises_nothing)
{
	struct got g = {0};
	struct gw_engine *e = mk(&g);
	for (int i = 1; i <= 500; i++)
		rec(e, "old", i, T0 - 86400 + i * 2.0, T0 + i * 0.001);
	ticks(e, T0 + 0.5, 7200);
	ck_assert_int_eq(g.n, 0);
	/* an old log that spans less than a second of ts, too */
	for (int i = 1; i <= 50; i++)
		rec(e, "old-fast", i, T0 - 86400 + i * 0.01, T0 + 8000 + i * 0.0001);
	ticks(e, T0 + 8000, 7200);
	ck_assert_int_eq(g.n, 0);
	gw_engine_free(e);
}
END_TEST

/* A live job whose host clock is an hour off: its lines arrive at their
 * own pace, so its silence is a stall. */
START_TEST(a_skewed_clock_is_still_live)
{
	struct got g = {0};
	struct gw_engine *e = mk(&g);
	for (int i = 1; i <= 30; i++)
		rec(e, "skew", i, T0 - 3600 + i, T0 + i + 0.02 * (i % 3));
	ticks(e, T0 + 30, 200);
	ck_assert_int_eq(g.n, 1);
	ck_assert_ptr_nonnull(strstr(g.evidence[0], "\"ts_lag_seconds\":3600"));
	gw_engine_free(e);
}
END_TEST

/* The rate rule at its threshold: stale lines arriving at 0.6 of their ts
 * rate are live, at 0.4 a backlog (stall_live_ratio 0.5). */
START_TEST(arrival_rate_threshold)
{
	for (int k = 0; k < 2; k++) {
		struct got g = {0};
		struct gw_engine *e = mk(&g);
		double rate = k == 0 ? 0.6 : 0.4;
		for (int i = 1; i <= 40; i++)
			rec(e, "r", i, T0 - 3600 + i * 2.0, T0 + i * 2.0 * rate);
		ticks(e, T0 + 80, 400);
		ck_assert_int_eq(g.n, (k == 0 ? 1 : 0));
		gw_engine_free(e);
	}
}
END_TEST

/* A backlog whose ts is recent (a client that queued its lines while the
 * daemon was down) is a job that was alive a moment ago. */
START_TEST(a_fresh_backlog_is_live)
{
	struct got g = {0};
	struct gw_engine *e = mk(&g);
	for (int i = 1; i <= 30; i++)
		rec(e, "r", i, T0 - 30 + i, T0 + i * 0.001);
	ticks(e, T0, 200);
	ck_assert_int_eq(g.n, 1);
	gw_engine_free(e);
}
END_TEST

START_TEST(lines_without_ts_are_judged_by_arrival)
{
	struct got g = {0};
	struct gw_engine *e = mk(&g);
	for (int i = 1; i <= 30; i++)
		rec(e, "r", i, NAN, T0 + i);
	ticks(e, T0 + 30, 200);
	ck_assert_int_eq(g.n, 1);
	gw_engine_free(e);
}
END_TEST

/* Events are signs of life too (a long checkpoint write ends with its
 * checkpoint_saved), and resolve a silence. */
START_TEST(events_count_as_lines)
{
	struct got g = {0};
	struct gw_engine *e = mk(&g);
	double last = live_run(e, "r", 30);
	ticks(e, last, 130);
	ck_assert_int_eq(g.n, 1);
	event(e, "r", 30, "checkpoint_saved", json_object(), last + 140);
	ck_assert_int_eq(g.n, 2);
	ck_assert_int_eq(g.kind[1], GW_ALERT_RESOLVE);
	ck_assert_ptr_nonnull(strstr(g.summary[1], "after 140 s of silence"));
	gw_engine_free(e);
}
END_TEST

/* Replay has no wall clock: nothing happens on ticks, whatever the lines. */
/* The daemon was down 600 s after the run's last line; it restarts at T2. */
START_TEST(restart_watches_a_live_run_from_the_daemon_start)
{
	struct got g = {0};
	struct gw_engine *e = mk(&g);
	double last = live_run(e, "r", 30);
	double down = last + 5, up = last + 600;
	ck_assert_int_eq(gw_engine_restarted(e, "r", down, up), 1);
	ck_assert_int_eq(gw_engine_restarted(e, "nobody", down, up), -ENOENT);
	ticks(e, up, 110);             /* 110 s since the start < 120 s: quiet */
	ck_assert_int_eq(g.n, 0);
	ticks(e, up + 130, 0);
	ck_assert_int_eq(g.n, 1);
	ck_assert_int_eq(g.kind[0], GW_ALERT_OPEN);
	ck_assert_int_eq(g.step[0], 30);
	ck_assert_msg(strstr(g.summary[0], "logged nothing for 130 s since gradwatchd restarted (it "
	                                   "was down 595 s; the run's last line came 5 s before it "
	                                   "stopped)"), "%s", g.summary[0]);
	char want[128];
	snprintf(want, sizeof(want), "\"daemon_down_from\":%.1f,\"daemon_down_to\":%.1f", down, up);
	ck_assert_msg(strstr(g.evidence[0], want), "%s", g.evidence[0]);
	ck_assert_ptr_nonnull(strstr(g.evidence[0], "\"silent_seconds\":730"));
	/* it logs again: resolved; the downtime did not become its usual
	 * interval (another silence of 130 s stalls again) */
	rec(e, "r", 31, up + 200, up + 200);
	ck_assert_int_eq(g.n, 2);
	ck_assert_int_eq(g.kind[1], GW_ALERT_RESOLVE);
	for (int i = 32; i <= 40; i++)
		rec(e, "r", i, up + 200 + (i - 31), up + 200 + (i - 31));
	ticks(e, up + 209 + 130, 0);
	ck_assert_int_eq(g.n, 3);
	ck_assert_ptr_nonnull(strstr(g.summary[2], "has logged nothing for 130 s,"));
	gw_engine_free(e);
}
END_TEST

/* A job that sends a few lines after the restart and dies: its cadence is
 * known from before (the rebuilt state), so it stalls like any other. */
START_TEST(restart_a_run_that_dies_just_after)
{
	struct got g = {0};
	struct gw_engine *e = mk(&g);
	double last = live_run(e, "r", 30);
	double up = last + 60;
	gw_engine_restarted(e, "r", last + 1, up);
	for (int i = 31; i <= 33; i++)
		rec(e, "r", i, up + (i - 30), up + (i - 30));
	ticks(e, up + 3 + 130, 0);
	ck_assert_int_eq(g.n, 1);
	ck_assert_int_eq(g.step[0], 33);
	ck_assert_ptr_nonnull(strstr(g.summary[0], "has logged nothing for 130 s,"));
	ck_assert_ptr_null(strstr(g.evidence[0], "daemon_down"));
	gw_engine_free(e);
}
END_TEST

START_TEST(restart_never_watches_a_finished_run_or_a_backlog)
{
	struct got g = {0};
	struct gw_engine *e = mk(&g);
	double last = live_run(e, "done", 30);
	event(e, "done", 30, "run_finished", json_object(), last);
	/* `gradwatch send` of a two-day-old log, just before the stop */
	for (int i = 1; i <= 300; i++)
		rec(e, "old", i, T0 - 2 * 86400 + 2.0 * i, last + 0.001 * i);
	/* too few lines to know a cadence */
	for (int i = 1; i <= 5; i++)
		rec(e, "short", i, T0 + i, T0 + i);
	double up = last + 600;
	const char *runs[] = {"done", "old", "short"};
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(gw_engine_restarted(e, runs[i], last + 1, up), 0);
	ticks(e, up, 3600);
	ck_assert_int_eq(g.n, 0);
	gw_engine_free(e);
}
END_TEST

START_TEST(replay_never_stalls)
{
	struct got g = {0};
	struct gw_engine_opts o = {.live = false};
	gw_thresholds_default(&o.th);
	struct gw_engine_hooks h = {.data = &g, .on_alert = on_alert};
	struct gw_engine *e = gw_engine_new(&o, &h);
	for (int i = 1; i <= 30; i++)
		rec(e, "r", i, T0 + i, NAN);
	ticks(e, T0 + 30, 3600);
	ck_assert_int_eq(g.n, 0);
	gw_engine_free(e);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stall");
	TCase *tc = tcase_create("silence");
	tcase_add_test(tc, silence_alerts_and_resolves_with_its_length);
	tcase_add_test(tc, run_finished_event_ends_the_run);
	tcase_add_test(tc, run_finished_resolves_an_open_stall);
	tcase_add_test(tc, a_run_that_goes_on_is_watched_again);
	tcase_add_test(tc, max_steps_reached_ends_the_run);
	tcase_add_test(tc, engine_run_ended_api);
	tcase_add_test(tc, backlog_of_an_old_log_raises_nothing);
	tcase_add_test(tc, a_skewed_clock_is_still_live);
	tcase_add_test(tc, arrival_rate_threshold);
	tcase_add_test(tc, a_fresh_backlog_is_live);
	tcase_add_test(tc, lines_without_ts_are_judged_by_arrival);
	tcase_add_test(tc, events_count_as_lines);
	tcase_add_test(tc, replay_never_stalls);
	tcase_add_test(tc, restart_watches_a_live_run_from_the_daemon_start);
	tcase_add_test(tc, restart_a_run_that_dies_just_after);
	tcase_add_test(tc, restart_never_watches_a_finished_run_or_a_backlog);
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
