/*
 * The restart regime and the post-resume windows (see regime.h).  The
 * regime's medians and noise come from robust.c (small copies, at most
 * pre_window values, once a restart); the moments that only go into
 * evidence come from the kernels.  The windows' medians, asked for on
 * every line after a restart, come from their fields kept sorted as
 * samples come and go: one sample in, at most one out of each window, so
 * a binary search and a short memmove per field instead of eight
 * selections a line.
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

/* Judge the last min(npost, W) samples as a window by selection (the way
 * when a sample cannot be sorted); the same values judge() reads. */
static void judge_selected(struct gw_restart *rs, size_t W, size_t wmin, double short_w,
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

/* A sample's four fields, in the order of rs->sorted[w][f]. */
static void fields(const struct gw_post_sample *p, double f[4])
{
	f[0] = p->loss_sigmas;
	f[1] = p->loss_log_ratio;
	f[2] = p->gn_sigmas;
	f[3] = p->gn_log_ratio;
}

static void window_add(struct gw_restart *rs, int w, const struct gw_post_sample *p)
{
	double f[4];
	fields(p, f);
	for (int k = 0; k < 4; k++) {
		size_t n = rs->nsorted[w];
		gw_sorted_add(rs->sorted[w][k], &n, f[k]);
	}
	rs->nsorted[w]++;
	rs->unsteady[w] += !p->lr_steady;
}

/* Sample gone leaves window w and p joins it, each field in one shift
 * (gw_sorted_replace: the arrays a delete and an add give, bit for bit). */
static void window_slide(struct gw_restart *rs, int w, const struct gw_post_sample *gone,
                         const struct gw_post_sample *p)
{
	double g[4], f[4];
	fields(gone, g);
	fields(p, f);
	for (int k = 0; k < 4; k++)
		gw_sorted_replace(rs->sorted[w][k], rs->nsorted[w], g[k], f[k]);
	rs->unsteady[w] -= !gone->lr_steady;
	rs->unsteady[w] += !p->lr_steady;
}

/* Sort both windows anew from the samples (the last ws, the last cap). */
static void windows_build(struct gw_restart *rs, size_t ws, size_t cap)
{
	rs->nsorted[GW_WIN_SHORT] = rs->nsorted[GW_WIN_LONG] = 0;
	rs->unsteady[GW_WIN_SHORT] = rs->unsteady[GW_WIN_LONG] = 0;
	for (size_t i = 0; i < rs->npost; i++) {
		if (rs->npost - i <= ws)
			window_add(rs, GW_WIN_SHORT, &rs->post[i]);
		if (rs->npost - i <= cap)
			window_add(rs, GW_WIN_LONG, &rs->post[i]);
	}
	rs->built_ws = ws;
	rs->built_cap = cap;
}

/* Judge window w, the last min(npost, W) samples, if there are at least
 * wmin of them, from its sorted fields; short_w / W gives the sigma
 * scale. */
static void judge(struct gw_restart *rs, int w, size_t W, size_t wmin, double short_w,
                  struct gw_post_window *out)
{
	memset(out, 0, sizeof(*out));
	size_t n = rs->npost < W ? rs->npost : W;
	if (n < wmin || !n)
		return;
	const struct gw_post_sample *p = rs->post + rs->npost - n;
	out->ready = true;
	out->n = n;
	out->k_first = p[0].k;
	out->k_last = p[n - 1].k;
	out->lr_steady = rs->unsteady[w] == 0;
	out->loss_sigmas = gw_sorted_median(rs->sorted[w][0], n);
	out->loss_log_ratio = gw_sorted_median(rs->sorted[w][1], n);
	out->gn_sigmas = gw_sorted_median(rs->sorted[w][2], n);
	out->gn_log_ratio = gw_sorted_median(rs->sorted[w][3], n);
	out->sigma_scale = sqrt(short_w / (double)W);
}

/* A sample's fields are numbers (a NaN would have no place in a sorted
 * window; none arises from a valid line, but a sample is checked). */
static bool sortable(const struct gw_post_sample *p)
{
	return !isnan(p->loss_sigmas) && !isnan(p->loss_log_ratio) && !isnan(p->gn_sigmas) &&
	       !isnan(p->gn_log_ratio);
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
	size_t cap = (size_t)th->post_window_long, ws = (size_t)th->post_window;
	/* the sorted windows follow the samples when they were built for
	 * these window sizes; else (the first sample, a reconfiguration, a
	 * sample that cannot be sorted) they are built anew below */
	bool follow = rs->built_ws == ws && rs->built_cap == cap && sortable(&s);
	if (rs->k >= 2) {
		/* the sample leaving each window, if one does: it slides */
		struct gw_post_sample gone[2];
		bool slides[2] = {false, false};
		/* the oldest samples leave (more than one only after cap shrank:
		 * no window reads them, and follow is false) */
		while (rs->npost >= cap) {
			if (follow) {
				gone[GW_WIN_LONG] = rs->post[0];
				slides[GW_WIN_LONG] = true;
				if (rs->npost <= ws) {
					gone[GW_WIN_SHORT] = rs->post[0];
					slides[GW_WIN_SHORT] = true;
				}
			}
			memmove(rs->post, rs->post + 1, (rs->npost - 1) * sizeof(*rs->post));
			rs->npost--;
		}
		if (follow && rs->npost >= ws) {
			gone[GW_WIN_SHORT] = rs->post[rs->npost - ws];
			slides[GW_WIN_SHORT] = true;
		}
		rs->post[rs->npost++] = s;
		for (int w = 0; follow && w < 2; w++) {
			if (slides[w])
				window_slide(rs, w, &gone[w], &s);
			else
				window_add(rs, w, &s);
		}
	}
	if (!follow) {
		bool ok = true;
		for (size_t i = 0; i < rs->npost && ok; i++)
			ok = sortable(&rs->post[i]);
		if (ok) {
			windows_build(rs, ws, cap);
		} else {
			rs->built_ws = rs->built_cap = 0;
			judge_selected(rs, ws, (size_t)th->post_window_min, th->post_window,
			               &rs->win[GW_WIN_SHORT]);
			judge_selected(rs, cap, cap, th->post_window, &rs->win[GW_WIN_LONG]);
			return;
		}
	}
	judge(rs, GW_WIN_SHORT, ws, (size_t)th->post_window_min, th->post_window,
	      &rs->win[GW_WIN_SHORT]);
	judge(rs, GW_WIN_LONG, cap, cap, th->post_window, &rs->win[GW_WIN_LONG]);
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
