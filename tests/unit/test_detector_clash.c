/*
 * A detector whose own threshold takes a name already taken (det_clash.c,
 * added to the real registry as test_detector.c's is): the list of
 * thresholds, and with it the configuration and the engine, abort with the
 * name instead of letting one key set two values.
 */
#include "gwcheck.h"
#include <signal.h>

#include "engine.h"
#include "engine_opts.h"
#include "thresholds.h"

START_TEST(the_list_refuses_a_taken_name)
{
	gw_threshold_list();
}
END_TEST

START_TEST(so_does_a_default_set)
{
	struct gw_engine_opts o = {0};
	gw_thresholds_default(&o.th);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("detector_clash");
	TCase *tc = tcase_create("clash");
	tcase_add_test_raise_signal(tc, the_list_refuses_a_taken_name, SIGABRT);
	tcase_add_test_raise_signal(tc, so_does_a_default_set, SIGABRT);
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
