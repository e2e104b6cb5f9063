/*
 * A new detector by docs/detectors.md's "Adding a detector", end to end:
 * det_example.c (its own file, its thresholds in its own table), the real
 * registry with its row added (with_test_detector.py), its lines in
 * tests/unit/meson.build, and this test, which feeds records through a
 * real engine.  The detector is found by name, last in the registry after
 * every shipped one; it opens one alert per incident and resolves it; a
 * near miss (zero, a tiny loss, a NaN) raises nothing of it; turned off in
 * the options it is silent; the shipped detectors run beside it as before.
 * Its thresholds are in the one list of thresholds, set from a real
 * configuration file globally and per run glob (the engine made as the
 * daemon makes it), and a bad value, or two that disagree, is refused with
 * the key, the range and why, as a shared threshold is.
 */
#include "gwcheck.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "enginefix.h"
#include "engine.h"
#include "registry.h"
#include "thresholds.h"

#define DET "example_negative_loss"

/* The index in s of the n-th (0-based) alert of the test detector. */
static int nth(const struct seen *s, int n)
{
	for (int i = 0; i < s->alerts && i < 16; i++)
		if (strcmp(s->det[i], DET) == 0 && n-- == 0)
			return i;
	ck_abort_msg("no alert %d of %s", n, DET);
	return -1;
}

START_TEST(registered_last_after_the_shipped_ones)
{
	int i = gw_det_index(DET);
	ck_assert_int_ge(i, 1);
	ck_assert_ptr_null(gw_det_registry[i + 1]);
	ck_assert_str_eq(gw_det_registry[i]->name, DET);
	ck_assert_int_eq(gw_det_index("nonfinite"), 0);
	for (int k = 0; k < i; k++)
		ck_assert_int_eq(gw_det_index(gw_det_registry[k]->name), k);
}
END_TEST

START_TEST(opens_once_per_incident_and_resolves)
{
	struct seen s = {0};
	struct gw_engine *e = mk(&s, NULL, 0);
	uint64_t line = 0;
	for (int i = 1; i <= 20; i++)
		rec(e, "neg", i, NAN, 0.5 - 0.01 * i, 1.0, ++line);
	ck_assert_int_eq(alerts_of(&s, DET, GW_ALERT_OPEN), 0);
	rec(e, "neg", 21, NAN, -0.25, 1.0, ++line);
	rec(e, "neg", 22, NAN, -0.5, 1.0, ++line);      /* the same incident */
	ck_assert_int_eq(alerts_of(&s, DET, GW_ALERT_OPEN), 1);
	int a = nth(&s, 0);
	ck_assert_int_eq(s.step[a], 21);
	ck_assert_msg(strstr(s.summary[a], "-0.25") && strstr(s.summary[a], "step 21"), "%s",
	              s.summary[a]);
	for (int i = 23; i <= 31; i++)                   /* 9 back above zero: not yet */
		rec(e, "neg", i, NAN, 0.3, 1.0, ++line);
	ck_assert_int_eq(alerts_of(&s, DET, GW_ALERT_RESOLVE), 0);
	rec(e, "neg", 32, NAN, 0.3, 1.0, ++line);        /* the 10th */
	ck_assert_int_eq(alerts_of(&s, DET, GW_ALERT_RESOLVE), 1);
	ck_assert_str_eq(s.id[nth(&s, 1)], s.id[a]);
	rec(e, "neg", 33, NAN, -0.1, 1.0, ++line);       /* a new incident */
	ck_assert_int_eq(alerts_of(&s, DET, GW_ALERT_OPEN), 2);
	ck_assert_str_ne(s.id[nth(&s, 2)], s.id[a]);
	gw_engine_free(e);
}
END_TEST

START_TEST(near_misses_raise_nothing_of_it)
{
	struct seen s = {0};
	struct gw_engine *e = mk(&s, NULL, 0);
	uint64_t line = 0;
	for (int i = 1; i <= 20; i++)
		rec(e, "zero", i, NAN, 0.5 - 0.025 * i, 1.0, ++line);   /* down to exactly 0 */
	rec(e, "zero", 21, NAN, 1e-300, 1.0, ++line);
	rec(e, "zero", 22, NAN, -0.0, 1.0, ++line);
	rec(e, "zero", 23, NAN, NAN, 1.0, ++line);       /* the shipped nonfinite's */
	ck_assert_int_eq(alerts_of(&s, DET, GW_ALERT_OPEN), 0);
	ck_assert_int_eq(opened(&s, "nonfinite"), 1);
	gw_engine_free(e);
}
END_TEST

START_TEST(turned_off_it_is_silent)
{
	struct seen s = {0};
	struct gw_engine *e = mk_off(&s, NULL, 0, DET);
	uint64_t line = 0;
	for (int i = 1; i <= 10; i++)
		rec(e, "off", i, NAN, 0.5, 1.0, ++line);
	rec(e, "off", 11, NAN, -1.0, 1.0, ++line);
	ck_assert_int_eq(alerts_of(&s, DET, GW_ALERT_OPEN), 0);
	gw_engine_free(e);
}
END_TEST

START_TEST(its_thresholds_are_in_the_one_list)
{
	const struct gw_threshold_info *q = gw_threshold_find("neg_quiet_steps");
	ck_assert_ptr_nonnull(q);
	ck_assert_double_eq(q->def, 10);
	ck_assert_ptr_nonnull(gw_threshold_find("ls_storm_n"));   /* loss_scale's own */
	ck_assert_ptr_nonnull(gw_threshold_find("post_window"));  /* a shared one */
	ck_assert_ptr_null(gw_threshold_find("neg_nope"));
	/* the shared ones first, then the detectors' in registry order: its
	 * three last; every name once */
	const struct gw_threshold_info *l = gw_threshold_list();
	size_t n = 0;
	while (l[n].name)
		n++;
	ck_assert_uint_ge(n, 60);
	ck_assert_str_eq(l[n - 3].name, "neg_below");
	ck_assert_str_eq(l[n - 1].name, "neg_quiet_steps");
	for (size_t i = 0; i < n; i++)
		for (size_t k = i + 1; k < n; k++)
			ck_assert_str_ne(l[i].name, l[k].name);
	struct gw_thresholds t;
	gw_thresholds_default(&t);
	ck_assert_double_eq(*(const double *)((const char *)&t + q->offset), 10);
	char err[512];
	ck_assert_int_eq(gw_thresholds_set(&t, "neg_quiet_steps", 2.5, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "neg_quiet_steps must be an integer in [1, 1e+06], not 2.5: lines: at "
	                      "least 1 (one line back ends it), at most 1e6");
	ck_assert_int_eq(gw_thresholds_set(&t, "neg_nope", 1, err, sizeof(err)), -ENOENT);
	ck_assert_str_eq(err, "no threshold named \"neg_nope\"");
}
END_TEST

static char tmpdir[64];

static void tmp_setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/gw_det_XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void tmp_teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Load text, a configuration file, over the defaults into c: the return
 * code, with the message in err. */
static int load_cfg(struct gw_cfg *c, const char *text, char *err, size_t errlen)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/gradwatchd.json", tmpdir);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(gw_cfg_defaults(c), 0);
	err[0] = '\0';
	return gw_cfg_load(c, path, err, errlen);
}

/* The engine of a configuration, made as the daemon makes it
 * (core/ingest_start.c): its thresholds and its per-run overrides. */
static struct gw_engine *mk_cfg(struct seen *s, const struct gw_cfg *c)
{
	struct gw_engine_opts o = c->engine;
	o.overrides = c->overrides;
	o.n_overrides = c->n_overrides;
	struct gw_engine_hooks h = {.data = s, .on_alert = on_alert, .on_segment = on_seg};
	return gw_engine_new(&o, &h);
}

START_TEST(set_from_a_config_globally_and_per_run)
{
	struct gw_cfg c;
	char err[512];
	ck_assert_msg(load_cfg(&c, "{\"thresholds\": {\"neg_quiet_steps\": 3},\n"
	                           " \"runs\": [{\"match\": \"strict-*\", \"thresholds\":\n"
	                           "   {\"neg_quiet_steps\": 1, \"neg_critical_below\": -0.5}}]}\n",
	                      err, sizeof(err)) == 0, "%s", err);
	/* --check-config writes them with the others */
	json_t *j = gw_cfg_to_json(&c);
	ck_assert_double_eq(json_number_value(json_object_get(json_object_get(j, "thresholds"),
	                                                      "neg_quiet_steps")), 3);
	ck_assert_double_eq(json_number_value(json_object_get(json_object_get(j, "thresholds"),
	                                                      "neg_below")), 0);
	json_decref(j);
	struct seen s = {0};
	struct gw_engine *e = mk_cfg(&s, &c);
	uint64_t line = 0;
	/* the global value: 3 lines back end it, and -0.75 is no critical */
	rec(e, "plain", 1, NAN, -0.25, 1.0, ++line);
	rec(e, "plain", 2, NAN, -0.75, 1.0, ++line);
	rec(e, "plain", 3, NAN, 0.3, 1.0, ++line);
	rec(e, "plain", 4, NAN, 0.3, 1.0, ++line);
	ck_assert_int_eq(alerts_of(&s, DET, GW_ALERT_OPEN), 1);
	ck_assert_int_eq(alerts_of(&s, DET, GW_ALERT_UPDATE), 0);
	ck_assert_int_eq(alerts_of(&s, DET, GW_ALERT_RESOLVE), 0);
	rec(e, "plain", 5, NAN, 0.3, 1.0, ++line);
	ck_assert_int_eq(alerts_of(&s, DET, GW_ALERT_RESOLVE), 1);
	/* the run's glob: -0.75 is critical, and one line back ends it */
	rec(e, "strict-1", 1, NAN, -0.25, 1.0, ++line);
	rec(e, "strict-1", 2, NAN, -0.75, 1.0, ++line);
	ck_assert_int_eq(alerts_of(&s, DET, GW_ALERT_OPEN), 2);
	ck_assert_int_eq(alerts_of(&s, DET, GW_ALERT_UPDATE), 1);
	ck_assert_msg(strstr(s.summary[nth(&s, 3)], "below -0.5"), "%s", s.summary[nth(&s, 3)]);
	rec(e, "strict-1", 3, NAN, 0.3, 1.0, ++line);
	ck_assert_int_eq(alerts_of(&s, DET, GW_ALERT_RESOLVE), 2);
	gw_engine_free(e);
	gw_cfg_free(&c);
}
END_TEST

START_TEST(a_bad_value_gets_its_range_error)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{"{\"thresholds\": {\"neg_quiet_steps\": 0}}",
		 "gradwatchd.json: thresholds.neg_quiet_steps must be an integer in [1, 1e+06], not 0: "
		 "lines: at least 1 (one line back ends it), at most 1e6"},
		{"{\"runs\": [{\"match\": \"x*\", \"thresholds\": {\"neg_below\": 0.5}}]}",
		 "gradwatchd.json: runs[0].thresholds.neg_below must be in [-1e+300, 0], not 0.5: a loss: "
		 "at most 0 (above, a healthy loss near zero would fire)"},
		{"{\"runs\": [{\"match\": \"x*\", \"thresholds\": {\"neg_below\": -2}}]}",
		 "gradwatchd.json: runs[0].thresholds: neg_critical_below (-1) must not exceed neg_below "
		 "(-2): a loss would be critical before it opens an incident"},
		{"{\"thresholds\": {\"neg_nope\": 1}}",
		 "gradwatchd.json: unknown threshold \"thresholds.neg_nope\""},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct gw_cfg c;
		char err[512];
		ck_assert_int_eq(load_cfg(&c, cases[k].text, err, sizeof(err)), -EINVAL);
		ck_assert_msg(strstr(err, cases[k].want), "case %zu: %s", k, err);
		gw_cfg_free(&c);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("detector");
	TCase *tc = tcase_create("example_negative_loss");
	tcase_add_test(tc, registered_last_after_the_shipped_ones);
	tcase_add_test(tc, opens_once_per_incident_and_resolves);
	tcase_add_test(tc, near_misses_raise_nothing_of_it);
	tcase_add_test(tc, turned_off_it_is_silent);
	tcase_add_test(tc, its_thresholds_are_in_the_one_list);
	suite_add_tcase(s, tc);
	TCase *cf = tcase_create("config");
	tcase_add_checked_fixture(cf, tmp_setup, tmp_teardown);
	tcase_add_test(cf, set_from_a_config_globally_and_per_run);
	tcase_add_test(cf, a_bad_value_gets_its_range_error);
	suite_add_tcase(s, cf);
	return gw_check_run(s);
}
