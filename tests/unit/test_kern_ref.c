/*
 * Reference tests of kernels/: the scalar kernels held to the mathematics
 * (long-double two-pass sums, closed forms, libm), their edges, and the
 * portable results every variant must reproduce.  The variants against
 * this reference: test_kern.c.
 *
 * Built against Check; with -DGW_MINICHECK against tests/unit/minicheck.h,
 * for the AArch64 cross build where Check is not installed.  The seed is
 * fixed (GW_TEST_SEED overrides it) so a failure can be replayed.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef GW_MINICHECK
#include "minicheck.h"
#else
#include <check.h>
#endif

#include "kern.h"
#include "kerntest.h"

/* ---- the scalar reference against the mathematics ----------------------------------- */

START_TEST(test_ref_moments)
{
	/* a plateau: the naive E[x^2] - E[x]^2 would cancel to garbage here */
	size_t n = 10007;
	double *x = alloc_doubles(n);
	rng_seed(11);
	fill(x, n, D_WELL);
	x[5] = NAN;
	x[700] = -INFINITY;
	long double s = 0, q = 0;
	for (size_t i = 0; i < n; i++)
		if (isfinite(x[i]))
			s += x[i];
	long double mean = s / (n - 2);
	for (size_t i = 0; i < n; i++)
		if (isfinite(x[i]))
			q += (x[i] - mean) * (x[i] - mean);
	const struct gw_kern_ops *const *avail = gw_kern_available();
	for (size_t k = 0; avail[k]; k++) {
		struct gw_kern_moments m;
		avail[k]->moments(x, 600, x + 600, n - 600, &m);
		ck_assert_int_eq(m.n, n - 2);
		ck_assert_int_eq(m.skipped, 2);
		ck_assert_msg(fabsl(m.mean - mean) <= 1e-15L * mean, "%s: mean", avail[k]->name);
		ck_assert_msg(fabsl(m.m2 - q) <= 1e-12L * q, "%s: m2 %.17g, exact %.17Lg",
		              avail[k]->name, m.m2, q);
		ck_assert_msg(fabsl(m.var - q / (n - 3)) <= 1e-12L * q / (n - 3), "%s: var",
		              avail[k]->name);
	}
	free(x);
}
END_TEST

START_TEST(test_ref_edges)
{
	const struct gw_kern_ops *const *avail = gw_kern_available();
	for (size_t k = 0; avail[k]; k++) {
		const struct gw_kern_ops *v = avail[k];
		struct gw_kern_moments m;
		v->moments(NULL, 0, NULL, 0, &m);
		ck_assert_msg(m.n == 0 && m.skipped == 0 && m.sum == 0.0 && m.m2 == 0.0 &&
		              isnan(m.mean) && isnan(m.var) && isnan(m.min) && isnan(m.max),
		              "%s: empty window", v->name);
		double one = 4.0;
		v->moments(NULL, 0, &one, 1, &m);
		ck_assert_msg(m.n == 1 && m.mean == 4.0 && m.var == 0.0 && m.min == 4.0 &&
		              m.max == 4.0, "%s: one value", v->name);
		double bad[] = { NAN, INFINITY, -INFINITY, 0.0, -1.0, 1.0 };
		v->moments(bad, 6, NULL, 0, &m);
		ck_assert_msg(m.n == 3 && m.skipped == 3 && m.min == -1.0 && m.max == 1.0,
		              "%s: non-finite skipped", v->name);
		v->log_moments(bad, 6, NULL, 0, &m);
		ck_assert_msg(m.n == 1 && m.skipped == 5 && m.mean == 0.0, "%s: log skips <= 0",
		              v->name);
		double e2[] = { M_E * M_E, M_E * M_E };
		v->log_moments(e2, 1, e2 + 1, 1, &m);
		ck_assert_msg(fabs(m.mean - 2.0) < 1e-15 && m.var == 0.0, "%s: log e^2", v->name);

		/* slope: exact line with holes, either side of the split */
		double y[2000];
		for (int i = 0; i < 2000; i++)
			y[i] = 3.0 + 0.5 * i;
		y[17] = NAN;
		y[1500] = INFINITY;
		double sl = v->slope(y, 1200, y + 1200, 800);
		ck_assert_msg(fabs(sl - 0.5) < 1e-13, "%s: slope %.17g", v->name, sl);
		ck_assert_msg(isnan(v->slope(y, 1, NULL, 0)), "%s: slope of one value", v->name);
		ck_assert_msg(isnan(v->slope(bad, 3, NULL, 0)), "%s: slope of nothing", v->name);

		/* correlation: exact relations, and none */
		double xs[1000], ys[1000], zs[1000];
		for (int i = 0; i < 1000; i++) {
			xs[i] = sin(i * 0.1) + 100.0;
			ys[i] = 2.0 * xs[i] + 1.0;
			zs[i] = -xs[i];
		}
		ck_assert_msg(fabs(v->corr(xs, ys, 400, xs + 400, ys + 400, 600) - 1.0) < 1e-12,
		              "%s: corr 1", v->name);
		ck_assert_msg(fabs(v->corr(xs, zs, 1000, NULL, NULL, 0) + 1.0) < 1e-12,
		              "%s: corr -1", v->name);
		double flat[1000];
		for (int i = 0; i < 1000; i++)
			flat[i] = 7.0;
		ck_assert_msg(isnan(v->corr(xs, flat, 1000, NULL, NULL, 0)),
		              "%s: corr with a constant", v->name);
	}
}
END_TEST

/* The scalar reference gives the same bits on every machine: the kernels
 * are compiled with -ffp-contract=off and use only IEEE operations (and
 * sqrt).  These values were printed on x86-64 and checked under
 * qemu-aarch64; the inputs use power-of-two scalings only, so that fused
 * multiply-adds in this file cannot change them either.  If the reference
 * algorithm is changed on purpose, print them again (GW_PRINT_GOLDEN=1). */
START_TEST(test_ref_portable)
{
	static double x[5000], y[5000];
	uint64_t st = 7;
	for (int i = 0; i < 5000; i++) {
		st = st * 6364136223846793005ULL + 1442695040888963407ULL;
		double u = (double)(st >> 11) * 0x1p-53;
		x[i] = 10.0 + u * 0x1p-10 + i * 0x1p-12;
		y[i] = u * 4.0 - 2.0;
		if (i % 97 == 0)
			x[i] = NAN;
	}
	const struct gw_kern_ops *o = &gw_kern_scalar_ops;
	struct gw_kern_moments m;
	o->moments(x, 3000, x + 3000, 2000, &m);
	double sl = o->slope(x, 1234, x + 1234, 3766);
	double r = o->corr(x, y, 2500, x + 2500, y + 2500, 2500);
	double got[] = { m.sum, m.mean, m.m2, m.min, m.max, sl, r };
	static const double golden[] = {
		0x1.9a2c51e291232p+15,
		0x1.538b8b2f08992p+3,
		0x1.3329f1b53c8fep+9,
		0x1.40082e95b914p+3,
		0x1.67152370bcf76p+3,
		0x1.0000e2bc839ebp-12,
		0x1.20e5229e082d2p-6
	};
	if (getenv("GW_PRINT_GOLDEN"))
		for (size_t i = 0; i < sizeof(got) / sizeof(got[0]); i++)
			printf("\t\t%a,\n", got[i]);
	for (size_t i = 0; i < sizeof(got) / sizeof(got[0]); i++)
		ck_assert_msg(same_bits(got[i], golden[i]), "value %zu: %a, expected %a", i,
		              got[i], golden[i]);
}
END_TEST

static Suite *kern_ref_suite(void)
{
	Suite *s = suite_create("kernels_reference");
	TCase *ref = tcase_create("reference");
	tcase_add_test(ref, test_ref_moments);
	tcase_add_test(ref, test_ref_edges);
	tcase_add_test(ref, test_ref_portable);
	tcase_set_timeout(ref, 300);
	suite_add_tcase(s, ref);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(kern_ref_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
