/*
 * Detection thresholds: each with the reason for its value and the reason
 * for its valid range, in one of two places.
 *
 * Where they live.  A detector's own thresholds are a table in its own file
 * (GW_TH_OWN entries over a struct of doubles, named by the detector's
 * gw_detector with GW_DET_THRESHOLDS; det_loss_scale.c's ls_* and
 * det_short.c's sc_* are),
 * so that adding a detector touches its file, the registry and the build
 * file, nothing shared.  This file holds the shared ones -- segmentation
 * (the engine), the windows several detectors read (the pre-checkpoint
 * regime, the noise floors), the thresholds of the code shared by several
 * detectors (regime.c, spike.c, verdict.c's precedence scopes) -- and those
 * of detectors written before the move, as the X-macro list GW_THRESHOLDS:
 * X(name, default, kind, lo, hi, reason, range), which expands to the
 * fields of struct gw_thresholds.  gw_threshold_list() is every threshold
 * of both places, this list first, then each registered detector's table
 * in registry order; it is what `gradwatch thresholds` prints, what the
 * configuration accepts ("thresholds": {"name": value} globally or per run
 * glob, see docs/configuration.md), what --check-config writes and what
 * the range checks below walk, so a detector's own threshold is set,
 * refused, printed and overridden per run exactly as a shared one.  A
 * detector reads its own for the run at hand with gw_det_own_th(ctx)
 * (detector.h).  docs/detectors.md explains how each detector uses them
 * and gives the measured margins.
 *
 * Ranges (in both places): kind GW_TH_COUNT is an integer in [lo, hi] (a count of records,
 * lines or steps, or a window size), GW_TH_REAL a real in [lo, hi],
 * GW_TH_ABOVE a real in (lo, hi].  A window that must fit in the history
 * has the history's size as its bound (hist.h GW_RING_CAP = 512, regime.h
 * GW_POST_CAP = 32; thresholds.c checks they still agree), a value that
 * is divided by or whose logarithm is taken excludes 0, a factor that
 * means "a rise" is >= 1 and one that means "a fall" is <= 1.  Upper
 * bounds on sigmas and factors are where a rule could never fire (turn
 * the detector off in the configuration instead).  A few thresholds must
 * also agree with each other (gw_thresholds_check lists the shared ones,
 * a detector's check_thresholds its own).
 * gw_thresholds_set and gw_thresholds_check refuse anything else, the
 * configuration loader reports which key, its range and why, and the
 * engine refuses to run with a set that does not pass (GW_REQUIRE), so no
 * detector ever sees an invalid value.
 *
 * Units: "sigma" is the run's own robust per-step noise of that series
 * (1.4826 x MAD of first differences / sqrt 2), measured on the window it
 * is compared with; ratios are plain factors (1.10 = +10 %); the code takes
 * their logs.  Values were tuned on ../shared/corpus/dev and checked on
 * ../shared/realworld and on injected restarts over 20 clean real traces,
 * never on file or run names.  bench/det_margins.py measures how far each
 * dev trace is from its thresholds, bench/det_perturb.py how detection
 * holds on perturbed variants (docs/detectors.md, "Margins").
 *
 * Changes from the independent holdout (bench/holdout_gen.py, docs/detectors.md
 * "An independent holdout"):
 *  - sp_big_loss_rel / sp_big_z_loss (new, x3 at 4 sigma): loss_spike's
 *    second way in.  A divergence multiplies the loss several-fold; on a
 *    small-batch run the per-step log noise is 0.25-0.3, so sp_z_loss (8
 *    sigma) alone asked for a x7-x11 rise and missed a real LR x30 burst
 *    (loss x4.4 at 5.5 sigma, grad norm x2.6 at 4.8 sigma).  Benign bursts
 *    of noisy runs reach x1.7 (realworld) at 4 sigma or more.
 *
 * Issue 19 (real incidents, docs/detectors.md "short_context", "loss_scale"):
 * the sc_* and ls_* thresholds (det_short.c's and det_loss_scale.c's own), tuned on
 * tests/data/incidents and held to zero false alerts on every window of
 * 5-40 points of the healthy real logs (bench/det_windows.py); dev and
 * realworld scores unchanged.
 *
 * Changes to detection that are not a threshold's value, recorded here:
 *  - segmentation: a line that arrived late (its step between the last two
 *    logged, its ts not after the last one's) is no rewind and the
 *    detectors skip it (engine.c arrived_late): no restart replays a step
 *    that was never logged.  Dev and realworld unchanged (no such line);
 *    on 2 % swapped neighbours (det_perturb.py ooo) recall 17/18 -> 18/18.
 */
#ifndef GW_THRESHOLDS_H
#define GW_THRESHOLDS_H

#include <stddef.h>

enum gw_th_kind {
	GW_TH_COUNT,   /* an integer in [lo, hi] */
	GW_TH_REAL,    /* a real in [lo, hi] */
	GW_TH_ABOVE,   /* a real in (lo, hi] */
};

/* Shared range reasons. */
#define GW_THR_SIGMAS "noise sigmas: above 0 (0 fires on the noise itself); above 1000 it never fires"
#define GW_THR_RISE "a factor meaning a rise: >= 1 (below 1 a fall would pass); its log is taken"
#define GW_THR_FALL "a factor meaning a fall: in (0, 1] (0 has no log; above 1 a rise would pass)"
#define GW_THR_LINES "a count of lines: at least 1, at most 1e9"
#define GW_THR_TOL "a relative tolerance: above 0 (0 never matches real numbers), at most 1 (100 %)"

#define GW_THRESHOLDS(X) \
	/* ---- segmentation (engine) */ \
	X(gap_min_seconds, 30.0, GW_TH_REAL, 1, 604800, \
	  "a ts gap opens a new segment only if it is longer than this: restarts take " \
	  "minutes (60-900 s in the corpus), steps take ms to s", \
	  "seconds: a restart takes a second at least (below, every pause of a run whose lines " \
	  "share a timestamp splits it); a week at most") \
	X(gap_factor, 20.0, GW_TH_REAL, 1, 10000, \
	  "... and longer than this many times the median of the last 16 step intervals, " \
	  "so slow-step runs and eval pauses do not split; gaps count only once 4 intervals are known", \
	  "a multiple of the step interval: >= 1 (a gap shorter than a step is no gap)") \
	/* ---- shared windows */ \
	X(pre_window, 100.0, GW_TH_COUNT, 3, 512, \
	  "valid records up to the checkpoint step that make the pre-checkpoint regime", \
	  "records of the history (512 kept); a noise needs 3") \
	X(pre_min, 20.0, GW_TH_COUNT, 3, 512, \
	  "fewer valid pre-checkpoint records than this: no regime comparison (noise unknowable)", \
	  "records; a noise needs 3 (and at most pre_window, or no regime is ever made)") \
	X(sigma_floor_log, 0.01, GW_TH_ABOVE, 0, 10, \
	  "noise floor of log series: rounded or constant logs must not give sigma 0", \
	  "a log noise: above 0 (a constant series would divide by 0); 10 is a factor e^10") \
	X(sigma_floor_rel, 0.005, GW_TH_ABOVE, 0, 1, \
	  "noise floor of the linear loss, relative to its median (0.5 %)", \
	  "a fraction of the loss: above 0 (a constant loss would divide by 0), at most 1") \
	/* ---- nonfinite */ \
	X(nonfinite_quiet_steps, 100.0, GW_TH_COUNT, 1, 1e9, \
	  "a NaN/Inf incident ends after this many finite lines; a later NaN is a new incident", \
	  GW_THR_LINES) \
	/* ---- lr_schedule */ \
	X(lr_jump, 1.5, GW_TH_ABOVE, 1, 1000, \
	  "LR after a resume off by more than this factor from the checkpoint's, the pre-crash " \
	  "copy of the same step, or the schedule's continuation: schedules never jump x1.5 in a step", \
	  "a factor either way: above 1 (1 flags every LR change), at most 1000") \
	X(lr_rise_eps, 0.001, GW_TH_REAL, 0, 1, \
	  "relative rise per step that counts as rising again after a drop (a restarted warmup)", \
	  "a relative rise: 0 (any rise) to 1 (doubling)") \
	X(lr_drop_look, 3.0, GW_TH_COUNT, 1, 1000, \
	  "steps after an unexplained LR drop at the resume in which a rise means a restarted warmup", \
	  "steps: at least 1 to see a rise, at most 1000") \
	/* ---- optimizer_reset: replayed-step divergence */ \
	X(match_tol, 0.01, GW_TH_ABOVE, 0, 1, \
	  "first replayed step within 1 % of its pre-crash copy (loss and grad norm are computed " \
	  "before the update, so a match means same weights, same batch); replay jitter is <= 0.3 %", \
	  GW_THR_TOL) \
	X(lr_same_tol, 0.01, GW_TH_ABOVE, 0, 1, \
	  "replayed LR within 1 % of the pre-crash copy: same schedule", GW_THR_TOL) \
	X(div_steps, 5.0, GW_TH_COUNT, 1, 32, \
	  "replayed steps after the first that are compared (S+2..S+6): alert within 6 lines", \
	  "steps: at least 1, at most the 32 the detector keeps") \
	X(div_min_steps, 3.0, GW_TH_COUNT, 1, 32, \
	  "fewer compared steps (short overlap): no verdict", \
	  "steps: at least 1 (and at most div_steps, or no verdict is ever given)") \
	X(div_rms, 0.02, GW_TH_ABOVE, 0, 10, \
	  "RMS log ratio of loss or grad norm over those steps that means the update differed: " \
	  "10x the replay jitter of correct restores; 14x above the worst negative", \
	  "a log ratio: above 0 (0 flags the replay's own jitter), at most 10") \
	X(div_rel_first, 5.0, GW_TH_REAL, 0, 1000, \
	  "... and at least this many times the first step's own mismatch (the replay's jitter)", \
	  "a multiple: 0 (off) to 1000") \
	/* ---- optimizer_reset: the signature in the replayed pairs */ \
	X(pp_min_pairs, 8.0, GW_TH_COUNT, 3, 32, \
	  "replayed steps paired with their pre-crash copies before the pairs' signature is judged " \
	  "(with different batches, one pair is batch noise; eight agree or not)", \
	  "pairs: at least 3, at most the 32 kept") \
	X(pp_loss_rel, 1.02, GW_TH_REAL, 1, 1000, \
	  "pairs' signature: the resumed copy's loss >= x1.02 its pre-crash copy at the same steps " \
	  "on average (a resume that lost its data-loader state: x1.05 over 21 pairs) ...", \
	  GW_THR_RISE) \
	X(pp_gn_rel, 0.85, GW_TH_REAL, 0, 1, \
	  "... and the grad norm <= x0.85 of its copy on average (the same resume: x0.69) ...", \
	  GW_THR_FALL) \
	X(pp_t, 4.0, GW_TH_ABOVE, 0, 1000, \
	  "... each mean at least this many standard errors from 0 (a reshuffled but correct resume " \
	  "differs from its copy by batch noise of mean 0)", GW_THR_SIGMAS) \
	/* ---- optimizer_reset: signature against the pre-checkpoint regime */ \
	X(post_window, 8.0, GW_TH_COUNT, 1, 32, \
	  "short window of post-resume steps (from S+2: S+1 may carry the momentum-tax spike)", \
	  "samples: at least 1, at most the 32 kept (and at most post_window_long)") \
	X(post_window_min, 5.0, GW_TH_COUNT, 1, 32, \
	  "samples in the short window before it is judged", \
	  "samples: at least 1 (and at most post_window, or the window is never judged)") \
	X(post_window_long, 32.0, GW_TH_COUNT, 1, 32, \
	  "long window, judged when full; sigma thresholds scale by sqrt(short/long) = 0.5", \
	  "samples: at most the 32 kept, at least post_window") \
	X(post_max, 300.0, GW_TH_COUNT, 1, 1e9, \
	  "post-resume steps watched by the signature and level rules (ramps take 1-30 steps)", \
	  GW_THR_LINES) \
	X(or_z_loss, 3.0, GW_TH_ABOVE, 0, 1000, \
	  "loss median above the regime, in loss sigmas: the loss rise separates a reset from a " \
	  "larger batch or an LR decay (negatives stay below 0.6 sigma)", GW_THR_SIGMAS) \
	X(or_rel_loss, 1.10, GW_TH_REAL, 1, 1000, \
	  "... and at least +10 %", GW_THR_RISE) \
	X(or_z_gn, 2.0, GW_TH_ABOVE, 0, 1000, \
	  "grad-norm median below the regime, in log sigmas; alone a trap (larger batches drop 2-5 sigma)", \
	  GW_THR_SIGMAS) \
	X(or_rel_gn, 0.85, GW_TH_ABOVE, 0, 1, \
	  "... and at least -15 %", GW_THR_FALL) \
	X(or_lr_drift, 1.25, GW_TH_REAL, 1, 1000, \
	  "LR unchanged: within this factor of the LR at the checkpoint (cosine drift yes, step decay no)", \
	  "a factor either way: >= 1 (below, no LR is ever unchanged)") \
	X(or_spike_z, 3.0, GW_TH_ABOVE, 0, 1000, \
	  "grad norm at the first resumed step this many sigmas above the regime: the momentum " \
	  "tax, reported as evidence", GW_THR_SIGMAS) \
	X(or_crit_z_loss, 6.0, GW_TH_ABOVE, 0, 1000, \
	  "critical instead of warning when the loss rise is this large (sigmas) ...", GW_THR_SIGMAS) \
	X(or_crit_z_gn, 4.0, GW_TH_ABOVE, 0, 1000, \
	  "... and the grad-norm drop this large", GW_THR_SIGMAS) \
	/* ---- optimizer_reset: mid-run (no visible restart) */ \
	X(mr_post, 32.0, GW_TH_COUNT, 1, 512, "mid-run: judged window, the last valid records", \
	  "records: at least 1; mr_post + mr_gap + mr_pre must fit in the 512 of the history") \
	X(mr_gap, 8.0, GW_TH_COUNT, 0, 512, \
	  "mid-run: records left out between the windows (the ramp of the change)", \
	  "records: 0 or more; mr_post + mr_gap + mr_pre must fit in the 512 of the history") \
	X(mr_pre, 100.0, GW_TH_COUNT, 3, 512, "mid-run: reference window before that", \
	  "records: a noise needs 3; mr_post + mr_gap + mr_pre must fit in the 512 of the history") \
	X(mr_z_loss, 3.0, GW_TH_ABOVE, 0, 1000, \
	  "mid-run: loss >= 3 sigma up (twice the resume path's long window: it runs on every line)", \
	  GW_THR_SIGMAS) \
	X(mr_rel_loss, 1.15, GW_TH_REAL, 1, 1000, "mid-run: ... and >= +15 %", GW_THR_RISE) \
	X(mr_z_gn, 2.0, GW_TH_ABOVE, 0, 1000, "mid-run: grad norm >= 2 sigma down ...", GW_THR_SIGMAS) \
	X(mr_rel_gn, 0.80, GW_TH_ABOVE, 0, 1, "mid-run: ... and >= -20 %", GW_THR_FALL) \
	X(mr_arm, 200.0, GW_TH_COUNT, 0, 1e9, \
	  "mid-run: valid records before it is armed (early-training transients)", \
	  "records: 0 (armed at once) to 1e9") \
	/* ---- resume_regression */ \
	X(rr_z_loss_short, 6.0, GW_TH_ABOVE, 0, 1000, \
	  "short window: loss >= 6 sigma above the regime ... (gross jumps: poisoned or swapped weights)", \
	  GW_THR_SIGMAS) \
	X(rr_rel_loss_short, 1.5, GW_TH_REAL, 1, 1000, "... and >= +50 %", GW_THR_RISE) \
	X(rr_z_loss, 5.0, GW_TH_ABOVE, 0, 1000, \
	  "long window: loss >= 5 x 0.5 = 2.5 sigma above the regime ... (sustained, noisy runs)", \
	  GW_THR_SIGMAS) \
	X(rr_rel_loss, 1.20, GW_TH_REAL, 1, 1000, "... and >= +20 %", GW_THR_RISE) \
	X(rr_long_max, 1000.0, GW_TH_COUNT, 1, 1e9, \
	  "post-resume steps watched by the climb rule (the false recovery takes hundreds)", \
	  GW_THR_LINES) \
	X(rr_climb_z, 3.0, GW_TH_ABOVE, 0, 1000, \
	  "false recovery: loss and grad norm both >= 3 sigma above the regime (long window) ...", \
	  GW_THR_SIGMAS) \
	X(rr_climb_rel_loss, 1.10, GW_TH_REAL, 1, 1000, "... loss >= +10 % ...", GW_THR_RISE) \
	X(rr_climb_rel_gn, 1.25, GW_TH_REAL, 1, 1000, "... and grad norm >= +25 %", GW_THR_RISE) \
	/* ---- loss_spike / grad_explosion */ \
	X(sp_base_window, 64.0, GW_TH_COUNT, 3, 511, \
	  "baseline of the spike detectors: valid records before the short window", \
	  "records: a noise needs 3; sp_base_window + sp_cur_window must fit in the 512 of the history") \
	X(sp_cur_window, 5.0, GW_TH_COUNT, 1, 16, \
	  "short window; its median is the level (2 outliers cannot move it)", \
	  "records: 1 to the 16 the spike statistics hold") \
	X(sp_z_loss, 8.0, GW_TH_ABOVE, 0, 1000, \
	  "loss_spike: short median of log loss >= 8 sigma above the baseline (bursty batch-size-4 " \
	  "runs reach 5.7 sigma) ...", GW_THR_SIGMAS) \
	X(sp_loss_rel, 1.7, GW_TH_REAL, 1, 1000, "... and >= x1.7 (those runs reach x1.46)", GW_THR_RISE) \
	X(sp_big_loss_rel, 3.0, GW_TH_REAL, 1, 1000, \
	  "loss_spike on noisy runs: a loss short median >= x3 its baseline needs only sp_big_z_loss " \
	  "sigmas (8 sigma of a small-batch run with 25-30 % per-step log noise is x7-x11; benign " \
	  "bursts of noisy runs stay below x1.7) ...", GW_THR_RISE) \
	X(sp_big_z_loss, 4.0, GW_TH_ABOVE, 0, 1000, \
	  "... and this many sigmas (half of sp_z_loss); the grad-norm condition still applies", \
	  GW_THR_SIGMAS) \
	X(sp_loss_gn_z, 2.0, GW_TH_REAL, 0, 1000, \
	  "loss_spike: grad norm not collapsing (z >= -2); loss up with grad norm down is the reset signature", \
	  "sigmas of a fall: 0 (no fall at all) to 1000") \
	X(sp_z_gn, 6.0, GW_TH_ABOVE, 0, 1000, \
	  "grad_explosion: short median of log grad norm >= 6 sigma above the baseline ...", GW_THR_SIGMAS) \
	X(sp_gn_rel, 2.0, GW_TH_REAL, 1, 1000, \
	  "... and >= x2 (clean llm.c runs reach x1.6 at 6.8 sigma)", GW_THR_RISE) \
	X(sp_gn_loss_z, 2.0, GW_TH_REAL, 0, 1000, \
	  "grad_explosion: loss rising too (z >= 2): isolated grad-norm spikes with a flat loss and " \
	  "early-training growth with a falling loss are benign", \
	  "sigmas of a rise: 0 (not falling) to 1000") \
	X(sp_quiet, 50.0, GW_TH_COUNT, 1, 1e9, "a spike episode ends after this many lines below sp_end_z", \
	  GW_THR_LINES) \
	X(sp_end_z, 3.0, GW_TH_ABOVE, 0, 1000, "z below which a line counts as quiet", GW_THR_SIGMAS) \
	X(sp_crit_rel, 3.0, GW_TH_REAL, 1, 1000, "spike alerts are critical at x3 or more", GW_THR_RISE) \
	/* ---- stall (wall clock, live only) and throughput collapse */ \
	X(stall_min_seconds, 120.0, GW_TH_REAL, 0.1, 2592000, \
	  "a run is stalled when it has not logged for this long ...", \
	  "seconds: at least 0.1 (the tick runs every 10 ms or more), at most 30 days") \
	X(stall_factor, 30.0, GW_TH_REAL, 1, 1e6, \
	  "... and for this many times its median step interval (slow steps, eval pauses)", \
	  "a multiple of the interval: >= 1 (shorter silences are the next line coming)") \
	X(stall_min_records, 20.0, GW_TH_COUNT, 5, 1e9, \
	  "records a run must have logged steadily before its silence means anything", \
	  "records: at least 5 (its usual interval is the median of 4 or more), at most 1e9") \
	X(stall_fresh_seconds, 60.0, GW_TH_REAL, 0, 86400, \
	  "stall needs evidence the job is alive: its last line's ts was within this of the wall " \
	  "clock when it arrived (synchronised clocks agree within seconds; a live client sends " \
	  "every 20 ms) ...", \
	  "seconds: 0 (always ask for the rate below) to a day") \
	X(stall_live_ratio, 0.5, GW_TH_ABOVE, 0, 1, \
	  "... or its last lines arrived at least this fast relative to how fast their ts advance " \
	  "(wall-clock span / ts span since up to 16 lines >= 1 s of ts apart): a live job with a " \
	  "skewed clock arrives at its own pace (1), `gradwatch send` of an old log replays hours in " \
	  "a second (~0) and must not stall-alert", \
	  "a ratio: above 0 (0 would take any backlog for a live job), at most 1") \
	X(thr_collapse, 0.3, GW_TH_ABOVE, 0, 0.75, \
	  "throughput collapse: median of the last 16 values below this fraction of the median of the " \
	  "128 before (a hung data loader, a failing node), outside the first 20 steps after a restart", \
	  "a fraction: above 0 (it divides), at most 0.75 (below the 0.8 at which an episode ends, " \
	  "so it cannot flap)")

/* Most detector-owned thresholds of all registered detectors together. */
#define GW_TH_OWN_MAX 96

struct gw_thresholds {
#define GW_TH_FIELD(name, def, kind, lo, hi, reason, range) double name;
	GW_THRESHOLDS(GW_TH_FIELD)
#undef GW_TH_FIELD
	/* The detectors' own thresholds, each detector's struct of doubles at
	 * the place gw_threshold_list() gives it (gw_det_own_th finds it). */
	double own[GW_TH_OWN_MAX];
};

struct gw_threshold_info {
	const char *name;
	double def;
	enum gw_th_kind kind;
	double lo, hi;
	const char *reason;       /* why the default */
	const char *range_reason; /* why the range */
	/* Where the value is: in struct gw_thresholds (gw_threshold_list), or
	 * in the detector's own struct (a table of GW_TH_OWN entries). */
	size_t offset;
};

/*
 * A detector's own threshold: one entry of its table, for the field `name`
 * of its struct `type` (only doubles, one per entry, the field named as the
 * configuration key).  The table ends with GW_TH_OWN_END, and the detector
 * names it with GW_DET_THRESHOLDS(table, type) in its gw_detector:
 *
 *   struct my_th { double my_window; };
 *   static const struct gw_threshold_info my_thresholds[] = {
 *           GW_TH_OWN(struct my_th, my_window, 8, GW_TH_COUNT, 1, 32,
 *                     "why 8", "why 1 to 32"),
 *           GW_TH_OWN_END,
 *   };
 *   ... .name = "my", GW_DET_THRESHOLDS(my_thresholds, struct my_th), ...
 *
 * Its names must not be taken (by this list or another detector): the
 * list is built once, on first use, and aborts (GW_REQUIRE) on a name
 * taken twice, a struct that is not exactly its table's doubles, or more
 * than GW_TH_OWN_MAX in all.  Relations between its thresholds go into
 * its gw_detector's check_thresholds hook.
 */
#define GW_TH_OWN(type, name, def, kind, lo, hi, reason, range) \
	{#name, def, kind, lo, hi, reason, range, offsetof(type, name)}
#define GW_TH_OWN_END {NULL, 0, 0, 0, 0, NULL, NULL, 0}
#define GW_DET_THRESHOLDS(table, type) .thresholds = (table), .thresholds_size = sizeof(type)

/* Every threshold, the shared ones first, then each registered detector's
 * in registry order; NULL-name terminated. */
const struct gw_threshold_info *gw_threshold_list(void);

/* The entry of a threshold by name, or NULL. */
const struct gw_threshold_info *gw_threshold_find(const char *name);

/* The range as text, e.g. "integer in [1, 32]", "(0, 1]", "[1, 1000]",
 * into buf; returns buf. */
const char *gw_threshold_range(const struct gw_threshold_info *i, char *buf, size_t size);

void gw_thresholds_default(struct gw_thresholds *t);

/* Set one threshold by name.  Returns 0; -ENOENT if there is no such
 * threshold; -EINVAL if the value is not finite, not an integer where
 * the threshold counts something, or out of its range (err, if not NULL,
 * gets "<name> must be an integer in [1, 32], not -5: <why the range>").
 * The value is not set on an error. */
int gw_thresholds_set(struct gw_thresholds *t, const char *name, double v, char *err,
                      size_t errlen);

/* Check a whole set: every value in its range, the shared thresholds that
 * must agree with each other (pre_min <= pre_window; post_window_min <=
 * post_window <= post_window_long; div_min_steps <= div_steps; mr_post +
 * mr_gap + mr_pre <= 512; sp_base_window + sp_cur_window <= 512), then
 * each detector's check_thresholds on its own.  Returns 0 or -EINVAL with
 * the first problem in err (if not NULL). */
int gw_thresholds_check(const struct gw_thresholds *t, char *err, size_t errlen);

#endif
