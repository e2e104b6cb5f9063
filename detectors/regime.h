/*
 * regime: what the resume detectors know about the restart a segment
 * started with (struct gw_restart, reached as ctx->restart).
 *
 * When a segment restarts from checkpoint step S, the engine snapshots the
 * *regime* before S -- the median and robust noise of the loss and of the
 * log grad norm over the last pre_window valid records up to S -- with
 * gw_regime_open().  Then, for each metric line after the restart,
 * gw_regime_update() turns a valid line into a *sample* (how far it is from
 * the regime, in noises and as a log ratio) and judges two windows of
 * samples, the short one and the long one, by their medians, read from the
 * windows' fields kept sorted as samples come and go (the same values a
 * selection gives).
 * optimizer_reset and resume_regression read the windows; the other
 * detectors read where the restart stands (S, k).  Pure and bounded.
 */
#ifndef GW_REGIME_H
#define GW_REGIME_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hist.h"
#include "thresholds.h"

/* Samples kept for the windows (>= post_window_long). */
#define GW_POST_CAP 32u

/* The regime before the checkpoint: the last pre_window valid records up to
 * S.  Loss is judged linear (nats), grad norm in log space. */
struct gw_regime {
	bool ok;                  /* >= pre_min (and >= 3) records: comparisons are on */
	size_t n;                 /* valid records in the window */
	int64_t from_step, to_step;
	double loss_median;
	double loss_noise;        /* robust per-step noise, >= sigma_floor_rel x |loss_median| */
	double log_gn_median;     /* median of log grad norm */
	double log_gn_noise;      /* its robust per-step noise, >= sigma_floor_log */
	/* moments of the same window (kernels), for evidence only */
	double loss_mean, loss_sd, loss_slope, log_gn_mean, log_gn_sd, corr_loss_log_gn;
};

/* One valid line after the restart, against the regime. */
struct gw_post_sample {
	int64_t k;                /* metric lines since the restart (1 = the first) */
	double loss_sigmas;       /* (loss - loss_median) / loss_noise */
	double loss_log_ratio;    /* log(loss / loss_median) */
	double gn_sigmas;         /* (log grad norm - log_gn_median) / log_gn_noise */
	double gn_log_ratio;      /* log grad norm - log_gn_median */
	bool lr_steady;           /* LR within or_lr_drift of the LR at S (or unknown) */
};

/* A window of samples, judged by the medians of its fields. */
enum { GW_WIN_SHORT, GW_WIN_LONG };
struct gw_post_window {
	bool ready;               /* enough samples, and judged on this line */
	size_t n;
	int64_t k_first, k_last;  /* k of its first and last sample */
	double loss_sigmas;       /* medians of the samples' fields */
	double loss_log_ratio;
	double gn_sigmas;
	double gn_log_ratio;
	bool lr_steady;           /* every sample's */
	double sigma_scale;       /* sqrt(post_window / window size): scales sigma thresholds */
};

struct gw_restart {
	bool active;              /* the segment restarted from a checkpoint step */
	int64_t ckpt_step;        /* S, the checkpoint step it restarted from */
	int64_t crash_step;       /* T, the last step logged before the restart (S if none after S) */
	uint64_t k;               /* metric lines since the restart, this one included */
	struct gw_regime pre;     /* the regime before S */
	double lr_at_ckpt;        /* LR of the newest record up to S that has one (NaN if none) */
	double lr_before_ckpt;    /* ... and of the one before it */
	bool has_first;           /* the first line after the restart, kept for the */
	struct gw_hist_rec first; /* momentum-tax evidence */
	struct gw_post_sample post[GW_POST_CAP]; /* samples of lines k >= 2, oldest first */
	size_t npost;
	struct gw_post_window win[2];            /* [GW_WIN_SHORT], [GW_WIN_LONG] */
	/* each window's four fields sorted (robust.h sorted windows), kept as
	 * samples come and go, for windows of (built_ws, built_cap) samples
	 * (0: not built; sorted anew from post) */
	double sorted[2][4][GW_POST_CAP];
	size_t nsorted[2];
	unsigned unsteady[2];                    /* samples with lr_steady false */
	size_t built_ws, built_cap;
};

/* A segment restarted from S (T as gw_hist_cut returned it): snapshot the
 * regime from the history, which holds the timeline up to S. */
void gw_regime_open(struct gw_restart *rs, int64_t S, int64_t T, const struct gw_hist *h,
                    const struct gw_thresholds *th);

/* The k-th metric line after the restart (rs->k already set): keep the
 * first one, add a sample (valid line, k >= 2, k <= rr_long_max) and judge
 * both windows; on any other line no window is ready. */
void gw_regime_update(struct gw_restart *rs, const struct gw_hist_rec *r,
                      const struct gw_thresholds *th);

/* Is window w's loss a level jump above the regime (within post_max
 * lines)?  Short window: rr_z_loss_short sigmas and rr_rel_loss_short;
 * long: rr_z_loss x sigma_scale and rr_rel_loss.  resume_regression's level
 * rule, and optimizer_reset's reason not to call such a line a reset. */
bool gw_regime_level_jump(const struct gw_restart *rs, int w, const struct gw_thresholds *th);

/* The evidence of a regime rule (new reference): the restart, the regime
 * and window w, under "rule". */
json_t *gw_regime_evidence(const struct gw_restart *rs, const struct gw_post_window *w,
                           const char *rule);

#endif
