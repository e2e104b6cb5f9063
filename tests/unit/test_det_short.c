/*
 * Unit tests of the short-context and loss-scale detectors
 * (detectors/det_short.c, det_loss_scale.c) through a real engine: each
 * rule fires on a case built like the real excerpt it is for and stays
 * quiet on a near miss; the alert says the context was short and how many
 * points it had; the same lines give the same alerts live and in replay; a
 * run with the spike detectors' full history is no longer short.
 */
#include "gwcheck.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "engine_opts.h"

struct got {
	int n;
	char det[16][32];
	char rule[16][16];
	int sev[16];
	char summary[16][512];
};

static void on_alert(void *d, const struct gw_alert *a)
{
	struct got *g = d;
	if (a->kind != GW_ALERT_OPEN || g->n >= 16)
		return;
	snprintf(g->det[g->n], sizeof(g->det[0]), "%s", a->detector);
	const json_t *r = a->evidence ? json_object_get(a->evidence, "rule") : NULL;
	snprintf(g->rule[g->n], sizeof(g->rule[0]), "%s", json_is_string(r) ? json_string_value(r) : "");
	g->sev[g->n] = a->severity;
	snprintf(g->summary[g->n], sizeof(g->summary[0]), "%s", a->summary);
	g->n++;
}

static struct gw_engine *mk(struct got *g, bool live)
{
	struct gw_engine_opts o = {.live = live};
	gw_thresholds_default(&o.th);
	struct gw_engine_hooks h = {.data = g, .on_alert = on_alert};
	return gw_engine_new(&o, &h);
}

/* A record; NaN leaves a value out; scale NaN: no loss_scale field. */
static void rec(struct gw_engine *e, int64_t step, double loss, double gn, double scale)
{
	struct gw_rec r = {.run = "r", .run_len = 1, .step = step, .ts = NAN};
	if (!isnan(loss)) {
		r.present |= 1u << GW_ROLE_LOSS;
		r.v[GW_ROLE_LOSS] = loss;
	}
	if (!isnan(gn)) {
		r.present |= 1u << GW_ROLE_GRAD_NORM;
		r.v[GW_ROLE_GRAD_NORM] = gn;
	}
	if (!isnan(scale)) {
		r.fields |= 1u << GW_FIELD_LOSS_SCALE;
		r.f[GW_FIELD_LOSS_SCALE] = scale;
	}
	ck_assert_int_eq(gw_engine_feed(e, &r, (uint64_t)step, NAN, NULL), 0);
}

static void overflow(struct gw_engine *e, int64_t step, double attempted, double scale)
{
	struct gw_rec r = {.run = "r", .run_len = 1, .step = step, .ts = NAN, .event = "overflow"};
	r.attrs = json_pack("{s:f, s:f}", "attempted_loss_scale", attempted, "loss_scale", scale);
	ck_assert_int_eq(gw_engine_feed(e, &r, (uint64_t)step, NAN, NULL), 0);
	json_decref(r.attrs);
}

/* The 104B spike at 11447 (../shared/realworld): 2 points, then x2.5. */
START_TEST(jump_after_two_points)
{
	struct got g = {0};
	struct gw_engine *e = mk(&g, false);
	rec(e, 11446, 3.063, 12950, 65536);
	rec(e, 11447, 3.114, 262600, 65536);
	ck_assert_int_eq(g.n, 0);
	rec(e, 11448, 7.712, 254700, 65536);
	ck_assert_int_eq(g.n, 1);
	ck_assert_str_eq(g.det[0], "short_context");
	ck_assert_str_eq(g.rule[0], "jump");
	ck_assert_ptr_nonnull(strstr(g.summary[0], "loss jumped to 7.71 at step 11,448"));
	ck_assert_ptr_nonnull(strstr(g.summary[0], "short context: judged on the run's 3 points"));
	gw_engine_free(e);
}
END_TEST

/* Near misses: x2.2 after two points, and a whole-unit rule on a small loss. */
START_TEST(no_jump_below_thresholds)
{
	struct got g = {0};
	struct gw_engine *e = mk(&g, false);
	rec(e, 100, 3.06, NAN, NAN);
	rec(e, 101, 3.11, NAN, NAN);
	rec(e, 102, 6.80, NAN, NAN);   /* x2.19 < sc_jump_rel2 2.3 */
	ck_assert_int_eq(g.n, 0);
	gw_engine_free(e);
	e = mk(&g, false);
	rec(e, 100, 0.030, NAN, NAN);
	rec(e, 101, 0.031, NAN, NAN);
	rec(e, 102, 0.031, NAN, NAN);
	rec(e, 103, 0.250, NAN, NAN);  /* x8, but +0.22: no whole unit */
	ck_assert_int_eq(g.n, 0);
	gw_engine_free(e);
}
END_TEST

/* litgpt 628: one point, then a level x6.7 that stays for 8 points. */
START_TEST(level_that_stays)
{
	struct got g = {0};
	struct gw_engine *e = mk(&g, false);
	static const double after[] = {11.46, 11.75, 11.50, 11.48, 12.19, 10.02, 10.94, 10.55};
	rec(e, 1151, 1.702, NAN, NAN);
	for (int i = 0; i < 8; i++) {
		ck_assert_int_eq(g.n, 0);
		rec(e, 1152 + i, after[i], NAN, NAN);
	}
	ck_assert_int_eq(g.n, 1);
	ck_assert_str_eq(g.rule[0], "level");
	ck_assert_int_eq(g.sev[0], GW_SEV_CRITICAL);
	gw_engine_free(e);
}
END_TEST

/* keras 13006: the same loss on 3 lines over 300 steps; a progress bar's
 * held value over 13 steps is no stagnation. */
START_TEST(frozen_loss)
{
	struct got g = {0};
	struct gw_engine *e = mk(&g, false);
	for (int i = 0; i < 14; i++)
		rec(e, 1586 + i, 0.158, NAN, NAN);
	ck_assert_int_eq(g.n, 0);
	gw_engine_free(e);
	e = mk(&g, false);
	rec(e, 100, 7.9712, NAN, NAN);
	rec(e, 300, 7.9712, NAN, NAN);
	ck_assert_int_eq(g.n, 0);
	rec(e, 400, 7.9712, NAN, NAN);
	ck_assert_int_eq(g.n, 1);
	ck_assert_str_eq(g.rule[0], "frozen");
	gw_engine_free(e);
}
END_TEST

START_TEST(collapse_and_absurd)
{
	struct got g = {0};
	struct gw_engine *e = mk(&g, false);
	rec(e, 1, 12.18, 231.7, NAN);
	rec(e, 2, 1.787e-6, 0.0002, NAN);
	ck_assert_int_eq(g.n, 1);
	ck_assert_str_eq(g.rule[0], "collapse");
	gw_engine_free(e);
	g.n = 0;
	e = mk(&g, false);
	rec(e, 1550, 5.055e26, NAN, NAN);
	ck_assert_int_eq(g.n, 1);
	ck_assert_str_eq(g.rule[0], "absurd");
	gw_engine_free(e);
}
END_TEST

/* A storm to a small scale alerts; calibration from 2^32 does not. */
START_TEST(loss_scale_storm_and_calibration)
{
	struct got g = {0};
	struct gw_engine *e = mk(&g, false);
	double s = 4294967296.0;
	for (int i = 1; i <= 6; i++, s /= 2)
		overflow(e, i, s, s / 2);
	ck_assert_int_eq(g.n, 0);
	gw_engine_free(e);
	e = mk(&g, false);
	s = 64;
	for (int i = 0; i < 5; i++, s /= 2)
		overflow(e, 378 + i, s, s / 2);
	ck_assert_int_eq(g.n, 1);
	ck_assert_str_eq(g.det[0], "loss_scale");
	ck_assert_str_eq(g.rule[0], "storm");
	ck_assert_ptr_nonnull(strstr(g.summary[0], "drove the loss scale from 64 to 4"));
	gw_engine_free(e);
}
END_TEST

START_TEST(loss_scale_floor_and_pinned)
{
	struct got g = {0};
	struct gw_engine *e = mk(&g, false);
	rec(e, 2910, 4.313, 0.289, 1);
	overflow(e, 2911, 1, 1);        /* one overflow at the floor: healthy */
	rec(e, 3009, 4.226, 0.314, 1);
	ck_assert_int_eq(g.n, 0);
	overflow(e, 3010, 1, 1);        /* a second within 50 steps? no: 99 apart */
	ck_assert_int_eq(g.n, 0);
	overflow(e, 3011, 1, 1);
	ck_assert_int_eq(g.n, 1);
	ck_assert_str_eq(g.rule[0], "pinned");
	gw_engine_free(e);
	g.n = 0;
	e = mk(&g, false);
	rec(e, 10198, 6.343, 0.39, 0.5);
	overflow(e, 10199, 0.5, 0.25);
	ck_assert_int_eq(g.n, 1);
	ck_assert_str_eq(g.rule[0], "floor");
	ck_assert_int_eq(g.sev[0], GW_SEV_CRITICAL);
	gw_engine_free(e);
}
END_TEST

/* Megatron's skipped / nan iteration counts: one record is calibration,
 * three in a row throw updates away. */
static void rec_skipped(struct gw_engine *e, int64_t step, double skipped, double nans)
{
	struct gw_rec r = {.run = "r", .run_len = 1, .step = step, .ts = NAN,
	                   .present = 1u << GW_ROLE_LOSS, .fields = 1u << GW_FIELD_SKIPPED |
	                                                            1u << GW_FIELD_NAN_ITERATIONS};
	r.v[GW_ROLE_LOSS] = 2.5 + 0.01 * (double)(step / 10 % 2);
	r.f[GW_FIELD_SKIPPED] = skipped;
	r.f[GW_FIELD_NAN_ITERATIONS] = nans;
	ck_assert_int_eq(gw_engine_feed(e, &r, (uint64_t)step, NAN, NULL), 0);
}

START_TEST(loss_scale_skipped_streak)
{
	struct got g = {0};
	struct gw_engine *e = mk(&g, false);
	rec_skipped(e, 10, 0, 0);
	rec_skipped(e, 20, 1, 0);
	rec_skipped(e, 30, 0, 0);
	rec_skipped(e, 40, 2, 0);
	rec_skipped(e, 50, 3, 1);
	ck_assert_int_eq(g.n, 0);
	rec_skipped(e, 60, 10, 0);
	ck_assert_int_eq(g.n, 1);
	ck_assert_str_eq(g.rule[0], "skipped");
	ck_assert_int_eq(g.sev[0], GW_SEV_CRITICAL);
	ck_assert_ptr_nonnull(strstr(g.summary[0], "15 skipped, 1 with a NaN loss"));
	gw_engine_free(e);
}
END_TEST

/* The same lines live and in replay give the same alerts. */
START_TEST(live_equals_replay)
{
	struct got a = {0}, b = {0};
	struct gw_engine *e1 = mk(&a, false), *e2 = mk(&b, true);
	static const double l[] = {2.776, 2.773, 2.768, 7.344, 8.716, 7.654};
	for (int i = 0; i < 6; i++) {
		rec(e1, 29020 + 10 * i, l[i], NAN, NAN);
		rec(e2, 29020 + 10 * i, l[i], NAN, NAN);
	}
	ck_assert_int_eq(a.n, 1);
	ck_assert_int_eq(b.n, 1);
	ck_assert_str_eq(a.summary[0], b.summary[0]);
	gw_engine_free(e1);
	gw_engine_free(e2);
}
END_TEST

/* Past the spike detectors' 69 valid records the run is not short. */
START_TEST(long_history_is_not_short)
{
	struct got g = {0};
	struct gw_engine *e = mk(&g, false);
	for (int i = 1; i <= 80; i++)
		rec(e, 100 + i, 3.0 + 0.01 * (i % 3), 1.0 + 0.01 * (i % 2), NAN);
	rec(e, 181, 3.0 + 0.01, 1.0, NAN);
	rec(e, 182, 3.0 + 0.01, 1.0, NAN);
	rec(e, 183, 3.0 + 0.01, 1.0, NAN);
	for (int i = 0; i < g.n; i++)
		ck_assert_str_ne(g.det[i], "short_context");
	gw_engine_free(e);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("det_short");
	TCase *tc = tcase_create("det_short");
	tcase_add_test(tc, jump_after_two_points);
	tcase_add_test(tc, no_jump_below_thresholds);
	tcase_add_test(tc, level_that_stays);
	tcase_add_test(tc, frozen_loss);
	tcase_add_test(tc, collapse_and_absurd);
	tcase_add_test(tc, loss_scale_storm_and_calibration);
	tcase_add_test(tc, loss_scale_floor_and_pinned);
	tcase_add_test(tc, loss_scale_skipped_streak);
	tcase_add_test(tc, live_equals_replay);
	tcase_add_test(tc, long_history_is_not_short);
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
