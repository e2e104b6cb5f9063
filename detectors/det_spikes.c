/*
 * loss_spike and grad_explosion: a sudden rise of the loss, or of the grad
 * norm, that survives noisy small-batch training and early transients.
 *
 * Both compare the median of the last sp_cur_window valid records (a
 * 5-median: two outliers cannot move it) with the median of the
 * sp_base_window records before them, in log space, in units of the
 * baseline's own robust per-step noise (spike.c, gw_spike_stat).
 *   loss_spike      loss >= sp_z_loss sigmas and x sp_loss_rel up (or, on
 *                   noisy runs, >= sp_big_z_loss sigmas and x sp_big_loss_rel
 *                   up: a tripled loss is no burst of noise), and the
 *                   grad norm not collapsing (loss up with grad norm down is
 *                   the optimizer-reset signature, left to optimizer_reset);
 *   grad_explosion  grad norm >= sp_z_gn sigmas and x sp_gn_rel up, and the
 *                   loss rising too (isolated grad-norm spikes with a flat
 *                   loss, and early growth with a falling loss, are benign).
 * One alert per episode: an episode ends after sp_quiet lines below
 * sp_end_z.  In the first post_window + 1 lines after a restart nothing
 * happens (the resume detectors, which know the regime before the
 * checkpoint, speak first).  Precedence (registry.c): within post_max lines
 * of a restart a resume detector already explained, an episode's verdict is
 * dropped (the episode is still followed to its end); and a grad_explosion
 * verdict keeps optimizer_reset's mid-run rule from reading a divergence's
 * aftermath as a reset.
 */
#include "detector.h"
#include "util.h"
#include "hist.h"
#include "regime.h"
#include "spike.h"

#include <math.h>
#include <stdio.h>

struct sp_state {
	uint32_t incident;
	bool active;
	unsigned quiet;
};

static void spike(struct sp_state *s, const struct gw_det_ctx *ctx, bool is_loss)
{
	const struct gw_thresholds *th = ctx->th;
	const struct gw_restart *rs = ctx->restart;
	struct gw_hist_rec r;
	gw_hist_at(ctx->hist, 0, &r);
	if (!r.valid)
		return;
	bool in_resume = rs->active && (double)rs->k <= th->post_max;
	if (in_resume && (double)rs->k <= th->post_window + 1)
		return;
	/* with no episode open, nothing happens unless a ratio can pass */
	if (!s->active && !gw_spike_possible(ctx))
		return;
	const struct gw_spike_stat *st = gw_spike_stat(ctx);
	if (!st->ok)
		return;
	const struct gw_spike_series *me = is_loss ? &st->loss : &st->gn;
	if (s->active) {
		s->quiet = me->z < th->sp_end_z ? s->quiet + 1 : 0;
		if (s->quiet >= th->sp_quiet) {
			s->active = false;
			gw_det_resolve(ctx, s->incident);
		}
		return;
	}
	bool cond = is_loss ? ((st->loss.z >= th->sp_z_loss && st->loss.log_ratio >= log(th->sp_loss_rel)) ||
	                       (st->loss.z >= th->sp_big_z_loss &&
	                        st->loss.log_ratio >= log(th->sp_big_loss_rel))) &&
	                          st->gn.z >= -th->sp_loss_gn_z
	                    : st->gn.z >= th->sp_z_gn && st->gn.log_ratio >= log(th->sp_gn_rel) &&
	                          st->loss.z >= th->sp_gn_loss_z;
	if (!cond)
		return;
	s->active = true;
	s->quiet = 0;
	struct gw_verdict v = {.incident = s->incident + 1,
	                       .severity = me->log_ratio >= log(th->sp_crit_rel) ? GW_SEV_CRITICAL
	                                                                        : GW_SEV_WARNING};
	char a[24], b[24], sb[32], pc[16];
	const struct gw_spike_series *other = is_loss ? &st->gn : &st->loss;
	snprintf(v.summary, sizeof(v.summary),
	         "%s jumped to %.2gx its recent level (%s \u2192 %s, median of the last %zu steps to %s; "
	         "%.0f noise sigmas); %s %s",
	         is_loss ? "loss" : "grad norm", exp(me->log_ratio),
	         gw_det_fmt_num(a, sizeof(a), exp(me->base_median)),
	         gw_det_fmt_num(b, sizeof(b), exp(me->cur_median)), st->cur_n,
	         gw_fmt_int(sb, sizeof(sb), r.step), me->z, is_loss ? "grad norm" : "loss also up",
	         gw_det_fmt_pct(pc, sizeof(pc), other->log_ratio));
	snprintf(v.cause, sizeof(v.cause),
	         "the start of a divergence: LR too high or an LR spike, a bad batch, numerical "
	         "instability (fp16 overflow, attention logits)");
	snprintf(v.action, sizeof(v.action),
	         "look at the LR, the loss scale and the data of these steps; consider rolling back to "
	         "the last good checkpoint and lowering the LR or clipping harder");
	v.evidence = json_pack("{s:[I, I], s:I, s:o, s:o, s:[I, I], s:o, s:o, s:o, s:o, s:o}",
	                       "baseline_steps", (json_int_t)st->base_from, (json_int_t)st->base_to,
	                       "baseline_n", (json_int_t)st->base_n,
	                       "baseline_median", gw_json_num(exp(me->base_median)),
	                       "baseline_log_noise", gw_json_num(me->base_noise),
	                       "short_window_steps", (json_int_t)st->cur_from, (json_int_t)st->cur_to,
	                       "short_median", gw_json_num(exp(me->cur_median)),
	                       "sigmas", gw_json_num(me->z),
	                       "log_ratio", gw_json_num(me->log_ratio),
	                       "loss_sigmas", gw_json_num(st->loss.z),
	                       "grad_norm_sigmas", gw_json_num(st->gn.z));
	if (gw_det_raise(ctx, &v))
		s->incident = v.incident;
}

static void loss_record(void *st, const struct gw_det_ctx *ctx)
{
	spike(st, ctx, true);
}

static void gn_record(void *st, const struct gw_det_ctx *ctx)
{
	spike(st, ctx, false);
}

const struct gw_detector gw_det_loss_spike = {
	.name = "loss_spike",
	.state_size = sizeof(struct sp_state),
	.on_record = loss_record,
};

const struct gw_detector gw_det_grad_explosion = {
	.name = "grad_explosion",
	.state_size = sizeof(struct sp_state),
	.on_record = gn_record,
};
