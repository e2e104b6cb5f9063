/*
 * The spike statistics (see spike.h): windows of the valid-record ring read
 * in place, medians by selection, the baseline noise by robust.c.
 */
#include "spike.h"
#include "robust.h"

#include <math.h>
#include <string.h>

/* The window sizes, or false when the thresholds make them unusable. */
static bool spike_sizes(const struct gw_thresholds *th, size_t *nc, size_t *nb)
{
	*nc = (size_t)th->sp_cur_window;
	*nb = (size_t)th->sp_base_window;
	return *nc >= 1 && *nc <= 16 && *nb >= 3 && *nb <= GW_RING_CAP;
}

/* Could the baseline's median be <= t: its lower bound, then the count. */
static bool base_maybe_le(const struct gw_hist *h, enum gw_vcol col, size_t nb, size_t nc,
                          double t)
{
	double lo;
	if (gw_hist_valid_bound(h, col, nb, nc, -1, &lo) && gw_mid_surely_above(lo, t))
		return false;
	struct gw_win w = gw_hist_valid(h, col, nb, nc);
	return gw_median_maybe_le(&w, t);
}

/* The largest value of a window: a bound of its median from above. */
static double win_max(const struct gw_win *w)
{
	double m = -INFINITY;
	for (size_t i = 0; i < w->na; i++)
		m = w->a[i] > m ? w->a[i] : m;
	for (size_t i = 0; i < w->nb; i++)
		m = w->b[i] > m ? w->b[i] : m;
	return m;
}

/* Could the short median be log(rel) above the baseline's: first with the
 * short window's largest value for its median, then exactly. */
static bool series_possible(const struct gw_hist *h, enum gw_vcol col, size_t nb, size_t nc,
                            const struct gw_win *cur, double log_rel)
{
	double lo;
	if (gw_hist_valid_bound(h, col, nb, nc, -1, &lo) &&
	    gw_mid_surely_above(lo, win_max(cur) - log_rel))
		return false;
	return base_maybe_le(h, col, nb, nc, gw_win_median(cur) - log_rel);
}

static bool possible(const struct gw_det_ctx *ctx)
{
	const struct gw_thresholds *th = ctx->th;
	size_t nc, nb;
	if (!spike_sizes(th, &nc, &nb))
		return false;
	const struct gw_hist *h = ctx->hist;
	struct gw_win cl = gw_hist_valid(h, GW_V_LOG_LOSS, nc, 0);
	if (gw_win_len(&cl) < nc || h->vcount < nc + nb)
		return false;
	struct gw_win cg = gw_hist_valid(h, GW_V_LOG_GRAD_NORM, nc, 0);
	/* rel = short median - base median >= log(ratio)  <=>  base median <= short - log(ratio) */
	double loss_rel = fmin(th->sp_loss_rel, th->sp_big_loss_rel); /* either loss_spike rule */
	return series_possible(h, GW_V_LOG_LOSS, nb, nc, &cl, log(loss_rel)) ||
	       series_possible(h, GW_V_LOG_GRAD_NORM, nb, nc, &cg, log(th->sp_gn_rel));
}

bool gw_spike_possible(const struct gw_det_ctx *ctx)
{
	/* every line the detectors see changed the timeline: its count names it */
	struct gw_spike_cache *c = ctx->spike;
	if (c->possible_at != ctx->hist->tchanges) {
		c->possible = possible(ctx);
		c->possible_at = ctx->hist->tchanges;
	}
	return c->possible;
}

static void spike_series(const struct gw_win *base, const struct gw_win *cur,
                         const struct gw_thresholds *th, struct gw_spike_series *o)
{
	double a[GW_RING_CAP], d[GW_RING_CAP];
	size_t nb = gw_win_len(base);
	gw_win_copy(base, a);
	o->base_noise = fmax(gw_noise(a, nb, d), th->sigma_floor_log);
	o->base_median = gw_median(a, nb);
	o->cur_median = gw_win_median(cur);
	o->log_ratio = o->cur_median - o->base_median;
	o->z = o->log_ratio / o->base_noise;
}

const struct gw_spike_stat *gw_spike_stat(const struct gw_det_ctx *ctx)
{
	struct gw_spike_cache *c = ctx->spike;
	struct gw_spike_stat *st = &c->st;
	if (c->valid_records == ctx->valid_records)
		return st;
	c->valid_records = ctx->valid_records;
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
