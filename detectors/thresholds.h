/*
 * Every detection threshold, in one place, with the reason for its value.
 *
 * GW_THRESHOLDS is an X-macro list: X(name, default, reason).  It expands to
 * the fields of struct gw_thresholds (all doubles), to the table that
 * `gradwatch thresholds` prints, and to the names the configuration accepts
 * ("thresholds": {"name": value} globally or per run glob, see
 * docs/configuration.md).  docs/detectors.md explains how each detector uses
 * them and gives the measured margins.
 *
 * Units: "sigma" is the run's own robust per-step noise of that series
 * (1.4826 x MAD of first differences / sqrt 2), measured on the window it
 * is compared with; ratios are plain factors (1.10 = +10 %); the code takes
 * their logs.  Values were tuned on ../shared/corpus/dev and checked on
 * ../shared/realworld and on injected restarts over 20 clean real traces,
 * never on file or run names.
 */
#ifndef GW_THRESHOLDS_H
#define GW_THRESHOLDS_H

#include <stddef.h>

#define GW_THRESHOLDS(X) \
	/* ---- segmentation (engine) */ \
	X(gap_min_seconds, 30.0, \
	  "a ts gap opens a new segment only if it is longer than this: restarts take " \
	  "minutes (60-900 s in the corpus), steps take ms to s") \
	X(gap_factor, 20.0, \
	  "... and longer than this many times the median of the last 16 step intervals, " \
	  "so slow-step runs and eval pauses do not split; gaps count only once 4 intervals are known") \
	/* ---- shared windows */ \
	X(pre_window, 100.0, \
	  "valid records up to the checkpoint step that make the pre-checkpoint regime") \
	X(pre_min, 20.0, \
	  "fewer valid pre-checkpoint records than this: no regime comparison (noise unknowable)") \
	X(sigma_floor_log, 0.01, \
	  "noise floor of log series: rounded or constant logs must not give sigma 0") \
	X(sigma_floor_rel, 0.005, \
	  "noise floor of the linear loss, relative to its median (0.5 %)") \
	/* ---- nonfinite */ \
	X(nonfinite_quiet_steps, 100.0, \
	  "a NaN/Inf incident ends after this many finite lines; a later NaN is a new incident") \
	/* ---- lr_schedule */ \
	X(lr_jump, 1.5, \
	  "LR after a resume off by more than this factor from the checkpoint's, the pre-crash " \
	  "copy of the same step, or the schedule's continuation: schedules never jump x1.5 in a step") \
	X(lr_rise_eps, 0.001, \
	  "relative rise per step that counts as rising again after a drop (a restarted warmup)") \
	X(lr_drop_look, 3.0, \
	  "steps after an unexplained LR drop at the resume in which a rise means a restarted warmup") \
	/* ---- optimizer_reset: replayed-step divergence */ \
	X(match_tol, 0.01, \
	  "first replayed step within 1 % of its pre-crash copy (loss and grad norm are computed " \
	  "before the update, so a match means same weights, same batch); replay jitter is <= 0.3 %") \
	X(lr_same_tol, 0.01, \
	  "replayed LR within 1 % of the pre-crash copy: same schedule") \
	X(div_steps, 5.0, \
	  "replayed steps after the first that are compared (S+2..S+6): alert within 6 lines") \
	X(div_min_steps, 3.0, \
	  "fewer compared steps (short overlap): no verdict") \
	X(div_rms, 0.02, \
	  "RMS log ratio of loss or grad norm over those steps that means the update differed: " \
	  "10x the replay jitter of correct restores; 14x above the worst negative") \
	X(div_rel_first, 5.0, \
	  "... and at least this many times the first step's own mismatch (the replay's jitter)") \
	/* ---- optimizer_reset: signature against the pre-checkpoint regime */ \
	X(post_window, 8.0, \
	  "short window of post-resume steps (from S+2: S+1 may carry the momentum-tax spike)") \
	X(post_window_min, 5.0, \
	  "samples in the short window before it is judged") \
	X(post_window_long, 32.0, \
	  "long window, judged when full; sigma thresholds scale by sqrt(short/long) = 0.5") \
	X(post_max, 300.0, \
	  "post-resume steps watched by the signature and level rules (ramps take 1-30 steps)") \
	X(or_z_loss, 3.0, \
	  "loss median above the regime, in loss sigmas: the loss rise separates a reset from a " \
	  "larger batch or an LR decay (negatives stay below 0.6 sigma)") \
	X(or_rel_loss, 1.10, \
	  "... and at least +10 %") \
	X(or_z_gn, 2.0, \
	  "grad-norm median below the regime, in log sigmas; alone a trap (larger batches drop 2-5 sigma)") \
	X(or_rel_gn, 0.85, \
	  "... and at least -15 %") \
	X(or_lr_drift, 1.25, \
	  "LR unchanged: within this factor of the LR at the checkpoint (cosine drift yes, step decay no)") \
	X(or_spike_z, 3.0, \
	  "grad norm at the first resumed step this many sigmas above the regime: the momentum " \
	  "tax, reported as evidence") \
	X(or_crit_z_loss, 6.0, \
	  "critical instead of warning when the loss rise is this large (sigmas) ...") \
	X(or_crit_z_gn, 4.0, \
	  "... and the grad-norm drop this large") \
	/* ---- optimizer_reset: mid-run (no visible restart) */ \
	X(mr_post, 32.0, "mid-run: judged window, the last valid records") \
	X(mr_gap, 8.0, "mid-run: records left out between the windows (the ramp of the change)") \
	X(mr_pre, 100.0, "mid-run: reference window before that") \
	X(mr_z_loss, 3.0, \
	  "mid-run: loss >= 3 sigma up (twice the resume path's long window: it runs on every line)") \
	X(mr_rel_loss, 1.15, "mid-run: ... and >= +15 %") \
	X(mr_z_gn, 2.0, "mid-run: grad norm >= 2 sigma down ...") \
	X(mr_rel_gn, 0.80, "mid-run: ... and >= -20 %") \
	X(mr_arm, 200.0, \
	  "mid-run: valid records before it is armed (early-training transients)") \
	/* ---- resume_regression */ \
	X(rr_z_loss_short, 6.0, \
	  "short window: loss >= 6 sigma above the regime ... (gross jumps: poisoned or swapped weights)") \
	X(rr_rel_loss_short, 1.5, "... and >= +50 %") \
	X(rr_z_loss, 5.0, \
	  "long window: loss >= 5 x 0.5 = 2.5 sigma above the regime ... (sustained, noisy runs)") \
	X(rr_rel_loss, 1.20, "... and >= +20 %") \
	X(rr_long_max, 1000.0, \
	  "post-resume steps watched by the climb rule (the false recovery takes hundreds)") \
	X(rr_climb_z, 3.0, \
	  "false recovery: loss and grad norm both >= 3 sigma above the regime (long window) ...") \
	X(rr_climb_rel_loss, 1.10, "... loss >= +10 % ...") \
	X(rr_climb_rel_gn, 1.25, "... and grad norm >= +25 %") \
	/* ---- loss_spike / grad_explosion */ \
	X(sp_base_window, 64.0, "baseline of the spike detectors: valid records before the short window") \
	X(sp_cur_window, 5.0, "short window; its median is the level (2 outliers cannot move it)") \
	X(sp_z_loss, 8.0, \
	  "loss_spike: short median of log loss >= 8 sigma above the baseline (bursty batch-size-4 " \
	  "runs reach 5.7 sigma) ...") \
	X(sp_loss_rel, 1.7, "... and >= x1.7 (those runs reach x1.46)") \
	X(sp_loss_gn_z, 2.0, \
	  "loss_spike: grad norm not collapsing (z >= -2); loss up with grad norm down is the reset signature") \
	X(sp_z_gn, 6.0, \
	  "grad_explosion: short median of log grad norm >= 6 sigma above the baseline ...") \
	X(sp_gn_rel, 2.0, "... and >= x2 (clean llm.c runs reach x1.6 at 6.8 sigma)") \
	X(sp_gn_loss_z, 2.0, \
	  "grad_explosion: loss rising too (z >= 2): isolated grad-norm spikes with a flat loss and " \
	  "early-training growth with a falling loss are benign") \
	X(sp_quiet, 50.0, "a spike episode ends after this many lines below sp_end_z") \
	X(sp_end_z, 3.0, "z below which a line counts as quiet") \
	X(sp_crit_rel, 3.0, "spike alerts are critical at x3 or more") \
	/* ---- stall (wall clock, live only) and throughput collapse */ \
	X(stall_min_seconds, 120.0, \
	  "a run is stalled when it has not logged for this long ...") \
	X(stall_factor, 30.0, \
	  "... and for this many times its median step interval (slow steps, eval pauses)") \
	X(stall_min_records, 20.0, \
	  "records a run must have logged steadily before its silence means anything") \
	X(thr_collapse, 0.3, \
	  "throughput collapse: median of the last 16 values below this fraction of the median of the " \
	  "128 before (a hung data loader, a failing node), outside the first 20 steps after a restart")

struct gw_thresholds {
#define GW_TH_FIELD(name, def, reason) double name;
	GW_THRESHOLDS(GW_TH_FIELD)
#undef GW_TH_FIELD
};

struct gw_threshold_info {
	const char *name;
	double def;
	const char *reason;
	size_t offset;
};

/* The table, NULL-name terminated. */
extern const struct gw_threshold_info gw_threshold_table[];

void gw_thresholds_default(struct gw_thresholds *t);

/* Set one threshold by name; -ENOENT if there is no such threshold,
 * -EINVAL if the value is not finite. */
int gw_thresholds_set(struct gw_thresholds *t, const char *name, double v);

#endif
