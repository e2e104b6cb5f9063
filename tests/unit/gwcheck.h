/*
 * What every Check-based unit test shares: run one suite, exit non-zero on
 * any failure.
 */
#ifndef GW_CHECK_H
#define GW_CHECK_H

#include <check.h>

static inline int gw_check_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

#endif
