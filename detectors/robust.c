/*
 * The robust statistics (see robust.h).  Medians use selection, not
 * sorting: three-way partitions that do not branch on the data, with
 * Hoare's partition kept for the few medians whose bits it decides (see
 * gw_median); the noise is the
 * MAD of first differences; the pre-filters count instead of selecting.
 * Sorted windows find a value's place by binary search and move the values
 * between with one memmove; their MAD selects the k-th smallest deviation
 * from two sorted runs by bisection.  The bounds' tests add twice the
 * pre-filter's slack, so that rounding in how a caller bounds t cannot make
 * them claim more than the pre-filter would.
 */
#include "robust.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* The middle one of three values (a selection's pivot). */
static double median3(double a, double b, double c)
{
	return a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
}

/* The k-th smallest of x[0..n) (0-based), partially reordering x; after it
 * returns, every x[i] with i > k is >= the result.  Hoare selection with a
 * median-of-three pivot: O(n) on average, the same value a full sort gives. */
static double select_kth(double *x, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		double pivot = median3(x[lo], x[mid], x[hi]);
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

/* Move the values of x[lo..hi) below p (or_equal: not above it) to its
 * front in one pass without a branch on the data (Lomuto's partition, the
 * swap done whether or not it is needed); returns where the others start. */
static inline size_t partition(double *x, size_t lo, size_t hi, double p, bool or_equal)
{
	size_t s = lo;
	for (size_t i = lo; i < hi; i++) {
		double v = x[i];
		x[i] = x[s];
		x[s] = v;
		s += or_equal ? v <= p : v < p;
	}
	return s;
}

/* gw_order_stat: the same value select_kth selects (a zero's sign aside,
 * which no bound's comparison sees), by three-way partitions that do not
 * branch on the data.  A bound is renewed over a window of up to 512
 * values whose order the branch predictor cannot learn: Hoare's inner
 * loops mispredicted about once an element, and selection was a tenth of
 * replay's time (perf).  Values below the pivot go to the front; when k is
 * past them, the values equal to it next, so that windows of many ties
 * (a constant learning rate, a repeated throughput) end in a pass, not in
 * a quadratic number of them.  The last few are sorted by insertion. */
double gw_order_stat(double *x, size_t n, size_t k)
{
	size_t lo = 0, hi = n;
	while (hi - lo > 8) {
		double p = median3(x[lo], x[lo + (hi - lo) / 2], x[hi - 1]);
		size_t lt = partition(x, lo, hi, p, false);
		if (k < lt) {
			hi = lt;   /* p is at or after lt: the range shrinks */
			continue;
		}
		size_t le = partition(x, lt, hi, p, true);
		if (k < le)
			return x[k];   /* x[lt..le) all equal p */
		lo = le;           /* p is before le: the range shrinks */
	}
	for (size_t i = lo + 1; i < hi; i++) {
		double v = x[i];
		size_t j = i;
		for (; j > lo && x[j - 1] > v; j--)
			x[j] = x[j - 1];
		x[j] = v;
	}
	return x[k];
}

/* The median of x[0..n), n > 0, its upper middle value selected by
 * `select`. */
static double median_by(double *x, size_t n, double (*select)(double *, size_t, size_t))
{
	size_t h = n / 2;
	double upper = select(x, n, h);
	if (n % 2)
		return upper;
	/* the lower middle value is the largest of x[0..h) */
	double lower = x[0];
	for (size_t i = 1; i < h; i++)
		if (x[i] > lower)
			lower = x[i];
	return 0.5 * (lower + upper);
}

/* The value is gw_order_stat's (the selection without branches on the
 * data), and its bits are those Hoare's selection gives, which alerts have
 * always printed: the two differ only in a zero's sign, which depends on
 * the order the values meet in, and in what a NaN does to the order.  So a
 * window with a NaN, and a median that comes out zero, are selected again
 * the old way from a copy of the input. */
double gw_median(double *x, size_t n)
{
	if (!n)
		return NAN;
	if (n > GW_WIN_MAX)
		return median_by(x, n, select_kth);
	double orig[GW_WIN_MAX];
	bool nan = false;
	for (size_t i = 0; i < n; i++) {
		orig[i] = x[i];
		nan |= x[i] != x[i];
	}
	if (nan)
		return median_by(x, n, select_kth);
	double m = median_by(x, n, gw_order_stat);
	if (m != 0)
		return m;
	memcpy(x, orig, n * sizeof(*x));
	return median_by(x, n, select_kth);
}

/* The slack that makes the pre-filters safe against rounding: the exact
 * rules compare differences and logs, the filters compare values.
 * robust.h's gw_mid_surely_above / _below add twice this. */
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
	if (x->col) {
		double v[GW_WIN_MAX];
		gw_win_copy(x, v);
		return enough(count_le(v, n, tt), n);
	}
	return enough(count_le(x->a, x->na, tt) + count_le(x->b, x->nb, tt), n);
}

bool gw_median_maybe_ge(const struct gw_win *x, double t)
{
	size_t n = gw_win_len(x);
	if (!n)
		return true;
	double tt = t - slack(t);
	if (x->col) {
		double v[GW_WIN_MAX];
		gw_win_copy(x, v);
		return enough(count_ge(v, n, tt), n);
	}
	return enough(count_ge(x->a, x->na, tt) + count_ge(x->b, x->nb, tt), n);
}

double gw_win_median(const struct gw_win *w)
{
	double tmp[GW_WIN_MAX];
	size_t n = gw_win_len(w);
	if (n > GW_WIN_MAX)
		return NAN;   /* longer than any window of the history */
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
	double tmp[GW_WIN_MAX];
	memcpy(tmp, d, m * sizeof(*d));
	double md = gw_median(tmp, m);
	for (size_t i = 0; i < m; i++)
		d[i] = fabs(d[i] - md);
	return 1.4826 * gw_median(d, m) / sqrt(2.0);
}

/* ---- sorted windows ---------------------------------------------------------- */

/* The first index whose value is not below x. */
static size_t lower_bound(const double *v, size_t n, double x)
{
	/* halve the range by a conditional move, not a branch: where a new
	 * value falls in a window is as good as random, so a branch was
	 * mispredicted every other step.  The same index as the textbook
	 * loop: v[i] < x is true, then false, along a sorted v. */
	if (!n)
		return 0;
	const double *b = v;
	while (n > 1) {
		size_t half = n / 2;
		b = b[half] < x ? b + half : b;
		n -= half;
	}
	return (size_t)(b - v) + (*b < x);
}

void gw_sorted_add(double *v, size_t *n, double x)
{
	size_t i = lower_bound(v, *n, x);
	memmove(v + i + 1, v + i, (*n - i) * sizeof(*v));
	v[i] = x;
	(*n)++;
}

/* Where x is: among the values equal to it, the first with its bits
 * (+0 / -0); n when it is not there. */
static size_t sorted_find(const double *v, size_t n, double x)
{
	size_t i = lower_bound(v, n, x);
	uint64_t want, bits;
	memcpy(&want, &x, sizeof(x));
	for (; i < n && !(x < v[i]); i++) {
		memcpy(&bits, &v[i], sizeof(bits));
		if (bits == want)
			return i;
	}
	return n;
}

void gw_sorted_del(double *v, size_t *n, double x)
{
	size_t i = sorted_find(v, *n, x);
	if (i == *n)
		return;   /* not there: a caller's bug, but nothing to corrupt */
	memmove(v + i, v + i + 1, (*n - i - 1) * sizeof(*v));
	(*n)--;
}

void gw_sorted_replace(double *v, size_t n, double gone, double x)
{
	size_t i = sorted_find(v, n, gone);
	if (i == n) {
		gw_sorted_add(v, &n, x);
		return;
	}
	/* j: where gw_sorted_add puts x with gone still in; without it, the
	 * same place when that is at or before gone's, one less after it */
	size_t j = lower_bound(v, n, x);
	if (j <= i) {
		memmove(v + j + 1, v + j, (i - j) * sizeof(*v));
		v[j] = x;
	} else {
		memmove(v + i, v + i + 1, (j - 1 - i) * sizeof(*v));
		v[j - 1] = x;
	}
}

double gw_sorted_median(const double *v, size_t n)
{
	if (!n)
		return NAN;
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The k-th smallest (0-based) of the deviations fabs(v[i] - c): those of
 * v[r..n) rise with i, those of v[0..r) rise as i falls (r: the first
 * value not below c).  Bisection on how many are taken from the right run
 * (the classic k-th of two sorted arrays). */
static double kth_deviation(const double *v, size_t n, size_t r, double c, size_t k)
{
	size_t nl = r, nr = n - r;
#define L(i) fabs(v[r - 1 - (i)] - c)
#define R(i) fabs(v[r + (i)] - c)
	/* take j from the right run and k + 1 - j from the left: find the j
	 * where the two runs' taken parts interleave */
	size_t lo = k + 1 > nl ? k + 1 - nl : 0, hi = k + 1 < nr ? k + 1 : nr;
	while (lo < hi) {
		size_t j = lo + (hi - lo) / 2;    /* j < hi <= k + 1, so i >= 1 */
		size_t i = k + 1 - j;
		/* too few from the right if its next one is below the left's last taken */
		if (j < nr && i > 0 && R(j) < L(i - 1))
			lo = j + 1;
		else
			hi = j;
	}
	size_t j = lo, i = k + 1 - j;
	double a = i > 0 ? L(i - 1) : -INFINITY, b = j > 0 ? R(j - 1) : -INFINITY;
#undef L
#undef R
	return a > b ? a : b;
}

double gw_sorted_mad(const double *v, size_t n, double c)
{
	if (!n)
		return NAN;
	size_t r = lower_bound(v, n, c), h = n / 2;
	double upper = kth_deviation(v, n, r, c, h);
	if (n % 2)
		return upper;
	return 0.5 * (kth_deviation(v, n, r, c, h - 1) + upper);
}

double gw_sorted_noise(const double *d, size_t m)
{
	if (m < 2)
		return NAN;
	return 1.4826 * gw_sorted_mad(d, m, gw_sorted_median(d, m)) / sqrt(2.0);
}
