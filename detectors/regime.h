/*
 * regime: the statistics the resume detectors share.
 *
 * Robust primitives (median, per-step noise), the pre-checkpoint regime a
 * restart is judged against, and the post-resume windows.  The engine calls
 * gw_regime_open() when a segment with a restart point starts and
 * gw_regime_update() for each of its metric lines; optimizer_reset and
 * resume_regression read the result (struct gw_restart).  Pure and bounded.
 */
#ifndef GW_REGIME_H
#define GW_REGIME_H

#include <stddef.h>

#include "detector.h"

/* Median of x[0..n) (sorts x in place); NaN when n == 0.  Even n: the mean
 * of the two middle values. */
double gw_median(double *x, size_t n);

/* Could the median of x[0..n) be <= t?  False only when it is surely
 * above t (by more than rounding): a count, no sort, so rules can skip the
 * exact statistics on the (almost all) lines where they cannot fire.
 * gw_median_maybe_ge is the mirror image. */
bool gw_median_maybe_le(const struct gw_win *x, double t);
bool gw_median_maybe_ge(const struct gw_win *x, double t);

/* Median of a window (copied, so the history is not reordered). */
double gw_win_median(const struct gw_win *w);

/* Robust per-step noise of a series in time order (x is not changed):
 * 1.4826 x median(|d - median(d)|) / sqrt(2) over the first differences d.
 * Differencing removes slow trends, the MAD ignores isolated spikes.  NaN
 * when n < 3.  Needs n - 1 doubles of scratch. */
double gw_noise(const double *x, size_t n, double *scratch);

/* Regime of a window: median and noise of the linear loss (noise floored at
 * sigma_floor_rel x |median|) and of the log grad norm (floored at
 * sigma_floor_log).  loss and gn are n valid values, oldest first. */
struct gw_regime_stat {
	double mL, sL, mG, sG;
};
void gw_regime_stat(const double *loss, const double *gn, size_t n,
                    const struct gw_thresholds *th, struct gw_regime_stat *out);

/* A segment restarted from S: snapshot the regime from the history (which
 * already holds the timeline up to S). */
void gw_regime_open(struct gw_restart *rs, int64_t S, int64_t T, const struct gw_hist *h,
                    const struct gw_thresholds *th);

/* The k-th metric line after the restart: record the first one, add a
 * sample (k >= 2, valid record, k <= rr_long_max) and recompute the two
 * windows. */
void gw_regime_update(struct gw_restart *rs, const struct gw_hist_rec *r,
                      const struct gw_thresholds *th);

#endif

/* The spike statistics of the current valid line: the sp_base_window valid
 * records before the short window, the sp_cur_window newest ones (this line
 * included).  Computed once per line, shared by loss_spike and
 * grad_explosion through ctx->shared. */
const struct gw_spike_stat *gw_spike_stat(const struct gw_det_ctx *ctx);

/* Could either spike rule's ratio condition hold on this line?  False when
 * neither the loss nor the grad-norm short median can be sp_loss_rel /
 * sp_gn_rel above its baseline: then a detector with no open episode has
 * nothing to do and the full statistics are not computed. */
bool gw_spike_possible(const struct gw_det_ctx *ctx);


/* The evidence of a regime rule: the restart, the pre-checkpoint window
 * (medians, noise, moments) and the judged post-resume window (new
 * reference). */
json_t *gw_regime_evidence(const struct gw_restart *rs, const struct gw_post_stat *w,
                           const char *rule);

/* Does the resume_regression level rule hold for window w (0 short, 1
 * long) on this line?  optimizer_reset asks it so that a gross level jump
 * found on the same line is not also reported as a reset. */
bool gw_regime_level_rule(const struct gw_restart *rs, int w, const struct gw_thresholds *th);
