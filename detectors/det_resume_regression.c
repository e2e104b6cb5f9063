/*
 * resume_regression: the first steps after a resume do not match the
 * pre-checkpoint regime (the postmortem's lesson 4: run a few steps after
 * every resume and check they match).
 *
 *  level  The loss median of the post-resume window is far above the
 *         regime: short window rr_z_loss_short sigmas and rr_rel_loss_short
 *         (gross jumps: weights corrupted or swapped on load), long window
 *         rr_z_loss x 0.5 sigmas and rr_rel_loss (sustained, on noisy runs).
 *  climb  The "false recovery" on poisoned weights: loss looks fine at
 *         first, then loss AND grad norm both climb above the regime
 *         (long window, within rr_long_max steps of the resume).
 * Windows and regime come from regime.c; one alert per segment
 * (once_per_segment), the short window judged first.
 */
#include "detector.h"
#include "util.h"
#include "hist.h"
#include "regime.h"

#include <math.h>
#include <stdio.h>

struct rr_state {
	uint32_t incident;
};

static void rr_record(void *st, const struct gw_det_ctx *ctx)
{
	struct rr_state *s = st;
	const struct gw_restart *rs = ctx->restart;
	const struct gw_regime *pre = &rs->pre;
	const struct gw_thresholds *th = ctx->th;
	if (!rs->active || !pre->ok)
		return;
	for (int w = GW_WIN_SHORT; w <= GW_WIN_LONG; w++) {
		const struct gw_post_window *p = &rs->win[w];
		if (!p->ready)
			continue;
		char l0[24], l1[24], g0[24], g1[24], pc[16], a[32], b[32], c[32];
		struct gw_hist_rec r;
		gw_hist_at(ctx->hist, 0, &r);
		if (gw_regime_level_jump(rs, w, th)) {
			struct gw_verdict v = {.incident = ++s->incident, .rule = "level",
			                       .severity = p->loss_log_ratio >= log(2.0) ? GW_SEV_CRITICAL
			                                                                 : GW_SEV_WARNING};
			snprintf(v.summary, sizeof(v.summary),
			         "loss after the resume from step %s is %.0f%% above the pre-checkpoint regime "
			         "(%s \u2192 %s, %.1f noise sigmas; medians of steps %s-%s); grad norm %s "
			         "(%s \u2192 %s)",
			         gw_fmt_int(c, sizeof(c), rs->ckpt_step), (exp(p->loss_log_ratio) - 1) * 100,
			         gw_det_fmt_num(l0, sizeof(l0), pre->loss_median),
			         gw_det_fmt_num(l1, sizeof(l1), pre->loss_median * exp(p->loss_log_ratio)),
			         p->loss_sigmas, gw_fmt_int(a, sizeof(a), p->k_first + rs->ckpt_step),
			         gw_fmt_int(b, sizeof(b), r.step),
			         gw_det_fmt_pct(pc, sizeof(pc), p->gn_log_ratio),
			         gw_det_fmt_num(g0, sizeof(g0), exp(pre->log_gn_median)),
			         gw_det_fmt_num(g1, sizeof(g1), exp(pre->log_gn_median + p->gn_log_ratio)));
			snprintf(v.cause, sizeof(v.cause),
			         "the weights were not restored correctly (corrupted or mis-mapped shards), the "
			         "wrong checkpoint was loaded, the optimizer or LR state was not restored, or the "
			         "data stream changed");
			snprintf(v.action, sizeof(v.action),
			         "evaluate the loaded checkpoint on a fixed batch and compare with the loss logged "
			         "before step %s; check which checkpoint was loaded and how", c);
			v.evidence = gw_regime_evidence(rs, p, "level");
			gw_det_raise(ctx, &v);
			return;
		}
		if (w == GW_WIN_LONG && p->lr_steady && p->loss_sigmas >= th->rr_climb_z &&
		    p->loss_log_ratio >= log(th->rr_climb_rel_loss) && p->gn_sigmas >= th->rr_climb_z &&
		    p->gn_log_ratio >= log(th->rr_climb_rel_gn)) {
			struct gw_verdict v = {.incident = ++s->incident, .rule = "climb",
			                       .severity = GW_SEV_WARNING};
			char pl[16];
			snprintf(v.summary, sizeof(v.summary),
			         "loss and grad norm are both climbing above the pre-checkpoint regime after the "
			         "resume from step %s: loss %s (%s \u2192 %s), grad norm %s (%s \u2192 %s), "
			         "medians of the %zu steps to %s",
			         gw_fmt_int(c, sizeof(c), rs->ckpt_step),
			         gw_det_fmt_pct(pl, sizeof(pl), p->loss_log_ratio),
			         gw_det_fmt_num(l0, sizeof(l0), pre->loss_median),
			         gw_det_fmt_num(l1, sizeof(l1), pre->loss_median * exp(p->loss_log_ratio)),
			         gw_det_fmt_pct(pc, sizeof(pc), p->gn_log_ratio),
			         gw_det_fmt_num(g0, sizeof(g0), exp(pre->log_gn_median)),
			         gw_det_fmt_num(g1, sizeof(g1), exp(pre->log_gn_median + p->gn_log_ratio)), p->n,
			         gw_fmt_int(b, sizeof(b), r.step));
			snprintf(v.cause, sizeof(v.cause),
			         "a false recovery on corrupted weights (shards scrambled on load): the run drifts "
			         "away from the pre-checkpoint trajectory");
			snprintf(v.action, sizeof(v.action),
			         "evaluate the checkpoint on a fixed batch before and after loading; check shard "
			         "reassembly and offload settings of the load path");
			v.evidence = gw_regime_evidence(rs, p, "climb");
			gw_det_raise(ctx, &v);
		}
	}
}

const struct gw_detector gw_det_resume_regression = {
	.name = "resume_regression",
	.state_size = sizeof(struct rr_state),
	.once_per_segment = true,
	.on_record = rr_record,
};
