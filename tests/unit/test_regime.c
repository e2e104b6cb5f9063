/*
 * Unit tests of the statistics the detectors share (detectors/regime.c):
 * the selection-based median equals the sorted median, the pre-filters
 * never rule out a median that satisfies the bound, and the robust noise
 * ignores spikes and trends.
 */
#include "gwcheck.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "robust.h"

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double sorted_median(const double *x, size_t n)
{
	double t[600];
	memcpy(t, x, n * sizeof(double));
	qsort(t, n, sizeof(double), cmp);
	return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

START_TEST(median_equals_sort)
{
	srand(7);
	for (int trial = 0; trial < 3000; trial++) {
		size_t n = 1 + (size_t)(rand() % 300);
		double x[600], y[600];
		int mode = trial % 4;
		for (size_t i = 0; i < n; i++) {
			if (mode == 0)
				x[i] = rand() / (double)RAND_MAX;
			else if (mode == 1)
				x[i] = (double)(rand() % 5);          /* many ties */
			else if (mode == 2)
				x[i] = (double)i;                     /* sorted */
			else
				x[i] = (double)(n - i) * 1e-3;        /* reversed */
		}
		memcpy(y, x, n * sizeof(double));
		ck_assert_double_eq(gw_median(y, n), sorted_median(x, n));
	}
	ck_assert(isnan(gw_median(NULL, 0)));
}
END_TEST

START_TEST(prefilter_is_safe)
{
	srand(11);
	for (int trial = 0; trial < 3000; trial++) {
		size_t n = 1 + (size_t)(rand() % 120);
		double x[200];
		for (size_t i = 0; i < n; i++)
			x[i] = (double)(rand() % 40) / 7.0;
		double m = sorted_median(x, n);
		double t = (double)(rand() % 40) / 7.0 + ((rand() % 3) - 1) * 1e-13;
		struct gw_win w = {.a = x, .na = n / 2, .b = x + n / 2, .nb = n - n / 2};
		if (m <= t)
			ck_assert(gw_median_maybe_le(&w, t));
		if (m >= t)
			ck_assert(gw_median_maybe_ge(&w, t));
		/* and it rules out a median whose lower middle value is above t */
		double srt[200];
		memcpy(srt, x, n * sizeof(double));
		qsort(srt, n, sizeof(double), cmp);
		if (srt[(n - 1) / 2] > t + 1e-6)
			ck_assert(!gw_median_maybe_le(&w, t));
		ck_assert_double_eq(gw_win_median(&w), m);
	}
}
END_TEST

START_TEST(noise_is_robust)
{
	double x[200], d[200];
	srand(3);
	/* a trend plus unit-variance-ish noise: the trend does not count */
	for (int i = 0; i < 200; i++)
		x[i] = 0.5 * i + ((rand() % 2001) - 1000) / 1000.0;
	double n1 = gw_noise(x, 200, d);
	for (int i = 0; i < 200; i++)
		x[i] = ((rand() % 2001) - 1000) / 1000.0;
	double n2 = gw_noise(x, 200, d);
	ck_assert_double_lt(fabs(n1 - n2) / n2, 0.3);
	/* a few huge spikes barely move it */
	x[50] = 1e6;
	x[120] = -1e6;
	double n3 = gw_noise(x, 200, d);
	ck_assert_double_lt(fabs(n3 - n2) / n2, 0.2);
	ck_assert(isnan(gw_noise(x, 2, d)));
	double flat[5] = {1, 1, 1, 1, 1};
	ck_assert_double_eq(gw_noise(flat, 5, d), 0.0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("regime");
	TCase *tc = tcase_create("stats");
	tcase_add_test(tc, median_equals_sort);
	tcase_add_test(tc, prefilter_is_safe);
	tcase_add_test(tc, noise_is_robust);
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
