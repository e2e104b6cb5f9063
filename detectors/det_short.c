/*
 * short_context: a run with less history than the other detectors' windows
 * (a pasted excerpt of 3-30 points, a run's first lines, a loss-only log the
 * spike rules never judge), judged on its own points.
 *
 * Active while the run has fewer valid records than the spike detectors
 * need (sp_base_window + sp_cur_window; a run without both loss and grad
 * norm never has any, so always).  It keeps the last sc_prior_max points
 * and judges each new one against those before it:
 *   absurd    a finite loss or grad norm >= sc_absurd (critical);
 *   collapse  a positive loss falls below sc_collapse_rel x the median before;
 *   jump      the loss >= sc_jump_rel x the highest of >= 3 points before (2:
 *             sc_jump_rel2), or
 *             loss >= sc_both_loss_rel x and grad norm >= sc_both_gn_rel x their
 *             highest at the same line (>= 1 point before: two series agree);
 *             the loss far outside the spread of those points (sc_z spreads
 *             of 4 or more, sc_z3 of 3, sc_z2 of 2; none with 1 point)
 *             and by sc_abs_rise in the loss's own units (so the level too);
 *   level     the loss >= sc_level_rel x the highest before (>= 2 points, far
 *             outside their spread as above; with 1 point before, sc_gross_rel
 *             x and sc_level_n1 points) for sc_level_n points in a row, which
 *             lie closer to each
 *             other than to the points before by sc_z: a level that stays;
 *   climb     the loss rose on sc_climb_n lines in a row, x sc_climb_rel in all,
 *             and >= sc_abs_rise, and the grad norm reached sc_both_gn_rel x its
 *             highest before;
 *   frozen    the same loss value on sc_frozen_n lines over >= sc_frozen_steps
 *             steps, the grad norm (if logged) not moving either (stagnation:
 *             nothing is learnt);
 *   resumed   the first point after a restart from a checkpoint (a step logged
 *             again) against the >= 3 points before the restart: the grad norm
 *             >= sc_res_gn_rel x their highest and both the grad norm and the
 *             loss far outside their spread (sc_z as above, the loss above
 *             every one of them): the state the run resumed with is not the
 *             one it saved (a lost optimizer state, another parallel layout,
 *             other weights).  A healthy resume goes on where it left off,
 *             within the noise of a step, whatever batch it draws.
 * Jump, level and climb judge no point at a step below sc_arm_steps (a
 * run's first steps are transients).  "spreads": the robust step noise of the log values before (robust.h
 * gw_noise; with fewer than 4 points the largest step between them),
 * floored at sigma_floor_log.  Every alert says the context was short and
 * how many points it had; a jump that came with a falling fp16 loss scale
 * says so.  One alert per segment.
 */
#include "det_short_impl.h"

#include "regime.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const struct gw_threshold_info sc_thresholds[] = {
	GW_TH_OWN(struct sc_th, sc_prior_max, 16.0, GW_TH_COUNT, 2, 16,
	  "short context: the points before a line it is judged against (a paste holds 3-30)",
	  "points: at least 2 (a spread needs 2), at most the 16 the detector keeps"),
	GW_TH_OWN(struct sc_th, sc_jump_rel, 1.9, GW_TH_REAL, 1, 1000,
	  "short jump: the loss >= x1.9 the highest of the >= 2 points before it (spikes of "
	  "13B-104B runs reach x1.97-x2.7; a healthy bump of x2.07 is only 3.4 spreads) ...",
	  GW_THR_RISE),
	GW_TH_OWN(struct sc_th, sc_z, 4.0, GW_TH_ABOVE, 0, 1000,
	  "... and every short rule's rise >= 4 spreads of the 4 or more points before it (their "
	  "robust step noise) ...", GW_THR_SIGMAS),
	GW_TH_OWN(struct sc_th, sc_z3, 8.0, GW_TH_ABOVE, 0, 1000,
	  "... >= 8 spreads of 3 points (the larger of their 2 steps: a spread of 2 steps is often "
	  "small by chance on a noisy run) ...", GW_THR_SIGMAS),
	GW_TH_OWN(struct sc_th, sc_z2, 48.0, GW_TH_ABOVE, 0, 1000,
	  "... >= 48 spreads of 2 points (one step: a noisy diffusion loss reaches 41 with two close "
	  "points; a 104B spike after two points 55)", GW_THR_SIGMAS),
	GW_TH_OWN(struct sc_th, sc_jump_rel2, 2.3, GW_TH_REAL, 1, 1000,
	  "short jump after only 2 points: x2.3 (a noisy toy run reaches x2.02 at 70 spreads; "
	  "a 104B spike x2.5)", GW_THR_RISE),
	GW_TH_OWN(struct sc_th, sc_abs_rise, 1.0, GW_TH_ABOVE, 0, 1e300,
	  "jump, level and climb also rise by this much in the loss's own units: "
	  "a whole nat is more than the batch noise of a cross-entropy (0.1-0.3), and small-valued "
	  "losses (MSE, diffusion: 0.004-0.42 with x8 jumps between samples) never reach it on "
	  "noise", "a loss difference: above 0"),
	GW_TH_OWN(struct sc_th, sc_level_n1, 8.0, GW_TH_COUNT, 2, 16,
	  "short level with one point before it: this many points at the level (a noisy loss "
	  "stays x3 above one low point for 6)", "points: at least 2, at most 16"),
	GW_TH_OWN(struct sc_th, sc_arm_steps, 20.0, GW_TH_COUNT, 0, 1e9,
	  "jump, level and climb judge no point at a step below this: a run's first steps are "
	  "transients (a toy transformer's loss x2.6 at step 12, a 13B start x1.5 at step 3); "
	  "those points are still the context of later ones", "steps: 0 (judge every point) or more"),
	GW_TH_OWN(struct sc_th, sc_level_rel, 1.5, GW_TH_REAL, 1, 1000,
	  "short level: the loss >= x1.5 the highest point before it and staying there ...",
	  GW_THR_RISE),
	GW_TH_OWN(struct sc_th, sc_level_n, 3.0, GW_TH_COUNT, 2, 16,
	  "... for this many points in a row (a one-point bump comes back)",
	  "points: at least 2 (one point is a spike), at most 16"),
	GW_TH_OWN(struct sc_th, sc_gross_rel, 3.0, GW_TH_REAL, 1, 1000,
	  "short level with one point before it (no spread known): only a loss x3 counts (the "
	  "early rises judged fine reach x2.9)", GW_THR_RISE),
	GW_TH_OWN(struct sc_th, sc_both_loss_rel, 1.75, GW_TH_REAL, 1, 1000,
	  "short jump of both: the loss >= x1.75 its highest point before (even one point: two "
	  "series agree; a healthy 13B start "
	  "with the fp16 scale calibrating reaches x1.53, divergences of 104B-176B runs "
	  "x1.77-x1.97) ...", GW_THR_RISE),
	GW_TH_OWN(struct sc_th, sc_both_gn_rel, 2.0, GW_TH_REAL, 1, 1000,
	  "... and the grad norm >= x2 its highest at the same line (a divergence moves both)",
	  GW_THR_RISE),
	GW_TH_OWN(struct sc_th, sc_climb_n, 3.0, GW_TH_COUNT, 2, 15,
	  "short climb: the loss rose on this many lines in a row ...",
	  "lines: at least 2, at most 15 (16 points kept)"),
	GW_TH_OWN(struct sc_th, sc_climb_rel, 1.35, GW_TH_REAL, 1, 1000,
	  "... by x1.35 in all, while the grad norm rose to >= sc_both_gn_rel x its highest before "
	  "(noisy fine-tunes climb x1.8-x2.6 in 4 lines on the loss alone, a healthy 40k-step run "
	  "x1.25 with its grad norm; a 104B divergence x1.43)",
	  GW_THR_RISE),
	GW_TH_OWN(struct sc_th, sc_collapse_rel, 1e-3, GW_TH_ABOVE, 0, 1,
	  "short collapse: a positive loss falls below this fraction of the median before it "
	  "(x1000 down in a few lines is no learning: labels leaked, a masked loss, a broken batch)",
	  GW_THR_FALL),
	GW_TH_OWN(struct sc_th, sc_frozen_n, 3.0, GW_TH_COUNT, 2, 1e9,
	  "frozen loss: the same loss value, to the last printed digit, on this many lines ...",
	  "lines: at least 2 (one line repeats nothing)"),
	GW_TH_OWN(struct sc_th, sc_frozen_steps, 15.0, GW_TH_COUNT, 1, 1e9,
	  "... over at least this many optimizer steps (a progress bar repeats its last loss at "
	  "every step for a while: 13 steps in a healthy Lightning paste)",
	  "steps: at least 1"),
	GW_TH_OWN(struct sc_th, sc_res_gn_rel, 3.0, GW_TH_REAL, 1, 1000,
	  "resumed: the first point after a restart has a grad norm this many times the highest "
	  "of the points before it (and the loss above them, both at sc_z spreads): BLOOM's TP=1/"
	  "PP=72 reshape resumed at x8.7 the grad norm of the same step and the same samples, "
	  "the other six layouts at x0.9-1.2", GW_THR_RISE),
	GW_TH_OWN(struct sc_th, sc_absurd, 1e12, GW_TH_ABOVE, 0, 1e300,
	  "a finite loss or grad norm this large is numerics gone, not training (healthy real logs "
	  "stay below 1e7; a grad norm logged still multiplied by an fp16 loss scale of 2^16-2^24 "
	  "stays below 1e12; broken runs log 4e12 and 5e26)",
	  "a magnitude: above 0"),
	GW_TH_OWN_END,
};


_Static_assert(SC_KEEP == 16, "sc_thresholds: sc_prior_max says at most 16");

static void sc_reset(struct sc_state *s)
{
	uint32_t inc = s->incident;
	memset(s, 0, sizeof(*s));
	s->incident = inc;
	s->last_loss = NAN;
}

static void sc_init(void *st, const struct gw_det_ctx *ctx)
{
	sc_reset(st);
	(void)ctx;
}

/* A new segment: its rules start afresh, but the ring keeps the points
 * before it for the resumed rule. */
static void sc_segment(void *st, const struct gw_det_ctx *ctx)
{
	struct sc_state *s = st;
	unsigned n = s->n, head = s->head;
	double loss[SC_KEEP], gn[SC_KEEP];
	memcpy(loss, s->loss, sizeof(loss));
	memcpy(gn, s->gn, sizeof(gn));
	sc_reset(s);
	s->n = n;
	s->head = head;
	memcpy(s->loss, loss, sizeof(loss));
	memcpy(s->gn, gn, sizeof(gn));
	s->seg_first = true;   /* its first point: a restart's? (ctx->restart) */
	(void)ctx;
}

static void sc_record(void *st, const struct gw_det_ctx *ctx)
{
	struct sc_state *s = st;
	const struct gw_thresholds *th = ctx->th;
	if ((double)ctx->valid_records >= th->sp_base_window + th->sp_cur_window)
		return;
	const struct gw_rec *r = ctx->rec;
	double L = gw_rec_has(r, GW_ROLE_LOSS) ? r->v[GW_ROLE_LOSS] : NAN;
	double G = gw_rec_has(r, GW_ROLE_GRAD_NORM) ? r->v[GW_ROLE_GRAD_NORM] : NAN;
	double scale = gw_rec_has_field(r, GW_FIELD_LOSS_SCALE) ? r->f[GW_FIELD_LOSS_SCALE] : NAN;
	if (isnan(L) && isnan(G))
		return;   /* nothing to judge (NaN itself is nonfinite's) */
	if ((gw_rec_has(r, GW_ROLE_LOSS) && !isfinite(L)) ||
	    (gw_rec_has(r, GW_ROLE_GRAD_NORM) && !isfinite(G)))
		return;   /* non-finite: nonfinite speaks */
	s->points++;
	bool first = s->seg_first;
	s->seg_first = false;
	if (!(first && ctx->restart && ctx->restart->active && isfinite(L) && isfinite(G) &&
	      gw__sc_resumed(s, ctx, L, G)))
		gw__sc_check(s, ctx, L, G, scale);
	s->loss[s->head] = L;
	s->gn[s->head] = G;
	s->scale[1] = s->scale[0];
	s->scale[0] = scale;
	s->last_step = r->step;
	s->head = (s->head + 1) % SC_KEEP;
	if (s->n < SC_KEEP)
		s->n++;
	if (s->seg_n < SC_KEEP)
		s->seg_n++;
	if (isfinite(L))
		s->last_loss = L;
}

const struct gw_detector gw_det_short_context = {
	.name = "short_context",
	.state_size = sizeof(struct sc_state),
	.once_per_segment = true,
	.init = sc_init,
	.on_segment = sc_segment,
	.on_record = sc_record,
	GW_DET_THRESHOLDS(sc_thresholds, struct sc_th),
};
