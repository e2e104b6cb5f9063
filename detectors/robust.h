/*
 * robust: the statistics every rule is built from -- a median, a per-step
 * noise that trends and isolated spikes do not inflate, and count-only
 * pre-filters that rule a line out before any median is computed.
 *
 * Inputs are windows of the history (hist.h) or small arrays of at most
 * GW_RING_CAP values; nothing allocates (scratch lives on the stack), no
 * I/O, safe from any thread.
 */
#ifndef GW_ROBUST_H
#define GW_ROBUST_H

#include <stdbool.h>
#include <stddef.h>

#include "hist.h"

/* Median of x[0..n) (reorders x); NaN when n == 0.  Even n: the mean of the
 * two middle values. */
double gw_median(double *x, size_t n);

/* Median of a window, at most GW_RING_CAP values (copied, so the history is
 * not reordered). */
double gw_win_median(const struct gw_win *w);

/* Could the median of x be <= t?  False only when it is surely above t (by
 * more than rounding): a count, no selection, so rules can skip the exact
 * statistics on the (almost all) lines where they cannot fire.
 * gw_median_maybe_ge is the mirror image. */
bool gw_median_maybe_le(const struct gw_win *x, double t);
bool gw_median_maybe_ge(const struct gw_win *x, double t);

/* Robust per-step noise of a series in time order, n <= GW_RING_CAP (x is
 * not changed): 1.4826 x median(|d - median(d)|) / sqrt(2) over the first
 * differences d.  Differencing removes slow trends, the MAD ignores
 * isolated spikes.  NaN when n < 3.  Needs n - 1 doubles of scratch. */
double gw_noise(const double *x, size_t n, double *scratch);

#endif
