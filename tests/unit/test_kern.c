/*
 * Property tests of kernels/: every variant this machine can run against
 * the scalar reference on pseudo-random inputs -- lengths 0 .. 1,000,003,
 * start pointers off the vector alignment, windows split in two spans,
 * values across 1e-300 .. 1e300, NaN, +-Inf and signed zeros mixed in --
 * checking the agreement bounds that kern.h states: exact for counts, min
 * and max, the stated relative bounds for the rest; the vector logarithm
 * against libm; the dispatcher.  The scalar kernels against the
 * mathematics: test_kern_ref.c.
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

/* ---- inputs ------------------------------------------------------------------ */

static const char *const data_name[] = { "well", "wide", "special", "trend" };

/* A window as the ring buffer hands it over: a[0..na) then b[0..nb), each
 * in its own allocation, starting `off` doubles past a 64-byte boundary. */
struct win {
	double *abuf, *bbuf;
	const double *a, *b;
	size_t na, nb;
};

static void win_make(struct win *w, const double *x, size_t n, size_t na, size_t off)
{
	w->na = na;
	w->nb = n - na;
	w->abuf = alloc_doubles(na + off);
	w->bbuf = alloc_doubles(w->nb + off);
	memcpy(w->abuf + off, x, na * sizeof(double));
	memcpy(w->bbuf + off, x + na, w->nb * sizeof(double));
	w->a = na ? w->abuf + off : NULL;
	w->b = w->nb ? w->bbuf + off : NULL;
}

static void win_free(struct win *w)
{
	free(w->abuf);
	free(w->bbuf);
}

/* ---- comparison ----------------------------------------------------------------- */

/* got agrees with ref: same NaN-ness, the same infinity, or within tol. */
static int agree(double ref, double got, double tol)
{
	if (isnan(ref))
		return isnan(got);
	if (isinf(ref))
		return got == ref;
	return fabs(got - ref) <= tol;
}

/* |x| summed and maximised over the values a kernel uses (log: of ln x). */
struct mag {
	double sabs, maxabs;
};

static struct mag magnitude(const double *x, size_t n, int logspace)
{
	struct mag m = { 0.0, 0.0 };
	for (size_t i = 0; i < n; i++) {
		double v = x[i];
		if (logspace)
			v = v > 0.0 ? log(v) : NAN;
		if (!isfinite(v))
			continue;
		m.sabs += fabs(v);
		if (fabs(v) > m.maxabs)
			m.maxabs = fabs(v);
	}
	return m;
}

static void check_moments(const char *what, const struct gw_kern_moments *ref,
                          const struct gw_kern_moments *got, struct mag mg,
                          int logspace)
{
	double n = (double)ref->n;
	ck_assert_msg(got->n == ref->n && got->skipped == ref->skipped,
	              "%s: n/skipped %zu/%zu, scalar %zu/%zu", what, got->n,
	              got->skipped, ref->n, ref->skipped);
	/* one ulp of ln: the vector logarithm against libm's */
	double ulp = logspace ? 2.3e-16 : 0.0;
	double mm_tol_min = ulp * fabs(ref->min), mm_tol_max = ulp * fabs(ref->max);
	ck_assert_msg(agree(ref->min, got->min, mm_tol_min),
	              "%s: min %.17g, scalar %.17g", what, got->min, ref->min);
	ck_assert_msg(agree(ref->max, got->max, mm_tol_max),
	              "%s: max %.17g, scalar %.17g", what, got->max, ref->max);
	double sum_tol = 1e-12 * mg.sabs;
	ck_assert_msg(agree(ref->sum, got->sum, sum_tol), "%s: sum %.17g, scalar %.17g",
	              what, got->sum, ref->sum);
	ck_assert_msg(agree(ref->mean, got->mean, n > 0 ? sum_tol / n : 0.0),
	              "%s: mean %.17g, scalar %.17g", what, got->mean, ref->mean);
	double e = 2.5e-13 * mg.maxabs;
	double m2_tol = 1e-12 * ref->m2 + n * e * e;
	if (logspace)
		m2_tol += 2.0 * sqrt(n * ref->m2) * ulp * mg.maxabs;
	ck_assert_msg(agree(ref->m2, got->m2, m2_tol), "%s: m2 %.17g, scalar %.17g (tol %g)",
	              what, got->m2, ref->m2, m2_tol);
	ck_assert_msg(agree(ref->var, got->var, n > 1 ? m2_tol / (n - 1) : 0.0),
	              "%s: var %.17g, scalar %.17g", what, got->var, ref->var);
}

/* ---- the property sweep ----------------------------------------------------------- */

/* The lengths, plus both sides of a 1024-value block boundary. */
static const size_t lengths[] = { 0, 1, 2, 3, 7, 8, 9, 31, 32, 33, 1000, 1023,
                                  1024, 1025, 2049, 1000003 };

/* Splits of n into a || b: none, all in b, a third, a random point. */
static size_t split_at(size_t n, int s)
{
	switch (s) {
	case 0: return n;
	case 1: return 0;
	case 2: return n / 3;
	default: return n ? (size_t)(rng_next() % (n + 1)) : 0;
	}
}

/* For the long input fewer combinations, so that the sanitizer build and
 * qemu stay within seconds. */
static int big(size_t n)
{
	return n > 100000;
}

typedef void (*sweep_fn)(const struct gw_kern_ops *v, const double *x,
                         const double *y, size_t n, size_t na, size_t off,
                         const char *what);

static void sweep(sweep_fn fn, uint64_t salt)
{
	const struct gw_kern_ops *const *avail = gw_kern_available();
	rng_seed(salt);
	for (size_t li = 0; li < sizeof(lengths) / sizeof(lengths[0]); li++) {
		size_t n = lengths[li];
		double *x = alloc_doubles(n + 1), *y = alloc_doubles(n + 1);
		for (int d = 0; d < D_COUNT; d++) {
			fill(x, n, (enum data)d);
			fill(y, n, (enum data)((d + 1) % D_COUNT));
			for (size_t off = 0; off < 4; off++) {
				for (int s = 0; s < 4; s++) {
					if (big(n) && (off != 1 || s != 3))
						continue;
					size_t na = split_at(n, s);
					for (size_t k = 0; avail[k]; k++) {
						char what[160];
						snprintf(what, sizeof(what), "%s n=%zu %s off=%zu na=%zu",
						         avail[k]->name, n, data_name[d], off, na);
						fn(avail[k], x, y, n, na, off, what);
					}
				}
			}
		}
		free(x);
		free(y);
	}
}

static void prop_moments(const struct gw_kern_ops *v, const double *x,
                         const double *y, size_t n, size_t na, size_t off,
                         const char *what)
{
	struct win w;
	struct gw_kern_moments ref, got;
	(void)y;
	win_make(&w, x, n, na, off);
	gw_kern_scalar_ops.moments(w.a, w.na, w.b, w.nb, &ref);
	v->moments(w.a, w.na, w.b, w.nb, &got);
	check_moments(what, &ref, &got, magnitude(x, n, 0), 0);
	/* a split window is the same sequence: the reference agrees with itself */
	gw_kern_scalar_ops.moments(x, n, NULL, 0, &got);
	check_moments(what, &ref, &got, magnitude(x, n, 0), 0);
	win_free(&w);
}

static void prop_log_moments(const struct gw_kern_ops *v, const double *x,
                             const double *y, size_t n, size_t na, size_t off,
                             const char *what)
{
	struct win w;
	struct gw_kern_moments ref, got;
	(void)y;
	win_make(&w, x, n, na, off);
	gw_kern_scalar_ops.log_moments(w.a, w.na, w.b, w.nb, &ref);
	v->log_moments(w.a, w.na, w.b, w.nb, &got);
	check_moments(what, &ref, &got, magnitude(x, n, 1), 1);
	win_free(&w);
}

static void prop_slope(const struct gw_kern_ops *v, const double *x,
                       const double *y, size_t n, size_t na, size_t off,
                       const char *what)
{
	struct win w;
	struct gw_kern_moments m;
	(void)y;
	win_make(&w, x, n, na, off);
	double ref = gw_kern_scalar_ops.slope(w.a, w.na, w.b, w.nb);
	double got = v->slope(w.a, w.na, w.b, w.nb);
	/* sd(y) / sd(t) with sd(t) ~ n / sqrt(12): the scale of a slope error */
	gw_kern_scalar_ops.moments(x, n, NULL, 0, &m);
	double scale = m.n > 1 ? sqrt(m.m2 / (double)m.n) / ((double)n / sqrt(12.0)) : 0.0;
	double tol = 1e-12 * (fabs(ref) + scale);
	ck_assert_msg(agree(ref, got, tol), "%s: slope %.17g, scalar %.17g", what, got, ref);
	win_free(&w);
}

static void prop_corr(const struct gw_kern_ops *v, const double *x,
                      const double *y, size_t n, size_t na, size_t off,
                      const char *what)
{
	struct win wx, wy;
	win_make(&wx, x, n, na, off);
	win_make(&wy, y, n, na, 3 - off);
	double ref = gw_kern_scalar_ops.corr(wx.a, wy.a, na, wx.b, wy.b, n - na);
	double got = v->corr(wx.a, wy.a, na, wx.b, wy.b, n - na);
	ck_assert_msg(agree(ref, got, 1e-12), "%s: corr %.17g, scalar %.17g", what, got, ref);
	ck_assert_msg(isnan(got) || fabs(got) <= 1.0, "%s: |corr| > 1", what);
	win_free(&wx);
	win_free(&wy);
}

/* Counts are exact: every variant gives what a plain loop over the whole
 * sequence gives, for thresholds in the data, between, and +-Inf, both
 * sides, all finite values or the positive ones only. */
static void prop_count(const struct gw_kern_ops *v, const double *x,
                       const double *y, size_t n, size_t na, size_t off,
                       const char *what)
{
	struct win w;
	(void)y;
	win_make(&w, x, n, na, off);
	double ts[] = {n ? x[n / 2] : 0.0, n ? x[n / 3] * 1.5 : 1.0, 0.0, -0.0, 1.0, INFINITY,
	               -INFINITY};
	for (size_t ti = 0; ti < sizeof(ts) / sizeof(ts[0]); ti++) {
		for (int side = -1; side <= 1; side += 2) {
			for (int pos = 0; pos <= 1; pos++) {
				size_t want = 0, want_n = 0, got_n = 0, ref_n = 0;
				for (size_t i = 0; i < n; i++) {
					if (!isfinite(x[i]) || (pos && !(x[i] > 0)))
						continue;
					want_n++;
					want += side < 0 ? x[i] < ts[ti] : x[i] > ts[ti];
				}
				size_t got = v->count(w.a, w.na, w.b, w.nb, ts[ti], side, pos, &got_n);
				size_t ref = gw_kern_scalar_ops.count(w.a, w.na, w.b, w.nb, ts[ti], side, pos,
				                                      &ref_n);
				ck_assert_msg(got == want && got_n == want_n && ref == want && ref_n == want_n,
				              "%s: count t=%g side %d positive %d: %zu of %zu (scalar %zu of "
				              "%zu), want %zu of %zu", what, ts[ti], side, pos, got, got_n, ref,
				              ref_n, want, want_n);
			}
		}
	}
	win_free(&w);
}

START_TEST(test_prop_moments) { sweep(prop_moments, 1); }
END_TEST

START_TEST(test_prop_log_moments) { sweep(prop_log_moments, 2); }
END_TEST

START_TEST(test_prop_slope) { sweep(prop_slope, 3); }
END_TEST

START_TEST(test_prop_corr) { sweep(prop_corr, 4); }
END_TEST

START_TEST(test_prop_count) { sweep(prop_count, 5); }
END_TEST



/* ---- the vector logarithm against libm ---------------------------------------------- */

static int64_t ulp_distance(double a, double b)
{
	int64_t ia, ib;
	memcpy(&ia, &a, 8);
	memcpy(&ib, &b, 8);
	if (ia < 0)
		ia = INT64_MIN - ia;
	if (ib < 0)
		ib = INT64_MIN - ib;
	return ia > ib ? ia - ib : ib - ia;
}

START_TEST(test_log_accuracy)
{
	const struct gw_kern_ops *const *avail = gw_kern_available();
	rng_seed(7);
	for (size_t k = 0; avail[k]; k++) {
		int64_t worst = 0;
		double worst_x = 0.0;
		for (int i = 0; i < 200000; i++) {
			double x;
			switch (i % 4) {
			case 0: /* anywhere, subnormals included */
				x = ldexp(1.0 + rng_unit(), (int)(rng_next() % 2098) - 1074);
				break;
			case 1: /* close to 1, where ln x is small */
				x = 1.0 + (rng_unit() - 0.5) * ldexp(1.0, -(int)(rng_next() % 50));
				break;
			case 2: /* around the reduction's seam sqrt(2) */
				x = ldexp(M_SQRT2 * (1.0 + (rng_unit() - 0.5) * 1e-9), (int)(rng_next() % 200) - 100);
				break;
			default: /* plausible telemetry */
				x = exp(40.0 * rng_unit() - 20.0);
				break;
			}
			if (!(x > 0.0))
				continue;
			struct gw_kern_moments m;
			avail[k]->log_moments(&x, 1, NULL, 0, &m);
			int64_t d = ulp_distance(m.sum, log(x));
			if (d > worst) {
				worst = d;
				worst_x = x;
			}
		}
		for (int e = -1074; e <= 1023; e++) {
			double x = ldexp(1.0, e);
			struct gw_kern_moments m;
			avail[k]->log_moments(&x, 1, NULL, 0, &m);
			int64_t d = ulp_distance(m.sum, log(x));
			if (d > worst) {
				worst = d;
				worst_x = x;
			}
		}
		printf("%s: log within %lld ulp of libm (worst at %a)\n", avail[k]->name,
		       (long long)worst, worst_x);
		ck_assert_msg(worst <= 1, "%s: log is %lld ulp from libm at %a", avail[k]->name,
		              (long long)worst, worst_x);
	}
}
END_TEST

/* ---- dispatch --------------------------------------------------------------------------- */

START_TEST(test_dispatch)
{
	const struct gw_kern_ops *const *avail = gw_kern_available();
	size_t k = 0;
	while (avail[k])
		k++;
	ck_assert_msg(k >= 1 && strcmp(avail[k - 1]->name, "scalar") == 0,
	              "scalar is always available, last");

	unsetenv("GRADWATCH_KERNELS");
	ck_assert_int_eq(gw_kern_init(NULL), 0);
	ck_assert_msg(strcmp(gw_kern_name(), avail[0]->name) == 0, "best first");

	ck_assert_int_eq(gw_kern_init("scalar"), 0);
	ck_assert_msg(strcmp(gw_kern_name(), "scalar") == 0, "forced scalar");
	ck_assert_int_eq(gw_kern_init("bogus"), -EINVAL);
	ck_assert_msg(strcmp(gw_kern_name(), "scalar") == 0, "kept on error");
	/* every known name: 0 if available here, else -ENOTSUP */
	static const char *const known[] = { "scalar", "sse2", "avx2", "neon" };
	for (size_t i = 0; i < 4; i++) {
		int here = 0;
		for (size_t j = 0; avail[j]; j++)
			here |= strcmp(avail[j]->name, known[i]) == 0;
		ck_assert_msg(gw_kern_init(known[i]) == (here ? 0 : -ENOTSUP), "init(%s)",
		              known[i]);
	}
#if defined(__x86_64__)
	ck_assert_int_eq(gw_kern_init("neon"), -ENOTSUP);
#elif defined(__aarch64__)
	ck_assert_int_eq(gw_kern_init("avx2"), -ENOTSUP);
#endif
	ck_assert_int_eq(gw_kern_init("scalar"), 0);
	for (size_t i = 0; avail[i]; i++) {
		ck_assert_int_eq(gw_kern_init(avail[i]->name), 0);
		ck_assert_msg(strcmp(gw_kern_name(), avail[i]->name) == 0, "forced %s",
		              avail[i]->name);
		double x[3] = { 1.0, 2.0, 6.0 };
		struct gw_kern_moments m;
		gw_kern_moments(x, 3, NULL, 0, &m); /* the wrapper goes through the choice */
		ck_assert_msg(m.mean == 3.0, "%s through the wrapper", avail[i]->name);
	}

	setenv("GRADWATCH_KERNELS", "scalar", 1);
	ck_assert_int_eq(gw_kern_init(NULL), 0);
	ck_assert_msg(strcmp(gw_kern_name(), "scalar") == 0, "from the environment");
	ck_assert_int_eq(gw_kern_init(avail[0]->name), 0); /* the argument wins */
	ck_assert_msg(strcmp(gw_kern_name(), avail[0]->name) == 0, "argument over env");
	setenv("GRADWATCH_KERNELS", "avx512", 1);
	ck_assert_int_eq(gw_kern_init(NULL), -EINVAL);
	setenv("GRADWATCH_KERNELS", "auto", 1);
	ck_assert_int_eq(gw_kern_init(NULL), 0);
	ck_assert_msg(strcmp(gw_kern_name(), avail[0]->name) == 0, "auto");
	unsetenv("GRADWATCH_KERNELS");
}
END_TEST

static Suite *kern_suite(void)
{
	Suite *s = suite_create("kernels");
	TCase *ref = tcase_create("reference");
	tcase_add_test(ref, test_log_accuracy);
	tcase_add_test(ref, test_dispatch);
	tcase_set_timeout(ref, 300);
	suite_add_tcase(s, ref);

	TCase *prop = tcase_create("variants");
	tcase_add_test(prop, test_prop_moments);
	tcase_add_test(prop, test_prop_log_moments);
	tcase_add_test(prop, test_prop_slope);
	tcase_add_test(prop, test_prop_corr);
	tcase_add_test(prop, test_prop_count);
	tcase_set_timeout(prop, 300);
	suite_add_tcase(s, prop);
	return s;
}

int main(void)
{
	const struct gw_kern_ops *const *avail = gw_kern_available();
	printf("kernel variants on this machine:");
	for (size_t k = 0; avail[k]; k++)
		printf(" %s", avail[k]->name);
	printf("\n");
	SRunner *sr = srunner_create(kern_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
