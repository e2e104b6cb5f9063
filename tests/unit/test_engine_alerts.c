/*
 * Unit tests of what the detector engine reports (detectors/engine.c,
 * verdict.c): incidents (one alert per incident, resolve) and stable alert
 * ids, the previous-window copy at a restart, thresholds per run glob, the
 * precedence rules of the registry (each shown to matter by turning its
 * winner off), alert texts kept UTF-8 and non-finite evidence kept as null.
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
	Suite *s = suite_create("engine_alerts");
	TCase *tc = tcase_create("engine_alerts");
	tcase_add_test(tc, non_finite_evidence_is_null_not_lost);
	tcase_add_test(tc, nonfinite_incident_and_ids);
	tcase_add_test(tc, prev_window);
	tcase_add_test(tc, thresholds_by_glob);
	tcase_add_test(tc, restart_explanation_silences_spikes);
	tcase_add_test(tc, explosion_aftermath_is_not_a_reset);
	tcase_add_test(tc, noisy_run_loss_jump);
	tcase_add_test(tc, alert_texts_stay_utf8);
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
