/*
 * Unit tests of the threshold ranges (detectors/thresholds.c): every
 * threshold of the table at, below and above its range, integer-ness of
 * the counts, non-finite values, the thresholds that must agree with each
 * other, the issue's examples refused with a message that names the key,
 * the range and the reason -- and the guards behind them: the regime code
 * and the engine abort (GW_REQUIRE) instead of computing with an invalid
 * value that reached them some other way.
 */
#include "gwcheck.h"
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "engine_opts.h"
#include "enginefix.h"
#include "hist.h"
#include "regime.h"
#include "thresholds.h"

static double get(const struct gw_thresholds *t, const char *name)
{
	return *(const double *)((const char *)t + gw_threshold_find(name)->offset);
}

/* Set one value on a default set: the return code, and the value after. */
static int try_set(const char *name, double v, double *after, char *err, size_t errlen)
{
	struct gw_thresholds t;
	gw_thresholds_default(&t);
	int rc = gw_thresholds_set(&t, name, v, err, errlen);
	*after = get(&t, name);
	return rc;
}

START_TEST(defaults_pass)
{
	struct gw_thresholds t;
	gw_thresholds_default(&t);
	char err[256] = "";
	ck_assert_msg(gw_thresholds_check(&t, err, sizeof(err)) == 0, "%s", err);
	size_t n = 0;
	for (const struct gw_threshold_info *i = gw_threshold_list(); i->name; i++, n++) {
		ck_assert_msg(i->reason && *i->reason, "%s has no reason", i->name);
		ck_assert_msg(i->range_reason && *i->range_reason, "%s has no range reason", i->name);
		ck_assert_msg(i->lo < i->hi, "%s: empty range", i->name);
	}
	ck_assert_uint_ge(n, 60);
}
END_TEST

/* Every threshold: its bounds (just inside for an open one) are taken, just
 * outside refused and the old value kept; counts take integers only. */
START_TEST(every_threshold_at_below_above)
{
	char err[512];
	double after;
	for (const struct gw_threshold_info *i = gw_threshold_list(); i->name; i++) {
		double lo_in = i->kind == GW_TH_ABOVE ? nextafter(i->lo, INFINITY) : i->lo;
		double lo_out = i->kind == GW_TH_ABOVE ? i->lo
		              : i->kind == GW_TH_COUNT ? i->lo - 1 : nextafter(i->lo, -INFINITY);
		double hi_out = i->kind == GW_TH_COUNT ? i->hi + 1 : nextafter(i->hi, INFINITY);
		ck_assert_msg(try_set(i->name, lo_in, &after, err, sizeof(err)) == 0, "%s at %g: %s",
		              i->name, lo_in, err);
		ck_assert_double_eq(after, lo_in);
		ck_assert_msg(try_set(i->name, i->hi, &after, err, sizeof(err)) == 0, "%s at %g: %s",
		              i->name, i->hi, err);
		ck_assert_double_eq(after, i->hi);
		ck_assert_int_eq(try_set(i->name, lo_out, &after, err, sizeof(err)), -EINVAL);
		ck_assert_double_eq(after, i->def);
		ck_assert_msg(strstr(err, i->name) && strstr(err, i->range_reason), "%s", err);
		ck_assert_int_eq(try_set(i->name, hi_out, &after, err, sizeof(err)), -EINVAL);
		ck_assert_double_eq(after, i->def);
		ck_assert_int_eq(try_set(i->name, -1e300, &after, NULL, 0), -EINVAL);
		ck_assert_int_eq(try_set(i->name, NAN, &after, NULL, 0), -EINVAL);
		ck_assert_int_eq(try_set(i->name, INFINITY, &after, NULL, 0), -EINVAL);
		ck_assert_double_eq(after, i->def);
		if (i->kind == GW_TH_COUNT) {
			ck_assert_int_eq(try_set(i->name, i->lo + 0.5, &after, err, sizeof(err)), -EINVAL);
			ck_assert_msg(strstr(err, "an integer in"), "%s", err);
		}
		/* the default is inside its own range */
		ck_assert_msg(try_set(i->name, i->def, &after, err, sizeof(err)) == 0, "%s: %s", i->name, err);
	}
	struct gw_thresholds t;
	gw_thresholds_default(&t);
	ck_assert_int_eq(gw_thresholds_set(&t, "no_such_threshold", 1, NULL, 0), -ENOENT);
}
END_TEST

START_TEST(the_issues_examples)
{
	struct gw_thresholds t;
	gw_thresholds_default(&t);
	char err[512];
	ck_assert_int_eq(gw_thresholds_set(&t, "mr_post", -1, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "mr_post must be an integer in [1, 512], not -1: records: at least 1; "
	                      "mr_post + mr_gap + mr_pre must fit in the 512 of the history");
	ck_assert_int_eq(gw_thresholds_set(&t, "post_window", -5, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "post_window must be an integer in [1, 32], not -5"));
	ck_assert_int_eq(gw_thresholds_set(&t, "thr_collapse", 0, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "thr_collapse must be in (0, 0.75], not 0"));
	ck_assert_double_eq(t.mr_post, 32);
	ck_assert_double_eq(t.post_window, 8);
	ck_assert_int_eq(gw_thresholds_check(&t, NULL, 0), 0);
}
END_TEST

/* The thresholds that must agree: each relation at its edge and past it. */
START_TEST(relations)
{
	static const struct {
		const char *a; double va; const char *b; double vb; bool ok; const char *msg;
	} cases[] = {
		{"pre_min", 100, "pre_window", 100, true, NULL},
		{"pre_min", 101, "pre_window", 100, false, "pre_min (101) must not exceed pre_window (100)"},
		{"post_window_min", 8, "post_window", 8, true, NULL},
		{"post_window_min", 9, "post_window", 8, false, "post_window_min (9) must not exceed"},
		{"post_window", 32, "post_window_min", 5, true, NULL},
		{"post_window_long", 7, "post_window_min", 5, false, "post_window (8) must not exceed post_window_long (7)"},
		{"div_min_steps", 5, "div_steps", 5, true, NULL},
		{"div_min_steps", 6, "div_steps", 5, false, "div_min_steps (6) must not exceed div_steps (5)"},
		{"mr_pre", 472, "mr_post", 32, true, NULL},
		{"mr_pre", 473, "mr_post", 32, false, "mr_post + mr_gap + mr_pre (32 + 8 + 473) must be at most 512"},
		{"sp_base_window", 500, "sp_cur_window", 12, true, NULL},
		{"sp_base_window", 500, "sp_cur_window", 13, false, "sp_base_window + sp_cur_window (500 + 13)"},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct gw_thresholds t;
		gw_thresholds_default(&t);
		char err[512] = "";
		ck_assert_int_eq(gw_thresholds_set(&t, cases[k].a, cases[k].va, NULL, 0), 0);
		ck_assert_int_eq(gw_thresholds_set(&t, cases[k].b, cases[k].vb, NULL, 0), 0);
		int rc = gw_thresholds_check(&t, err, sizeof(err));
		ck_assert_msg(cases[k].ok ? rc == 0 : rc == -EINVAL, "case %zu: %d %s", k, rc, err);
		if (!cases[k].ok)
			ck_assert_msg(strstr(err, cases[k].msg), "case %zu: %s", k, err);
	}
	/* a value written past the setter is caught by the check too */
	struct gw_thresholds t;
	gw_thresholds_default(&t);
	t.sigma_floor_log = 0;
	char err[256];
	ck_assert_int_eq(gw_thresholds_check(&t, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "sigma_floor_log must be in (0, 10], not 0"));
}
END_TEST

START_TEST(ranges_print)
{
	char b[64];
	ck_assert_str_eq(gw_threshold_range(gw_threshold_find("post_window"), b, sizeof(b)),
	                 "integer in [1, 32]");
	ck_assert_str_eq(gw_threshold_range(gw_threshold_find("thr_collapse"), b, sizeof(b)), "(0, 0.75]");
	ck_assert_str_eq(gw_threshold_range(gw_threshold_find("or_rel_loss"), b, sizeof(b)), "[1, 1000]");
	ck_assert_ptr_null(gw_threshold_find("nope"));
}
END_TEST

/* A detector's own thresholds (loss_scale's, in det_loss_scale.c) are in
 * the one list, refused with their range and why, and read per run: a run
 * whose glob sets ls_storm_n 2 alerts on a storm of 2 overflows, the others
 * (4) do not. */
static void overflow(struct gw_engine *e, const char *run, int64_t step, double from, double to)
{
	json_t *a = json_pack("{s:o, s:o}", "attempted_loss_scale", json_real(from), "loss_scale",
	                      json_real(to));
	struct gw_rec r = event(run, step, "overflow", a);
	ck_assert_int_eq(gw_engine_feed(e, &r, (uint64_t)step, NAN, NULL), 0);
	json_decref(a);
}

START_TEST(a_detectors_own_per_run)
{
	const struct gw_threshold_info *i = gw_threshold_find("ls_storm_n");
	ck_assert_ptr_nonnull(i);
	ck_assert_double_eq(i->def, 4);
	ck_assert_uint_ge(i->offset, offsetof(struct gw_thresholds, own));
	char err[512];
	struct gw_thresholds t;
	gw_thresholds_default(&t);
	ck_assert_double_eq(get(&t, "ls_storm_n"), 4);
	ck_assert_int_eq(gw_thresholds_set(&t, "ls_storm_n", 1, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "ls_storm_n must be an integer in [2, 1e+09], not 1: overflows: at "
	                      "least 2 (one is routine)");
	ck_assert_double_eq(get(&t, "ls_storm_n"), 4);

	struct gw_th_override ov = {.glob = (char *)"touchy-*"};
	gw_thresholds_default(&ov.th);
	ck_assert_int_eq(gw_thresholds_set(&ov.th, "ls_storm_n", 2, NULL, 0), 0);
	struct seen s = {0};
	struct gw_engine *e = mk(&s, &ov, 1);
	for (int k = 0; k < 2; k++) {
		const char *run = k ? "touchy-1" : "calm";
		overflow(e, run, 100, 16, 8);
		overflow(e, run, 101, 8, 4);
	}
	ck_assert_int_eq(s.alerts, 1);
	ck_assert_str_eq(s.det[0], "loss_scale");
	ck_assert_msg(strstr(s.summary[0], "2 overflows in a row"), "%s", s.summary[0]);
	gw_engine_free(e);
}
END_TEST

/* The regime code asserts its windows: an invalid set that got past the
 * loader (a bug) aborts instead of casting -5 to size_t. */
START_TEST(regime_asserts_windows)
{
	struct gw_thresholds th;
	gw_thresholds_default(&th);
	th.post_window = -5;
	struct gw_restart rs = {.active = true, .k = 3};
	struct gw_hist_rec r = {.valid = true, .loss = 1, .grad_norm = 1, .lr = NAN};
	gw_regime_update(&rs, &r, &th);
}
END_TEST

START_TEST(regime_valid_windows_run)
{
	struct gw_thresholds th;
	gw_thresholds_default(&th);
	struct gw_restart rs = {.active = true, .k = 3};
	struct gw_hist_rec r = {.valid = true, .loss = 1, .grad_norm = 1, .lr = NAN};
	gw_regime_update(&rs, &r, &th);
	ck_assert(!rs.win[GW_WIN_SHORT].ready);  /* no regime: nothing judged */
}
END_TEST

START_TEST(engine_refuses_invalid)
{
	struct gw_engine_opts o = {0};
	gw_thresholds_default(&o.th);
	o.th.mr_post = -1;
	gw_engine_new(&o, NULL);
}
END_TEST

START_TEST(engine_refuses_invalid_override)
{
	struct gw_engine_opts o = {0};
	gw_thresholds_default(&o.th);
	struct gw_engine *e = gw_engine_new(&o, NULL);
	ck_assert_ptr_nonnull(e);
	struct gw_th_override ov = {.glob = (char *)"x*"};
	gw_thresholds_default(&ov.th);
	ov.th.post_window_min = 0;
	o.overrides = &ov;
	o.n_overrides = 1;
	gw_engine_reconfigure(e, &o);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("thresholds");
	TCase *tc = tcase_create("ranges");
	tcase_add_test(tc, defaults_pass);
	tcase_add_test(tc, every_threshold_at_below_above);
	tcase_add_test(tc, the_issues_examples);
	tcase_add_test(tc, relations);
	tcase_add_test(tc, ranges_print);
	tcase_add_test(tc, a_detectors_own_per_run);
	tcase_add_test(tc, regime_valid_windows_run);
	tcase_add_test_raise_signal(tc, regime_asserts_windows, SIGABRT);
	tcase_add_test_raise_signal(tc, engine_refuses_invalid, SIGABRT);
	tcase_add_test_raise_signal(tc, engine_refuses_invalid_override, SIGABRT);
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
