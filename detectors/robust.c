/*
 * The robust statistics (see robust.h).  Medians use selection (Hoare's
 * partition with a median-of-three pivot), not sorting; the noise is the
 * MAD of first differences; the pre-filters count instead of selecting.
 */
#include "robust.h"

#include <math.h>
#include <string.h>

/* The k-th smallest of x[0..n) (0-based), partially reordering x; after it
 * returns, every x[i] with i > k is >= the result.  Hoare selection with a
 * median-of-three pivot: O(n) on average, the same value a full sort gives. */
static double select_kth(double *x, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		double a = x[lo], b = x[mid], c = x[hi];
		double pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
		size_t i = lo, j = hi;
		while (i <= j) {
			while (x[i] < pivot)
				i++;
			while (x[j] > pivot)
				j--;
			if (i <= j) {
				double t = x[i];
				x[i] = x[j];
				x[j] = t;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			break;
	}
	return x[k];
}

double gw_median(double *x, size_t n)
{
	if (!n)
		return NAN;
	size_t h = n / 2;
	double upper = select_kth(x, n, h);
	if (n % 2)
		return upper;
	/* the lower middle value is the largest of x[0..h) */
	double lower = x[0];
	for (size_t i = 1; i < h; i++)
		if (x[i] > lower)
			lower = x[i];
	return 0.5 * (lower + upper);
}

/* The slack that makes the pre-filters safe against rounding: the exact
 * rules compare differences and logs, the filters compare values. */
static double slack(double t)
{
	return 1e-9 * fabs(t) + 1e-12;
}

static size_t count_le(const double *x, size_t n, double t)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += x[i] <= t;
	return c;
}

static size_t count_ge(const double *x, size_t n, double t)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += x[i] >= t;
	return c;
}

/* sorted s: odd n, median s[n/2] <= t iff more than n/2 values are <= t;
 * even n, the mean of s[n/2-1] and s[n/2] can only be <= t if s[n/2-1] is,
 * i.e. at least n/2 values are */
static bool enough(size_t c, size_t n)
{
	return n % 2 ? c > n / 2 : c >= n / 2;
}

bool gw_median_maybe_le(const struct gw_win *x, double t)
{
	size_t n = gw_win_len(x);
	if (!n)
		return true;
	double tt = t + slack(t);
	return enough(count_le(x->a, x->na, tt) + count_le(x->b, x->nb, tt), n);
}

bool gw_median_maybe_ge(const struct gw_win *x, double t)
{
	size_t n = gw_win_len(x);
	if (!n)
		return true;
	double tt = t - slack(t);
	return enough(count_ge(x->a, x->na, tt) + count_ge(x->b, x->nb, tt), n);
}

double gw_win_median(const struct gw_win *w)
{
	double tmp[GW_RING_CAP];
	size_t n = gw_win_len(w);
	if (n > GW_RING_CAP)
		n = GW_RING_CAP;
	gw_win_copy(w, tmp);
	return gw_median(tmp, n);
}

double gw_noise(const double *x, size_t n, double *d)
{
	if (n < 3)
		return NAN;
	for (size_t i = 0; i + 1 < n; i++)
		d[i] = x[i + 1] - x[i];
	size_t m = n - 1;
	/* the median of d reorders d; the deviations need every value */
	double tmp[GW_RING_CAP];
	memcpy(tmp, d, m * sizeof(*d));
	double md = gw_median(tmp, m);
	for (size_t i = 0; i < m; i++)
		d[i] = fabs(d[i] - md);
	return 1.4826 * gw_median(d, m) / sqrt(2.0);
}
