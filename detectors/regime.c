/*
 * The shared regime statistics (see regime.h).  Medians sort small copies
 * (at most 100 values); the moments that go into evidence come from the
 * kernels.
 */
#include "regime.h"

#include "kern.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The k-th smallest of x[0..n) (0-based), partially reordering x; after it
 * returns, every x[i] with i > k is >= the result.  Hoare selection with a
 * median-of-three pivot: O(n) on average, the same value a full sort gives. */
static double select_kth(double *x, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		double a = x[lo], b = x[mid], c = x[hi];
		double pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
		size_t i = lo, j = hi;
		while (i <= j) {
			while (x[i] < pivot)
				i++;
			while (x[j] > pivot)
				j--;
			if (i <= j) {
				double t = x[i];
				x[i] = x[j];
				x[j] = t;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			break;
	}
	return x[k];
}

double gw_median(double *x, size_t n)
{
	if (!n)
		return NAN;
	size_t h = n / 2;
	double upper = select_kth(x, n, h);
	if (n % 2)
		return upper;
	/* the lower middle value is the largest of x[0..h) */
	double lower = x[0];
	for (size_t i = 1; i < h; i++)
		if (x[i] > lower)
			lower = x[i];
	return 0.5 * (lower + upper);
}

/* The slack that makes the pre-filters safe against rounding: the exact
 * rules compare differences and logs, the filters compare values. */
static double slack(double t)
{
	return 1e-9 * fabs(t) + 1e-12;
}

static size_t count_le(const double *x, size_t n, double t)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += x[i] <= t;
	return c;
}

static size_t count_ge(const double *x, size_t n, double t)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += x[i] >= t;
	return c;
}

/* sorted s: odd n, median s[n/2] <= t iff more than n/2 values are <= t;
 * even n, the mean of s[n/2-1] and s[n/2] can only be <= t if s[n/2-1] is,
 * i.e. at least n/2 values are */
static bool enough(size_t c, size_t n)
{
	return n % 2 ? c > n / 2 : c >= n / 2;
}

bool gw_median_maybe_le(const struct gw_win *x, double t)
{
	size_t n = gw_win_len(x);
	if (!n)
		return true;
	double tt = t + slack(t);
	return enough(count_le(x->a, x->na, tt) + count_le(x->b, x->nb, tt), n);
}

bool gw_median_maybe_ge(const struct gw_win *x, double t)
{
	size_t n = gw_win_len(x);
	if (!n)
		return true;
	double tt = t - slack(t);
	return enough(count_ge(x->a, x->na, tt) + count_ge(x->b, x->nb, tt), n);
}

double gw_win_median(const struct gw_win *w)
{
	double tmp[GW_RING_CAP];
	size_t n = gw_win_len(w);
	if (n > GW_RING_CAP)
		n = GW_RING_CAP;
	gw_win_copy(w, tmp);
	return gw_median(tmp, n);
}

double gw_noise(const double *x, size_t n, double *d)
{
	if (n < 3)
		return NAN;
	for (size_t i = 0; i + 1 < n; i++)
		d[i] = x[i + 1] - x[i];
	size_t m = n - 1;
	/* the median of d reorders d; the deviations need every value */
	double tmp[GW_RING_CAP];
	memcpy(tmp, d, m * sizeof(*d));
	double md = gw_median(tmp, m);
	for (size_t i = 0; i < m; i++)
		d[i] = fabs(d[i] - md);
	return 1.4826 * gw_median(d, m) / sqrt(2.0);
}

void gw_regime_stat(const double *loss, const double *gn, size_t n,
                    const struct gw_thresholds *th, struct gw_regime_stat *out)
{
	double a[GW_RING_CAP], g[GW_RING_CAP], d[GW_RING_CAP];
	if (n > GW_RING_CAP)
		n = GW_RING_CAP;
	memcpy(a, loss, n * sizeof(*a));
	for (size_t i = 0; i < n; i++)
		g[i] = log(gn[i]);
	double sl = gw_noise(a, n, d);
	double sg = gw_noise(g, n, d);
	out->mL = gw_median(a, n);
	out->mG = gw_median(g, n);
	out->sL = fmax(sl, th->sigma_floor_rel * fabs(out->mL));
	out->sG = fmax(sg, th->sigma_floor_log);
}

void gw_regime_open(struct gw_restart *rs, int64_t S, int64_t T, const struct gw_hist *h,
                    const struct gw_thresholds *th)
{
	memset(rs, 0, sizeof(*rs));
	rs->active = true;
	rs->S = S;
	rs->T = T;
	rs->lrS = rs->lrS1 = NAN;
	double loss[GW_RING_CAP], gn[GW_RING_CAP];
	int64_t step[GW_RING_CAP];
	size_t want = th->pre_window > 0 && th->pre_window < GW_RING_CAP ? (size_t)th->pre_window
	                                                                  : GW_RING_CAP;
	size_t n = gw_hist_last_valid(h, want, 0, loss, gn, NULL, step);
	rs->pre_n = n;
	if (n) {
		rs->pre_from = step[0];
		rs->pre_to = step[n - 1];
	}
	if (n >= (size_t)th->pre_min && n >= 3) {
		struct gw_regime_stat st;
		gw_regime_stat(loss, gn, n, th, &st);
		rs->mL = st.mL;
		rs->sL = st.sL;
		rs->mG = st.mG;
		rs->sG = st.sG;
		rs->pre_ok = true;
		/* moments of the same window, for the evidence */
		struct gw_kern_moments lm, gm;
		gw_kern_moments(loss, n, NULL, 0, &lm);
		gw_kern_log_moments(gn, n, NULL, 0, &gm);
		rs->loss_mean = lm.mean;
		rs->loss_sd = sqrt(lm.var);
		rs->log_gn_mean = gm.mean;
		rs->log_gn_sd = sqrt(gm.var);
		rs->loss_slope = gw_kern_slope(loss, n, NULL, 0);
		double lg[GW_RING_CAP];
		for (size_t i = 0; i < n; i++)
			lg[i] = log(gn[i]);
		rs->corr = gw_kern_corr(loss, lg, n, NULL, NULL, 0);
	}
	/* the LR at S and at the record before it */
	struct gw_hist_rec r;
	int got = 0;
	for (size_t i = 0; got < 2 && gw_hist_at(h, i, &r); i++) {
		if (isnan(r.lr))
			continue;
		if (got++ == 0)
			rs->lrS = r.lr;
		else
			rs->lrS1 = r.lr;
	}
}

static void judge(struct gw_restart *rs, size_t W, size_t wmin, double short_w,
                  struct gw_post_stat *out)
{
	memset(out, 0, sizeof(*out));
	size_t n = rs->npost < W ? rs->npost : W;
	if (n < wmin || !n)
		return;
	const struct gw_post_sample *p = rs->post + rs->npost - n;
	double u[GW_POST_CAP], ul[GW_POST_CAP], v[GW_POST_CAP], vl[GW_POST_CAP];
	out->all_lr_ok = true;
	for (size_t i = 0; i < n; i++) {
		u[i] = p[i].u;
		ul[i] = p[i].ul;
		v[i] = p[i].v;
		vl[i] = p[i].vl;
		out->all_lr_ok &= p[i].lr_ok;
	}
	out->ready = true;
	out->n = n;
	out->k0 = p[0].k;
	out->k1 = p[n - 1].k;
	out->mu = gw_median(u, n);
	out->mul = gw_median(ul, n);
	out->mv = gw_median(v, n);
	out->mvl = gw_median(vl, n);
	out->scale = sqrt(short_w / (double)W);
}

void gw_regime_update(struct gw_restart *rs, const struct gw_hist_rec *r,
                      const struct gw_thresholds *th)
{
	if (rs->k == 1) {
		rs->has_first = true;
		rs->first = *r;
	}
	/* windows are judged on valid lines only; nothing stale stays ready */
	rs->win[0].ready = rs->win[1].ready = false;
	if (!rs->pre_ok || !r->valid || (double)rs->k > th->rr_long_max)
		return;
	struct gw_post_sample s = {.k = (int64_t)rs->k};
	s.u = (r->loss - rs->mL) / rs->sL;
	s.ul = log(r->loss / rs->mL);
	s.vl = log(r->grad_norm) - rs->mG;
	s.v = s.vl / rs->sG;
	s.lr_ok = true;
	if (!isnan(r->lr) && !isnan(rs->lrS) && rs->lrS > 0 && r->lr > 0)
		s.lr_ok = fabs(log(r->lr / rs->lrS)) <= log(th->or_lr_drift);
	size_t cap = th->post_window_long > 0 && th->post_window_long < GW_POST_CAP
	             ? (size_t)th->post_window_long : GW_POST_CAP;
	if (rs->k >= 2) {
		if (rs->npost == cap) {
			memmove(rs->post, rs->post + 1, (cap - 1) * sizeof(*rs->post));
			rs->npost--;
		}
		rs->post[rs->npost++] = s;
	}
	size_t ws = (size_t)th->post_window;
	judge(rs, ws, (size_t)th->post_window_min, th->post_window, &rs->win[0]);
	judge(rs, cap, cap, th->post_window, &rs->win[1]);
}


static bool spike_sizes(const struct gw_thresholds *th, size_t *nc, size_t *nb)
{
	*nc = (size_t)th->sp_cur_window;
	*nb = (size_t)th->sp_base_window;
	return *nc >= 1 && *nc <= 16 && *nb >= 3 && *nb <= GW_RING_CAP;
}

bool gw_spike_possible(const struct gw_det_ctx *ctx)
{
	const struct gw_thresholds *th = ctx->th;
	size_t nc, nb;
	if (!spike_sizes(th, &nc, &nb))
		return false;
	struct gw_win cl = gw_hist_valid(ctx->hist, GW_V_LOG_LOSS, nc, 0);
	struct gw_win bl = gw_hist_valid(ctx->hist, GW_V_LOG_LOSS, nb, nc);
	if (gw_win_len(&cl) < nc || gw_win_len(&bl) < nb)
		return false;
	struct gw_win cg = gw_hist_valid(ctx->hist, GW_V_LOG_GRAD_NORM, nc, 0);
	struct gw_win bg = gw_hist_valid(ctx->hist, GW_V_LOG_GRAD_NORM, nb, nc);
	/* rel = short median - base median >= log(ratio)  <=>  base median <= short - log(ratio) */
	return gw_median_maybe_le(&bl, gw_win_median(&cl) - log(th->sp_loss_rel)) ||
	       gw_median_maybe_le(&bg, gw_win_median(&cg) - log(th->sp_gn_rel));
}

static void spike_series(const struct gw_win *base, const struct gw_win *cur,
                         const struct gw_thresholds *th, struct gw_spike_series *o)
{
	double a[GW_RING_CAP], d[GW_RING_CAP];
	size_t nb = gw_win_len(base);
	gw_win_copy(base, a);
	o->s = fmax(gw_noise(a, nb, d), th->sigma_floor_log);
	o->med = gw_median(a, nb);
	o->mc = gw_win_median(cur);
	o->rel = o->mc - o->med;
	o->z = o->rel / o->s;
}

const struct gw_spike_stat *gw_spike_stat(const struct gw_det_ctx *ctx)
{
	struct gw_run_shared *sh = ctx->shared;
	struct gw_spike_stat *st = &sh->spike;
	if (sh->spike_for == sh->valid_records)
		return st;
	sh->spike_for = sh->valid_records;
	memset(st, 0, sizeof(*st));
	size_t nc, nb;
	if (!spike_sizes(ctx->th, &nc, &nb))
		return st;
	const struct gw_hist *h = ctx->hist;
	struct gw_win cl = gw_hist_valid(h, GW_V_LOG_LOSS, nc, 0);
	struct gw_win bl = gw_hist_valid(h, GW_V_LOG_LOSS, nb, nc);
	struct gw_win cg = gw_hist_valid(h, GW_V_LOG_GRAD_NORM, nc, 0);
	struct gw_win bg = gw_hist_valid(h, GW_V_LOG_GRAD_NORM, nb, nc);
	st->cur_n = gw_win_len(&cl);
	st->base_n = gw_win_len(&bl);
	if (st->cur_n < nc || st->base_n < nb)
		return st;
	st->cur_from = gw_hist_valid_step(h, nc, 0, 0);
	st->cur_to = gw_hist_valid_step(h, nc, 0, nc - 1);
	st->base_from = gw_hist_valid_step(h, nb, nc, 0);
	st->base_to = gw_hist_valid_step(h, nb, nc, nb - 1);
	spike_series(&bl, &cl, ctx->th, &st->loss);
	spike_series(&bg, &cg, ctx->th, &st->gn);
	st->ok = true;
	return st;
}

bool gw_regime_level_rule(const struct gw_restart *rs, int w, const struct gw_thresholds *th)
{
	const struct gw_post_stat *p = &rs->win[w];
	if (!p->ready || (double)rs->k > th->post_max)
		return false;
	double z = w == 0 ? th->rr_z_loss_short : th->rr_z_loss * p->scale;
	double rel = w == 0 ? th->rr_rel_loss_short : th->rr_rel_loss;
	return p->mu >= z && p->mul >= log(rel);
}

json_t *gw_regime_evidence(const struct gw_restart *rs, const struct gw_post_stat *w,
                           const char *rule)
{
	return json_pack(
		"{s:s, s:I, s:I, s:{s:[I, I], s:I, s:f, s:f, s:f, s:f, s:o, s:o, s:o, s:o, s:o},"
		" s:{s:[I, I], s:I, s:f, s:f, s:f, s:f}}",
		"rule", rule, "restart_step", (json_int_t)rs->S, "crash_step", (json_int_t)rs->T,
		"pre_window", "steps", (json_int_t)rs->pre_from, (json_int_t)rs->pre_to,
		"n", (json_int_t)rs->pre_n, "loss_median", rs->mL, "loss_noise", rs->sL,
		"grad_norm_median", exp(rs->mG), "log_grad_norm_noise", rs->sG,
		"lr_at_S", gw_det_num(rs->lrS), "loss_mean", gw_det_num(rs->loss_mean),
		"loss_sd", gw_det_num(rs->loss_sd), "loss_slope_per_step", gw_det_num(rs->loss_slope),
		"corr_loss_log_grad_norm", gw_det_num(rs->corr),
		"post_window", "steps", (json_int_t)(w->k0 + rs->S), (json_int_t)(w->k1 + rs->S),
		"n", (json_int_t)w->n, "loss_median_sigmas", w->mu, "loss_log_ratio", w->mul,
		"grad_norm_median_sigmas", w->mv, "grad_norm_log_ratio", w->mvl);
}
