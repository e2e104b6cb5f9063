/*
 * A new detector by docs/detectors.md's "Adding a detector", end to end:
 * det_example.c (its own file), the real registry with its row added
 * (with_test_detector.py), its lines in tests/unit/meson.build, and this
 * test, which feeds records through a real engine.  The detector is found
 * by name, last in the registry after every shipped one; it opens one
 * alert per incident and resolves it; a near miss (zero, a tiny loss, a
 * NaN) raises nothing of it; turned off in the options it is silent; and
 * the shipped detectors run beside it as before.
 */
#include "gwcheck.h"
#include <math.h>
#include <string.h>

#include "enginefix.h"
#include "engine.h"
#include "registry.h"

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

int main(void)
{
	Suite *s = suite_create("detector");
	TCase *tc = tcase_create("example_negative_loss");
	tcase_add_test(tc, registered_last_after_the_shipped_ones);
	tcase_add_test(tc, opens_once_per_incident_and_resolves);
	tcase_add_test(tc, near_misses_raise_nothing_of_it);
	tcase_add_test(tc, turned_off_it_is_silent);
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
