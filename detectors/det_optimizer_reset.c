/*
 * optimizer_reset: the optimizer state was not restored on resume (a fresh
 * optimizer, another optimizer class, state mapped onto the wrong
 * parameters, changed betas/eps), or was reset mid-run.  Three paths:
 *
 *  replayed divergence  With an overlap (the job crashed at T > S and
 *      replays S+1..T), the first replayed step is a pure function of the
 *      weights and the batch: if it matches its pre-crash copy within
 *      match_tol and the LR is the same, the weights and the data are the
 *      same.  If the next div_steps steps then part from their copies by
 *      div_rms (RMS of log ratios) or more, the first update differed: the
 *      optimizer state is not what was saved.  Batch noise cancels in the
 *      pairing, which is why this catches small models that heal within
 *      twenty steps.
 *  pairs' signature  Without the first step's match (the data loader's
 *      state lost too, so the batches differ): over pp_min_pairs or more
 *      replayed steps, the resumed copy's loss is higher and its grad norm
 *      lower than the pre-crash copy's at the same steps, each on average
 *      by pp_loss_rel / pp_gn_rel and pp_t standard errors.  Batch noise
 *      has mean 0 in the pairs; a lost optimizer state moves both.
 *  signature  Against the pre-checkpoint regime (regime.c): over the short
 *      and the long post-resume windows, median loss up (or_z_loss sigmas and
 *      or_rel_loss) AND median grad norm down (or_z_gn, or_rel_gn) AND the LR
 *      unchanged.  A grad-norm drop alone is not enough: larger batches and
 *      LR decays cause it too; the loss rise is what they lack.  The first
 *      resumed step is left out of the windows because it may carry the
 *      momentum-tax spike, which is reported as evidence.  A long window
 *      whose short window shows a level jump (gw_regime_level_jump) is a
 *      level jump, not a reset; and a restart resume_regression already
 *      explained is not reported again (precedence, registry.c).
 *  mid-run  The same conjunction between the mr_pre records and the last
 *      mr_post, with thresholds twice as strict, where no restart is being
 *      watched: a silent reset.  Not in a divergence's aftermath: a
 *      grad_explosion in the windows drops it (precedence, registry.c).
 * One alert per segment (once_per_segment); the paths stop at the first.
 */
#include "detector.h"
#include "util.h"
#include "hist.h"
#include "kern.h"
#include "regime.h"
#include "robust.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { DIV_UNDECIDED, DIV_OK, DIV_NO };

struct or_state {
	uint32_t incident;
	int div;
	double d1l, d1g;
	double dl[32], dg[32];
	size_t ndiv;
	/* every replayed pair of this segment (the pairs' signature) */
	double pl[32], pg[32];
	size_t npair;
	bool pair_lr_moved;
};

static const char CAUSE[] = "the optimizer state (Adam moments, momentum) was not restored as saved: "
                            "a model-only resume, another optimizer class, state mapped onto the "
                            "wrong parameters, or changed optimizer hyperparameters";

static void or_segment(void *st, const struct gw_det_ctx *ctx)
{
	struct or_state *s = st;
	s->div = DIV_UNDECIDED;
	s->ndiv = 0;
	s->npair = 0;
	s->pair_lr_moved = false;
}

static double rms(const double *x, size_t n)
{
	struct gw_kern_moments m;
	gw_kern_moments(x, n, NULL, 0, &m);
	return sqrt(m.m2 / (double)m.n + m.mean * m.mean);
}

/* Raise v (its incident is the next one) and count the incident if it was
 * reported. */
static bool raise(struct or_state *s, const struct gw_det_ctx *ctx, struct gw_verdict *v)
{
	if (!gw_det_raise(ctx, v))
		return false;
	s->incident = v->incident;
	return true;
}

/* The divergence verdict, once the compared steps are in; true if raised. */
static bool evaluate_divergence(struct or_state *s, const struct gw_det_ctx *ctx)
{
	const struct gw_restart *rs = ctx->restart;
	const struct gw_thresholds *th = ctx->th;
	size_t n = s->ndiv;
	bool ok = s->div == DIV_OK;
	s->div = DIV_NO; /* evaluated once */
	if (!ok || (double)n < th->div_min_steps)
		return false;
	double rl = rms(s->dl, n), rg = rms(s->dg, n);
	double d1 = fmax(fabs(s->d1l), fabs(s->d1g));
	double thr = fmax(th->div_rms, th->div_rel_first * d1);
	if (fmax(rl, rg) < thr)
		return false;
	json_t *ll = json_array(), *lg = json_array();
	for (size_t i = 0; i < n; i++) {
		json_array_append_new(ll, gw_json_num(s->dl[i]));
		json_array_append_new(lg, gw_json_num(s->dg[i]));
	}
	struct gw_verdict v = {.incident = s->incident + 1, .rule = "replay_divergence",
	                       .severity = GW_SEV_WARNING};
	char a[32], b[32], c[32], d[32];
	int64_t S = rs->ckpt_step, last = S + 1 + (int64_t)n;
	snprintf(v.summary, sizeof(v.summary),
	         "replayed steps %s-%s after the resume from step %s diverge from the pre-crash run "
	         "(RMS %.1f%% grad norm, %.1f%% loss) although step %s matched to %.2f%% and the LR is "
	         "identical: the first update after the resume differed, so the optimizer state was not "
	         "restored as saved",
	         gw_fmt_int(a, sizeof(a), S + 2), gw_fmt_int(b, sizeof(b), last),
	         gw_fmt_int(c, sizeof(c), S), rg * 100, rl * 100,
	         gw_fmt_int(d, sizeof(d), S + 1), d1 * 100);
	snprintf(v.cause, sizeof(v.cause), "%s", CAUSE);
	snprintf(v.action, sizeof(v.action),
	         "compare the optimizer class, state keys, param-group order and betas/eps/weight decay "
	         "of the save and load paths; check that optimizer.load_state_dict() ran");
	v.evidence = json_pack("{s:s, s:I, s:I, s:{s:o, s:o}, s:[I, I], s:o, s:o, s:o, s:o, s:o, s:o}",
	                       "rule", "replay_divergence", "restart_step", (json_int_t)S,
	                       "crash_step", (json_int_t)rs->crash_step, "first_step_log_ratio",
	                       "loss", gw_json_num(s->d1l), "grad_norm", gw_json_num(s->d1g),
	                       "steps_compared", (json_int_t)(S + 2), (json_int_t)last,
	                       "rms_log_ratio_loss", gw_json_num(rl),
	                       "rms_log_ratio_grad_norm", gw_json_num(rg),
	                       "match_tol", gw_json_num(th->match_tol),
	                       "div_threshold", gw_json_num(thr), "log_ratios_loss", ll,
	                       "log_ratios_grad_norm", lg);
	return raise(s, ctx, &v);
}

/* Mean and standard error of x[0..n), n >= 2. */
static void mean_se(const double *x, size_t n, double *mean, double *se)
{
	struct gw_kern_moments m;
	gw_kern_moments(x, n, NULL, 0, &m);
	*mean = m.mean;
	*se = sqrt(m.m2 / (double)(m.n - 1) / (double)m.n);
}

/* The pairs' signature (see the top); true if raised. */
static bool pairs(struct or_state *s, const struct gw_det_ctx *ctx, double dl, double dg,
                  bool lr_same)
{
	const struct gw_restart *rs = ctx->restart;
	const struct gw_thresholds *th = ctx->th;
	s->pair_lr_moved |= !lr_same;
	if (s->npair >= sizeof(s->pl) / sizeof(s->pl[0]) || s->pair_lr_moved)
		return false;
	s->pl[s->npair] = dl;
	s->pg[s->npair] = dg;
	size_t n = ++s->npair;
	if ((double)n < th->pp_min_pairs)
		return false;
	double ml, sl, mg, sg;
	mean_se(s->pl, n, &ml, &sl);
	mean_se(s->pg, n, &mg, &sg);
	if (!(ml >= log(th->pp_loss_rel) && ml >= th->pp_t * sl && mg <= log(th->pp_gn_rel) &&
	      -mg >= th->pp_t * sg))
		return false;
	struct gw_verdict v = {.incident = s->incident + 1, .rule = "replay_signature",
	                       .severity = GW_SEV_WARNING};
	char a[32];
	snprintf(v.summary, sizeof(v.summary),
	         "at the %zu steps replayed after the resume from step %s, the loss is %+.1f%% and the "
	         "grad norm %+.1f%% against the same steps before the crash (each %.0f and %.0f standard "
	         "errors from 0): the resumed run is not the one that was saved, as when the optimizer "
	         "state is lost",
	         n, gw_fmt_int(a, sizeof(a), rs->ckpt_step), (exp(ml) - 1) * 100, (exp(mg) - 1) * 100,
	         sl > 0 ? ml / sl : 999.0, sg > 0 ? -mg / sg : 999.0);
	snprintf(v.cause, sizeof(v.cause), "the resumed state is not what was saved: the optimizer "
	         "state (Adam moments, momentum) not restored, or the data loader's position and "
	         "shuffle, RNG or model state resumed otherwise");
	snprintf(v.action, sizeof(v.action),
	         "check that optimizer.load_state_dict() ran and what else the checkpoint restores (the "
	         "data loader's position and shuffle, RNG states); compare a resumed step with its "
	         "pre-crash copy");
	v.evidence = json_pack("{s:s, s:I, s:I, s:I, s:o, s:o, s:o, s:o}", "rule", "replay_signature",
	                       "restart_step", (json_int_t)rs->ckpt_step, "crash_step",
	                       (json_int_t)rs->crash_step, "pairs", (json_int_t)n,
	                       "mean_log_ratio_loss", gw_json_num(ml), "se_loss", gw_json_num(sl),
	                       "mean_log_ratio_grad_norm", gw_json_num(mg), "se_grad_norm",
	                       gw_json_num(sg));
	return raise(s, ctx, &v);
}


/* Replayed-step divergence: pair this line with its pre-crash copy; true
 * if a verdict was raised. */
static bool divergence(struct or_state *s, const struct gw_det_ctx *ctx, const struct gw_hist_rec *r)
{
	const struct gw_restart *rs = ctx->restart;
	const struct gw_thresholds *th = ctx->th;
	const struct gw_replayed *orig = gw_hist_replayed(ctx->hist, r->step);
	if (s->div == DIV_NO) {
		/* the first step did not match: the pairs' signature still looks */
		if (!orig || !orig->valid || !r->valid)
			return false;
		bool same = true;
		if (!isnan(r->lr) && !isnan(orig->lr) && r->lr > 0 && orig->lr > 0)
			same = fabs(log(r->lr / orig->lr)) <= th->lr_same_tol;
		double dl = log(r->loss / orig->loss), dg = log(r->grad_norm / orig->grad_norm);
		return isfinite(dl) && isfinite(dg) && pairs(s, ctx, dl, dg, same);
	}
	if (!orig || !orig->valid || !r->valid) {
		if (s->div == DIV_UNDECIDED && rs->k == 1)
			s->div = DIV_NO;
		else if (s->div == DIV_OK)
			return evaluate_divergence(s, ctx);
		return false;
	}
	bool lr_same = true;
	if (!isnan(r->lr) && !isnan(orig->lr) && r->lr > 0 && orig->lr > 0)
		lr_same = fabs(log(r->lr / orig->lr)) <= th->lr_same_tol;
	double dl = log(r->loss / orig->loss), dg = log(r->grad_norm / orig->grad_norm);
	if (isfinite(dl) && isfinite(dg) && pairs(s, ctx, dl, dg, lr_same))
		return true;
	if (rs->k == 1) {
		s->div = fabs(dl) <= th->match_tol && fabs(dg) <= th->match_tol && lr_same ? DIV_OK : DIV_NO;
		s->d1l = dl;
		s->d1g = dg;
		return false;
	}
	if (s->div != DIV_OK)
		return false;
	if (!lr_same) {
		s->div = DIV_NO;
		return false;
	}
	if (s->ndiv < (sizeof(s->dl) / sizeof(s->dl[0]))) {
		s->dl[s->ndiv] = dl;
		s->dg[s->ndiv] = dg;
		s->ndiv++;
	}
	if ((double)s->ndiv >= th->div_steps)
		return evaluate_divergence(s, ctx);
	return false;
}

/* The regime signature on the short, then the long window; true if a
 * verdict was reported. */
static bool signature(struct or_state *s, const struct gw_det_ctx *ctx, const struct gw_hist_rec *r)
{
	const struct gw_restart *rs = ctx->restart;
	const struct gw_regime *pre = &rs->pre;
	const struct gw_thresholds *th = ctx->th;
	if (!pre->ok || !r->valid || (double)rs->k > th->post_max)
		return false;
	for (int w = GW_WIN_SHORT; w <= GW_WIN_LONG; w++) {
		const struct gw_post_window *p = &rs->win[w];
		if (!p->ready)
			continue;
		/* a long window whose short window shows a level jump on this
		 * line is a level jump (resume_regression's), not a reset */
		if (w == GW_WIN_LONG && gw_regime_level_jump(rs, GW_WIN_SHORT, th))
			continue;
		if (!(p->lr_steady && p->loss_sigmas >= th->or_z_loss * p->sigma_scale &&
		      p->loss_log_ratio >= log(th->or_rel_loss) &&
		      p->gn_sigmas <= -th->or_z_gn * p->sigma_scale &&
		      p->gn_log_ratio <= log(th->or_rel_gn)))
			continue;
		bool crit = p->loss_sigmas >= th->or_crit_z_loss * p->sigma_scale &&
		            p->gn_sigmas <= -th->or_crit_z_gn * p->sigma_scale;
		struct gw_verdict v = {.incident = s->incident + 1, .rule = "signature",
		                       .severity = crit ? GW_SEV_CRITICAL : GW_SEV_WARNING};
		char g0[24], g1[24], l0[24], l1[24], a[32], b[32], c[32];
		int off = snprintf(v.summary, sizeof(v.summary),
		                   "grad norm fell %.0f%% (%s \u2192 %s) while loss rose %.0f%% (%s \u2192 %s) "
		                   "over steps %s-%s after the resume from step %s, LR unchanged (medians; "
		                   "%.1f and %.1f noise sigmas)",
		                   (1 - exp(p->gn_log_ratio)) * 100,
		                   gw_det_fmt_num(g0, sizeof(g0), exp(pre->log_gn_median)),
		                   gw_det_fmt_num(g1, sizeof(g1), exp(pre->log_gn_median + p->gn_log_ratio)),
		                   (exp(p->loss_log_ratio) - 1) * 100,
		                   gw_det_fmt_num(l0, sizeof(l0), pre->loss_median),
		                   gw_det_fmt_num(l1, sizeof(l1), pre->loss_median * exp(p->loss_log_ratio)),
		                   gw_fmt_int(a, sizeof(a), p->k_first + rs->ckpt_step),
		                   gw_fmt_int(b, sizeof(b), r->step),
		                   gw_fmt_int(c, sizeof(c), rs->ckpt_step), p->loss_sigmas, -p->gn_sigmas);
		json_t *spike = NULL;
		if (rs->has_first && rs->first.valid) {
			double z1 = (log(rs->first.grad_norm) - pre->log_gn_median) / pre->log_gn_noise;
			if (z1 >= th->or_spike_z) {
				spike = json_pack("{s:I, s:o, s:o}", "step", (json_int_t)rs->first.step,
				                  "grad_norm", gw_json_num(rs->first.grad_norm),
				                  "sigmas", gw_json_num(z1));
				if (off > 0 && (size_t)off < sizeof(v.summary))
					snprintf(v.summary + off, sizeof(v.summary) - (size_t)off,
					         "; grad-norm spike %s at the first resumed step (momentum tax)",
					         gw_det_fmt_num(g0, sizeof(g0), rs->first.grad_norm));
			}
		}
		snprintf(v.cause, sizeof(v.cause), "%s", CAUSE);
		snprintf(v.action, sizeof(v.action),
		         "the resume path probably restored the model but not the optimizer: load "
		         "optimizer.state_dict() too, check the optimizer class and param-group order against "
		         "the checkpoint, and roll back to step %s", c);
		v.evidence = gw_regime_evidence(rs, p, "signature");
		if (v.evidence && spike)
			json_object_set_new(v.evidence, "first_step_grad_norm_spike", spike);
		else
			json_decref(spike);
		return raise(s, ctx, &v);
	}
	return false;
}

/* The mid-run rule: the last mr_post valid records against the mr_pre
 * before them (mr_gap left out between). */
static void midrun(struct or_state *s, const struct gw_det_ctx *ctx, const struct gw_hist_rec *r)
{
	const struct gw_thresholds *th = ctx->th;
	const struct gw_restart *rs = ctx->restart;
	if (!r->valid)
		return;
	if (rs->active && (double)rs->k <= th->post_max)
		return; /* the resume paths own this stretch */
	if ((double)ctx->valid_records < th->mr_arm)
		return;
	size_t npost = (size_t)th->mr_post, npre = (size_t)th->mr_pre;
	size_t skip = npost + (size_t)th->mr_gap;
	if (!npost || npost > GW_RING_CAP || !npre || npre > GW_RING_CAP)
		return;
	const struct gw_hist *h = ctx->hist;
	/* both windows whole (skip >= npost): the newest npost valid records
	 * and the npre before the gap */
	if (h->vcount < skip + npre)
		return;
	/* cheap bounds on the four medians first (robust.h): they rule out
	 * nearly every line the count below would */
	double bp, bm;
	if (gw_hist_valid_bound(h, GW_V_LOSS, npost, 0, 1, &bp) &&
	    gw_hist_valid_bound(h, GW_V_LOSS, npre, skip, -1, &bm) &&
	    gw_mid_surely_above(bm, bp / th->mr_rel_loss))
		return;
	if (gw_hist_valid_bound(h, GW_V_LOG_GRAD_NORM, npost, 0, -1, &bp) &&
	    gw_hist_valid_bound(h, GW_V_LOG_GRAD_NORM, npre, skip, 1, &bm) &&
	    gw_mid_surely_below(bm, bp - log(th->mr_rel_gn)))
		return;
	struct gw_win wpl = gw_hist_valid(h, GW_V_LOSS, npost, 0);
	struct gw_win wL = gw_hist_valid(h, GW_V_LOSS, npre, skip);
	struct gw_win wpg = gw_hist_valid(h, GW_V_LOG_GRAD_NORM, npost, 0);
	struct gw_win wG = gw_hist_valid(h, GW_V_LOG_GRAD_NORM, npre, skip);
	/* the relative conditions first: post medians, then a count over the
	 * reference window; almost always they rule the line out.
	 * log(pL / mL) >= log(rel_loss) needs mL <= pL / rel_loss; pG - mG <=
	 * log(rel_gn) needs mG >= pG - log(rel_gn) */
	double pL = gw_win_median(&wpl), pG = gw_win_median(&wpg);
	if (!gw_median_maybe_le(&wL, pL / th->mr_rel_loss) ||
	    !gw_median_maybe_ge(&wG, pG - log(th->mr_rel_gn)))
		return;
	double L[GW_RING_CAP], G[GW_RING_CAP], tmp[GW_RING_CAP];
	gw_win_copy(&wL, L);
	gw_win_copy(&wG, G);
	memcpy(tmp, L, npre * sizeof(double));
	double mL = gw_median(tmp, npre);
	memcpy(tmp, G, npre * sizeof(double));
	double mG = gw_median(tmp, npre);
	double mul = log(pL / mL), mvl = pG - mG;
	if (!(mul >= log(th->mr_rel_loss) && mvl <= log(th->mr_rel_gn)))
		return;
	double plr[GW_RING_CAP], Lr[GW_RING_CAP];
	struct gw_win w = gw_hist_valid(h, GW_V_LR, npost, 0);
	gw_win_copy(&w, plr);
	w = gw_hist_valid(h, GW_V_LR, npre, skip);
	gw_win_copy(&w, Lr);
	double lr_ref = Lr[npre - 1];
	for (size_t i = 0; i < npost; i++)
		if (!(isnan(plr[i]) || isnan(lr_ref) || lr_ref <= 0 || plr[i] <= 0 ||
		      fabs(log(plr[i] / lr_ref)) <= log(th->or_lr_drift)))
			return;
	double d[GW_RING_CAP];
	double sL = fmax(gw_noise(L, npre, d), th->sigma_floor_rel * fabs(mL));
	double sG = fmax(gw_noise(G, npre, d), th->sigma_floor_log);
	double mu = (pL - mL) / sL, mv = mvl / sG;
	if (!(mu >= th->mr_z_loss && mv <= -th->mr_z_gn))
		return;
	struct gw_verdict v = {.incident = s->incident + 1, .rule = "midrun",
	                       .severity = GW_SEV_WARNING};
	char g0[24], g1[24], l0[24], l1[24], a[32], b[32], c[32], e[32];
	snprintf(v.summary, sizeof(v.summary),
	         "without any visible restart, grad norm fell %.0f%% (%s \u2192 %s) while loss rose %.0f%% "
	         "(%s \u2192 %s) between steps %s-%s and %s-%s, LR unchanged (%.1f and %.1f noise sigmas)",
	         (1 - exp(mvl)) * 100, gw_det_fmt_num(g0, sizeof(g0), exp(mG)),
	         gw_det_fmt_num(g1, sizeof(g1), exp(pG)), (exp(mul) - 1) * 100,
	         gw_det_fmt_num(l0, sizeof(l0), mL), gw_det_fmt_num(l1, sizeof(l1), pL),
	         gw_fmt_int(a, sizeof(a), gw_hist_valid_step(h, npre, skip, 0)),
	         gw_fmt_int(b, sizeof(b), gw_hist_valid_step(h, npre, skip, npre - 1)),
	         gw_fmt_int(c, sizeof(c), gw_hist_valid_step(h, npost, 0, 0)),
	         gw_fmt_int(e, sizeof(e), r->step), mu, -mv);
	snprintf(v.cause, sizeof(v.cause),
	         "a silent optimizer-state reset: an unlogged restart, or the optimizer re-created in "
	         "the middle of the run");
	snprintf(v.action, sizeof(v.action),
	         "look for an unlogged restart or an optimizer re-creation around step %s; compare the "
	         "optimizer's state size before and after", c);
	v.evidence = json_pack("{s:s, s:{s:[I, I], s:I, s:o, s:o, s:o, s:o}, s:{s:[I, I], s:I, s:o, s:o, s:o, s:o}}",
	                       "rule", "midrun",
	                       "pre_window", "steps", (json_int_t)gw_hist_valid_step(h, npre, skip, 0),
	                       (json_int_t)gw_hist_valid_step(h, npre, skip, npre - 1),
	                       "n", (json_int_t)npre, "loss_median", gw_json_num(mL),
	                       "loss_noise", gw_json_num(sL),
	                       "grad_norm_median", gw_json_num(exp(mG)),
	                       "log_grad_norm_noise", gw_json_num(sG),
	                       "post_window", "steps", (json_int_t)gw_hist_valid_step(h, npost, 0, 0),
	                       (json_int_t)r->step,
	                       "n", (json_int_t)npost, "loss_median_sigmas", gw_json_num(mu),
	                       "loss_log_ratio", gw_json_num(mul),
	                       "grad_norm_median_sigmas", gw_json_num(mv),
	                       "grad_norm_log_ratio", gw_json_num(mvl));
	raise(s, ctx, &v);
}

static void or_record(void *st, const struct gw_det_ctx *ctx)
{
	struct or_state *s = st;
	struct gw_hist_rec r;
	gw_hist_at(ctx->hist, 0, &r);
	if (ctx->restart->active && (divergence(s, ctx, &r) || signature(s, ctx, &r)))
		return;
	midrun(s, ctx, &r);
}

const struct gw_detector gw_det_optimizer_reset = {
	.name = "optimizer_reset",
	.state_size = sizeof(struct or_state),
	.once_per_segment = true,
	.on_segment = or_segment,
	.on_record = or_record,
};
