/*
 * The restart regime and the post-resume windows (see regime.h).  Medians
 * and noise come from robust.c (small copies, at most pre_window values);
 * the moments that only go into evidence come from the kernels.
 */
#include "regime.h"
#include "robust.h"

#include "detector.h"
#include "kern.h"
#include "util.h"

#include <math.h>
#include <string.h>

/* Median and noise of loss (linear) and log grad norm of n valid records,
 * oldest first, with the noise floors. */
static void regime_stat(const double *loss, const double *gn, size_t n,
                        const struct gw_thresholds *th, struct gw_regime *out)
{
	double a[GW_RING_CAP], g[GW_RING_CAP], d[GW_RING_CAP];
	if (n > GW_RING_CAP)
		n = GW_RING_CAP;
	memcpy(a, loss, n * sizeof(*a));
	for (size_t i = 0; i < n; i++)
		g[i] = log(gn[i]);
	double sl = gw_noise(a, n, d);
	double sg = gw_noise(g, n, d);
	out->loss_median = gw_median(a, n);
	out->log_gn_median = gw_median(g, n);
	out->loss_noise = fmax(sl, th->sigma_floor_rel * fabs(out->loss_median));
	out->log_gn_noise = fmax(sg, th->sigma_floor_log);
}

/* The windows' thresholds are what the code below turns into sizes; the
 * configuration and the engine refuse sets outside their ranges
 * (thresholds.h), so one here is a bug, and casting it would be undefined
 * behaviour (a negative double to size_t). */
static void require_windows(const struct gw_thresholds *th)
{
	GW_REQUIRE(th->pre_window >= 3 && th->pre_window <= GW_RING_CAP && th->pre_min >= 3 &&
	           th->pre_min <= th->pre_window);
	GW_REQUIRE(th->post_window_min >= 1 && th->post_window_min <= th->post_window &&
	           th->post_window <= th->post_window_long && th->post_window_long <= GW_POST_CAP);
	GW_REQUIRE(th->sigma_floor_log > 0 && th->sigma_floor_rel > 0);
}

void gw_regime_open(struct gw_restart *rs, int64_t S, int64_t T, const struct gw_hist *h,
                    const struct gw_thresholds *th)
{
	require_windows(th);
	memset(rs, 0, sizeof(*rs));
	rs->active = true;
	rs->ckpt_step = S;
	rs->crash_step = T;
	rs->lr_at_ckpt = rs->lr_before_ckpt = NAN;
	struct gw_regime *pre = &rs->pre;
	double loss[GW_RING_CAP], gn[GW_RING_CAP];
	int64_t step[GW_RING_CAP];
	size_t n = gw_hist_last_valid(h, (size_t)th->pre_window, 0, loss, gn, NULL, step);
	pre->n = n;
	if (n) {
		pre->from_step = step[0];
		pre->to_step = step[n - 1];
	}
	if (n >= (size_t)th->pre_min && n >= 3) {
		regime_stat(loss, gn, n, th, pre);
		pre->ok = true;
		struct gw_kern_moments lm, gm;
		gw_kern_moments(loss, n, NULL, 0, &lm);
		gw_kern_log_moments(gn, n, NULL, 0, &gm);
		pre->loss_mean = lm.mean;
		pre->loss_sd = sqrt(lm.var);
		pre->log_gn_mean = gm.mean;
		pre->log_gn_sd = sqrt(gm.var);
		pre->loss_slope = gw_kern_slope(loss, n, NULL, 0);
		double lg[GW_RING_CAP];
		for (size_t i = 0; i < n; i++)
			lg[i] = log(gn[i]);
		pre->corr_loss_log_gn = gw_kern_corr(loss, lg, n, NULL, NULL, 0);
	}
	/* the LR at S and at the record before it */
	struct gw_hist_rec r;
	int got = 0;
	for (size_t i = 0; got < 2 && gw_hist_at(h, i, &r); i++) {
		if (isnan(r.lr))
			continue;
		if (got++ == 0)
			rs->lr_at_ckpt = r.lr;
		else
			rs->lr_before_ckpt = r.lr;
	}
}

/* Judge the last min(npost, W) samples as a window, if there are at least
 * wmin of them; short_w / W gives the sigma scale. */
static void judge(struct gw_restart *rs, size_t W, size_t wmin, double short_w,
                  struct gw_post_window *out)
{
	memset(out, 0, sizeof(*out));
	size_t n = rs->npost < W ? rs->npost : W;
	if (n < wmin || !n)
		return;
	const struct gw_post_sample *p = rs->post + rs->npost - n;
	double ls[GW_POST_CAP], llr[GW_POST_CAP], gs[GW_POST_CAP], glr[GW_POST_CAP];
	out->lr_steady = true;
	for (size_t i = 0; i < n; i++) {
		ls[i] = p[i].loss_sigmas;
		llr[i] = p[i].loss_log_ratio;
		gs[i] = p[i].gn_sigmas;
		glr[i] = p[i].gn_log_ratio;
		out->lr_steady &= p[i].lr_steady;
	}
	out->ready = true;
	out->n = n;
	out->k_first = p[0].k;
	out->k_last = p[n - 1].k;
	out->loss_sigmas = gw_median(ls, n);
	out->loss_log_ratio = gw_median(llr, n);
	out->gn_sigmas = gw_median(gs, n);
	out->gn_log_ratio = gw_median(glr, n);
	out->sigma_scale = sqrt(short_w / (double)W);
}

void gw_regime_update(struct gw_restart *rs, const struct gw_hist_rec *r,
                      const struct gw_thresholds *th)
{
	require_windows(th);
	const struct gw_regime *pre = &rs->pre;
	if (rs->k == 1) {
		rs->has_first = true;
		rs->first = *r;
	}
	/* windows are judged on valid lines only; nothing stale stays ready */
	rs->win[GW_WIN_SHORT].ready = rs->win[GW_WIN_LONG].ready = false;
	if (!pre->ok || !r->valid || (double)rs->k > th->rr_long_max)
		return;
	struct gw_post_sample s = {.k = (int64_t)rs->k};
	s.loss_sigmas = (r->loss - pre->loss_median) / pre->loss_noise;
	s.loss_log_ratio = log(r->loss / pre->loss_median);
	s.gn_log_ratio = log(r->grad_norm) - pre->log_gn_median;
	s.gn_sigmas = s.gn_log_ratio / pre->log_gn_noise;
	s.lr_steady = true;
	if (!isnan(r->lr) && !isnan(rs->lr_at_ckpt) && rs->lr_at_ckpt > 0 && r->lr > 0)
		s.lr_steady = fabs(log(r->lr / rs->lr_at_ckpt)) <= log(th->or_lr_drift);
	size_t cap = (size_t)th->post_window_long;
	if (rs->k >= 2) {
		if (rs->npost == cap) {
			memmove(rs->post, rs->post + 1, (cap - 1) * sizeof(*rs->post));
			rs->npost--;
		}
		rs->post[rs->npost++] = s;
	}
	size_t ws = (size_t)th->post_window;
	judge(rs, ws, (size_t)th->post_window_min, th->post_window, &rs->win[GW_WIN_SHORT]);
	judge(rs, cap, cap, th->post_window, &rs->win[GW_WIN_LONG]);
}

bool gw_regime_level_jump(const struct gw_restart *rs, int w, const struct gw_thresholds *th)
{
	const struct gw_post_window *p = &rs->win[w];
	if (!p->ready || (double)rs->k > th->post_max)
		return false;
	double z = w == GW_WIN_SHORT ? th->rr_z_loss_short : th->rr_z_loss * p->sigma_scale;
	double rel = w == GW_WIN_SHORT ? th->rr_rel_loss_short : th->rr_rel_loss;
	return p->loss_sigmas >= z && p->loss_log_ratio >= log(rel);
}

json_t *gw_regime_evidence(const struct gw_restart *rs, const struct gw_post_window *w,
                           const char *rule)
{
	const struct gw_regime *pre = &rs->pre;
	return json_pack(
		"{s:s, s:I, s:I, s:{s:[I, I], s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o},"
		" s:{s:[I, I], s:I, s:o, s:o, s:o, s:o}}",
		"rule", rule, "restart_step", (json_int_t)rs->ckpt_step,
		"crash_step", (json_int_t)rs->crash_step,
		"pre_window", "steps", (json_int_t)pre->from_step, (json_int_t)pre->to_step,
		"n", (json_int_t)pre->n, "loss_median", gw_json_num(pre->loss_median),
		"loss_noise", gw_json_num(pre->loss_noise),
		"grad_norm_median", gw_json_num(exp(pre->log_gn_median)),
		"log_grad_norm_noise", gw_json_num(pre->log_gn_noise),
		"lr_at_S", gw_json_num(rs->lr_at_ckpt), "loss_mean", gw_json_num(pre->loss_mean),
		"loss_sd", gw_json_num(pre->loss_sd),
		"loss_slope_per_step", gw_json_num(pre->loss_slope),
		"corr_loss_log_grad_norm", gw_json_num(pre->corr_loss_log_gn),
		"post_window", "steps", (json_int_t)(w->k_first + rs->ckpt_step),
		(json_int_t)(w->k_last + rs->ckpt_step),
		"n", (json_int_t)w->n, "loss_median_sigmas", gw_json_num(w->loss_sigmas),
		"loss_log_ratio", gw_json_num(w->loss_log_ratio),
		"grad_norm_median_sigmas", gw_json_num(w->gn_sigmas),
		"grad_norm_log_ratio", gw_json_num(w->gn_log_ratio));
}
