/*
 * robust: the statistics every rule is built from -- a median, a per-step
 * noise that trends and isolated spikes do not inflate, and count-only
 * pre-filters that rule a line out before any median is computed.
 *
 * Three ways to the same values (docs/kernels.md "Which statistic uses
 * which"):
 *  - selection over a copy of the window (gw_median, gw_noise): O(n) a
 *    call, for statistics asked for now and then;
 *  - a sorted window (gw_sorted_*): the values of a sliding window kept in
 *    order, updated in O(log n) comparisons and one memmove of at most n
 *    values, read in O(1) (median, any order statistic) or O(log n) (the
 *    median absolute deviation around any centre), for windows judged on
 *    every line;
 *  - bounds (hist.h gw_hist_valid_bound): an order statistic a few ranks
 *    below (above) the middle of a recent selection, which stays a true
 *    bound of the middle for as many changes of the window as it is ranks
 *    away from it, amortised O(1): enough to rule a line out.
 * Every one gives exactly the value (or the boolean) the plain selection
 * gives (tests/unit/test_robust.c holds them to it), so the way a rule
 * takes cannot change an alert.
 *
 * Inputs are windows (struct gw_win: the history's columns in place,
 * hist.h) or small arrays of at most GW_WIN_MAX values; nothing allocates
 * (scratch lives on the stack), no I/O, safe from any thread.
 */
#ifndef GW_ROBUST_H
#define GW_ROBUST_H

#include <stdbool.h>
#include <stddef.h>

/* The longest window any statistic here takes (the history's ring, hist.h,
 * holds this many records). */
#define GW_WIN_MAX 512u

/* A window of one column, oldest first, read in place: at most two
 * contiguous spans, a[0..na) then b[0..nb); or, when col is set, the
 * values col[ia[0..na)] then col[ib[0..nb)] (a window of the valid records
 * with others between them: hist.h).  Absent values are NaN.  Read it with
 * the functions below; code that takes spans (the kernels) copies a
 * gathered window first. */
struct gw_win {
	const double *a;
	size_t na;
	const double *b;
	size_t nb;
	const double *col;         /* set: gathered through ia, ib */
	const unsigned short *ia, *ib;
};

static inline size_t gw_win_len(const struct gw_win *w)
{
	return w->na + w->nb;
}

/* Value i (0 = oldest) of a window. */
static inline double gw_win_at(const struct gw_win *w, size_t i)
{
	if (w->col)
		return w->col[i < w->na ? w->ia[i] : w->ib[i - w->na]];
	return i < w->na ? w->a[i] : w->b[i - w->na];
}

/* Copy a window into out (gw_win_len(w) doubles). */
static inline void gw_win_copy(const struct gw_win *w, double *out)
{
	if (w->col) {
		for (size_t i = 0; i < w->na; i++)
			out[i] = w->col[w->ia[i]];
		for (size_t i = 0; i < w->nb; i++)
			out[w->na + i] = w->col[w->ib[i]];
		return;
	}
	for (size_t i = 0; i < w->na; i++)
		out[i] = w->a[i];
	for (size_t i = 0; i < w->nb; i++)
		out[w->na + i] = w->b[i];
}

/* Median of x[0..n) (reorders x); NaN when n == 0.  Even n: the mean of the
 * two middle values. */
double gw_median(double *x, size_t n);

/* Median of a window, at most GW_WIN_MAX values (copied, so the history is
 * not reordered). */
double gw_win_median(const struct gw_win *w);

/* Could the median of x be <= t?  False only when it is surely above t (by
 * more than rounding): a count, no selection, so rules can skip the exact
 * statistics on the (almost all) lines where they cannot fire.
 * gw_median_maybe_ge is the mirror image. */
bool gw_median_maybe_le(const struct gw_win *x, double t);
bool gw_median_maybe_ge(const struct gw_win *x, double t);

/* Robust per-step noise of a series in time order, n <= GW_WIN_MAX (x is
 * not changed): 1.4826 x median(|d - median(d)|) / sqrt(2) over the first
 * differences d.  Differencing removes slow trends, the MAD ignores
 * isolated spikes.  NaN when n < 3.  Needs n - 1 doubles of scratch. */
double gw_noise(const double *x, size_t n, double *scratch);

/* The k-th smallest (0-based) of x[0..n), k < n, partially reordering x so
 * that x[0..k) <= x[k] <= x[k+1..n) (nth_element); NaN-free input. */
double gw_order_stat(double *x, size_t n, size_t k);

/* ---- sorted windows
 *
 * v[0..*n) sorted ascending (callers own the array); NaN is never added.
 * Values compare with <, so -0 and +0 are one value to the order: the
 * median of a window holding both may have the other zero's sign than
 * gw_median's, which depends on the input order (no window of the history
 * holds a -0: hist.h). */

/* Add x (not NaN); the array has room for it. */
void gw_sorted_add(double *v, size_t *n, double x);

/* Remove one value with x's bits (it must be there; -0 and +0 differ). */
void gw_sorted_del(double *v, size_t *n, double x);

/* gw_sorted_del(v, &n, gone) then gw_sorted_add(v, &n, x) in one shift of
 * the values between the two places: the same array, bit for bit, with n
 * values before and after (a window slid one on).  When gone is not there
 * x is only added: v must have room for n + 1. */
void gw_sorted_replace(double *v, size_t n, double gone, double x);

/* Median of the sorted window: gw_median's value; NaN when n == 0. */
double gw_sorted_median(const double *v, size_t n);

/* Median of |v[i] - c| over the window, as gw_median computes it over an
 * array of those deviations (each one fabs(v[i] - c), in double), in
 * O(log n): the deviations right of c and left of it are two sorted
 * sequences.  NaN when n == 0.  A deviation that is NaN (an infinite c and
 * the same infinity in the window) has no order, and the result is then
 * no more defined than gw_median's over it. */
double gw_sorted_mad(const double *v, size_t n, double c);

/* gw_noise of a series whose first differences d = x[i+1] - x[i] (m of
 * them, m >= 2) are given sorted: 1.4826 x gw_sorted_mad(d, m, median) /
 * sqrt(2), the same value gw_noise computes from the series. */
double gw_sorted_noise(const double *d, size_t m);

/* ---- bounds on the middle of a window
 *
 * A lower bound of a window's middle is a value at or below its lower
 * middle value (of its values sorted; one value with an odd count), an
 * upper bound one at or above its upper middle: so at or below (above) its
 * median, and all gw_median_maybe_le / _ge look at.  hist.h gives them for
 * windows of the history. */

/* Is gw_median_maybe_le(w, t) surely false, lo being a lower bound of w's
 * middle: is lo above t by more than the pre-filter's slack?  Then any
 * median of w is above t too.  Monotone in t: if it is surely above a t
 * that is at least the real one, it is above the real one. */
static inline bool gw_mid_surely_above(double lo, double t)
{
	return lo > t + 2 * (1e-9 * __builtin_fabs(t) + 1e-12);   /* twice robust.c's slack */
}

/* The mirror image, hi an upper bound: gw_median_maybe_ge(w, t) is surely
 * false. */
static inline bool gw_mid_surely_below(double hi, double t)
{
	return hi < t - 2 * (1e-9 * __builtin_fabs(t) + 1e-12);
}

#endif
