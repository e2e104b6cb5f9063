/*
 * The spike statistics (see spike.h): windows of the valid-record ring read
 * in place; the prefilter on bounds (hist.h) and counts; the baselines'
 * medians and noise from sorted windows (robust.h) that slide with the
 * history while the statistics are asked for line after line, and are
 * sorted anew otherwise.  Either way the values are the ones selection
 * gives (gw_median, gw_noise): same values, same order statistics.
 */
#include "spike.h"
#include "hist.h"
#include "robust.h"

#include "arena.h"
#include "log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The baselines of log loss [0] and log grad norm [1], sorted, and their
 * first differences, sorted: each array nb values (diff nb - 1).  Valid
 * for the history as it was at (vchanges, valid_records). */
struct gw_spike_sorted {
	uint64_t vchanges, valid_records;
	size_t nb, nc, cap;
	bool ok;
	double *base[2], *diff[2];   /* into one allocation of 4 * cap values */
};

void gw_spike_free(struct gw_spike_cache *c)
{
	if (!c->arena && c->sorted) {
		free(c->sorted->base[0]);
		free(c->sorted);
	}
	c->sorted = NULL;
}

size_t gw_spike_sorted_bytes(const struct gw_thresholds *th)
{
	return sizeof(struct gw_spike_sorted) + 4 * (size_t)th->sp_base_window * sizeof(double);
}

static void *spike_alloc(struct gw_spike_cache *c, size_t size)
{
	void *p = c->arena ? gw_arena_alloc(c->arena, size) : calloc(1, size);
	if (!p)
		gw_log_err("no memory for the spike baselines (selected instead)");
	return p;
}

/* The window sizes, or false when the thresholds make them unusable. */
static bool spike_sizes(const struct gw_thresholds *th, size_t *nc, size_t *nb)
{
	*nc = (size_t)th->sp_cur_window;
	*nb = (size_t)th->sp_base_window;
	return *nc >= 1 && *nc <= 16 && *nb >= 3 && *nb <= GW_RING_CAP;
}

/* The largest value of a window: a bound of its median from above. */
static double win_max(const struct gw_win *w)
{
	double m = -INFINITY;
	for (size_t i = 0; i < gw_win_len(w); i++) {
		double v = gw_win_at(w, i);
		m = v > m ? v : m;
	}
	return m;
}

/* Could the short median be log(rel) above the baseline's: the
 * baseline's lower bound against the short window's largest value, then
 * against its median, then the count over the baseline. */
static bool series_possible(const struct gw_hist *h, enum gw_vcol col, size_t nb, size_t nc,
                            const struct gw_win *cur, double log_rel)
{
	double lo;
	bool bound = gw_hist_valid_bound(h, col, nb, nc, -1, &lo);
	if (bound && gw_mid_surely_above(lo, win_max(cur) - log_rel))
		return false;
	double t = gw_win_median(cur) - log_rel;
	if (bound && gw_mid_surely_above(lo, t))
		return false;
	struct gw_win w = gw_hist_valid(h, col, nb, nc);
	return gw_median_maybe_le(&w, t);
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
	/* their logs, kept while the thresholds stay (two logs were 4% of
	 * the engine's instructions a record) */
	struct gw_spike_cache *c = ctx->spike;
	if (!c->has_logs || c->rel_of[0] != loss_rel || c->rel_of[1] != th->sp_gn_rel) {
		c->rel_of[0] = loss_rel;
		c->rel_of[1] = th->sp_gn_rel;
		c->log_rel[0] = log(loss_rel);
		c->log_rel[1] = log(th->sp_gn_rel);
		c->has_logs = true;
	}
	return series_possible(h, GW_V_LOG_LOSS, nb, nc, &cl, c->log_rel[0]) ||
	       series_possible(h, GW_V_LOG_GRAD_NORM, nb, nc, &cg, c->log_rel[1]);
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

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Sort series k's baseline w and its differences into so. */
static void sort_base(struct gw_spike_sorted *so, int k, const struct gw_win *w)
{
	size_t nb = gw_win_len(w);
	gw_win_copy(w, so->base[k]);
	for (size_t i = 0; i + 1 < nb; i++)
		so->diff[k][i] = gw_win_at(w, i + 1) - gw_win_at(w, i);
	qsort(so->base[k], nb, sizeof(double), cmp_double);
	qsort(so->diff[k], nb - 1, sizeof(double), cmp_double);
}

/* Slide series k's sorted baseline one record on: the history appended
 * one valid record since, so the baseline gained the record before the
 * short window (its newest now) and lost the one before its oldest. */
static void slide_base(struct gw_spike_sorted *so, int k, const struct gw_hist *h,
                       enum gw_vcol col)
{
	size_t nb = so->nb, nc = so->nc;
	struct gw_win w = gw_hist_valid(h, col, nb + 1, nc);  /* the one that left, then the baseline */
	double gone = gw_win_at(&w, 0), first = gw_win_at(&w, 1);
	double last = gw_win_at(&w, nb), before = gw_win_at(&w, nb - 1);
	gw_sorted_replace(so->base[k], nb, gone, last);
	gw_sorted_replace(so->diff[k], nb - 1, first - gone, last - before);
}

/* The sorted baselines for this line: slid one record on when the
 * history only appended one valid record since the last line asked, else
 * sorted anew.  NULL when out of memory (the caller selects instead). */
static const struct gw_spike_sorted *sorted_base(struct gw_spike_cache *c, const struct gw_hist *h,
                                                 uint64_t valid_records, size_t nb, size_t nc,
                                                 const struct gw_win *bl, const struct gw_win *bg)
{
	struct gw_spike_sorted *so = c->sorted;
	if (!so && !(so = c->sorted = spike_alloc(c, sizeof(*so))))
		return NULL;
	if (so->cap < nb) {
		/* a larger sp_base_window (a reconfiguration): the arena keeps the old */
		double *p = spike_alloc(c, 4 * nb * sizeof(double));
		if (!p)
			return NULL;
		if (!c->arena)
			free(so->base[0]);
		so->base[0] = p;
		so->base[1] = p + nb;
		so->diff[0] = p + 2 * nb;
		so->diff[1] = p + 3 * nb;
		so->cap = nb;
		so->ok = false;
	}
	bool next = so->ok && so->nb == nb && so->nc == nc && h->vchanges == so->vchanges + 1 &&
	            valid_records == so->valid_records + 1 && h->vcount > nb + nc;
	so->nb = nb;
	so->nc = nc;
	if (next) {
		slide_base(so, 0, h, GW_V_LOG_LOSS);
		slide_base(so, 1, h, GW_V_LOG_GRAD_NORM);
	} else {
		sort_base(so, 0, bl);
		sort_base(so, 1, bg);
	}
	so->ok = true;
	so->vchanges = h->vchanges;
	so->valid_records = valid_records;
	return so;
}

static void spike_series(const struct gw_spike_sorted *so, int k, const struct gw_win *base,
                         const struct gw_win *cur, const struct gw_thresholds *th,
                         struct gw_spike_series *o)
{
	size_t nb = gw_win_len(base);
	if (so) {
		o->base_noise = fmax(gw_sorted_noise(so->diff[k], nb - 1), th->sigma_floor_log);
		o->base_median = gw_sorted_median(so->base[k], nb);
	} else {
		double a[GW_RING_CAP], d[GW_RING_CAP];
		gw_win_copy(base, a);
		o->base_noise = fmax(gw_noise(a, nb, d), th->sigma_floor_log);
		o->base_median = gw_median(a, nb);
	}
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
	const struct gw_spike_sorted *so = sorted_base(c, h, ctx->valid_records, nb, nc, &bl, &bg);
	spike_series(so, 0, &bl, &cl, ctx->th, &st->loss);
	spike_series(so, 1, &bg, &cg, ctx->th, &st->gn);
	st->ok = true;
	return st;
}
