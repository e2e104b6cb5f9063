/*
 * The threshold table, its setters and its range checks (see
 * thresholds.h).  A value is checked on its own when it is set (finite,
 * an integer where it counts, within its range) and a whole set once it is
 * complete (the thresholds that must agree with each other): a config
 * that sets post_window and post_window_min together may pass through an
 * order in which they disagree for a moment.
 */
#include "thresholds.h"

#include "hist.h"
#include "regime.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The bounds in the table name the history's sizes as numbers. */
_Static_assert(GW_RING_CAP == 512, "thresholds.h: window bounds say 512");
_Static_assert(GW_POST_CAP == 32, "thresholds.h: post_window bounds say 32");

const struct gw_threshold_info gw_threshold_table[] = {
#define GW_TH_INFO(n, d, k, l, h, r, rr) {#n, d, k, l, h, r, rr, offsetof(struct gw_thresholds, n)},
	GW_THRESHOLDS(GW_TH_INFO)
#undef GW_TH_INFO
	{NULL, 0, 0, 0, 0, NULL, NULL, 0},
};

static double get(const struct gw_thresholds *t, const struct gw_threshold_info *i)
{
	return *(const double *)((const char *)t + i->offset);
}

const struct gw_threshold_info *gw_threshold_find(const char *name)
{
	for (const struct gw_threshold_info *i = gw_threshold_table; i->name; i++)
		if (strcmp(i->name, name) == 0)
			return i;
	return NULL;
}

const char *gw_threshold_range(const struct gw_threshold_info *i, char *buf, size_t size)
{
	snprintf(buf, size, "%s%c%g, %g]", i->kind == GW_TH_COUNT ? "integer in " : "",
	         i->kind == GW_TH_ABOVE ? '(' : '[', i->lo, i->hi);
	return buf;
}

void gw_thresholds_default(struct gw_thresholds *t)
{
	for (const struct gw_threshold_info *i = gw_threshold_table; i->name; i++)
		*(double *)((char *)t + i->offset) = i->def;
}

static bool in_range(const struct gw_threshold_info *i, double v)
{
	if (!isfinite(v) || v > i->hi)
		return false;
	if (i->kind == GW_TH_COUNT && v != floor(v))
		return false;
	return i->kind == GW_TH_ABOVE ? v > i->lo : v >= i->lo;
}

static int range_error(const struct gw_threshold_info *i, double v, char *err, size_t errlen)
{
	char r[64];
	return gw_errf(err, errlen, -EINVAL, "%s must be %s%s, not %g: %s", i->name,
	               i->kind == GW_TH_COUNT ? "an " : "in ", gw_threshold_range(i, r, sizeof(r)), v,
	               i->range_reason);
}

int gw_thresholds_set(struct gw_thresholds *t, const char *name, double v, char *err,
                      size_t errlen)
{
	const struct gw_threshold_info *i = gw_threshold_find(name);
	if (!i)
		return gw_errf(err, errlen, -ENOENT, "no threshold named \"%s\"", name);
	if (!in_range(i, v))
		return range_error(i, v, err, errlen);
	*(double *)((char *)t + i->offset) = v;
	return 0;
}

int gw_thresholds_check(const struct gw_thresholds *t, char *err, size_t errlen)
{
	for (const struct gw_threshold_info *i = gw_threshold_table; i->name; i++)
		if (!in_range(i, get(t, i)))
			return range_error(i, get(t, i), err, errlen);
	if (t->pre_min > t->pre_window)
		return gw_errf(err, errlen, -EINVAL,
		               "pre_min (%g) must not exceed pre_window (%g): no regime would ever be made",
		               t->pre_min, t->pre_window);
	if (t->post_window_min > t->post_window)
		return gw_errf(err, errlen, -EINVAL,
		               "post_window_min (%g) must not exceed post_window (%g): the short window "
		               "would never be judged", t->post_window_min, t->post_window);
	if (t->post_window > t->post_window_long)
		return gw_errf(err, errlen, -EINVAL,
		               "post_window (%g) must not exceed post_window_long (%g): the long window "
		               "scales sigmas by sqrt(short / long)", t->post_window, t->post_window_long);
	if (t->div_min_steps > t->div_steps)
		return gw_errf(err, errlen, -EINVAL,
		               "div_min_steps (%g) must not exceed div_steps (%g): no divergence verdict "
		               "would ever be given", t->div_min_steps, t->div_steps);
	if (t->mr_post + t->mr_gap + t->mr_pre > GW_RING_CAP)
		return gw_errf(err, errlen, -EINVAL,
		               "mr_post + mr_gap + mr_pre (%g + %g + %g) must be at most %u: the mid-run "
		               "windows must fit in the history", t->mr_post, t->mr_gap, t->mr_pre,
		               GW_RING_CAP);
	if (t->sp_base_window + t->sp_cur_window > GW_RING_CAP)
		return gw_errf(err, errlen, -EINVAL,
		               "sp_base_window + sp_cur_window (%g + %g) must be at most %u: the spike "
		               "windows must fit in the history", t->sp_base_window, t->sp_cur_window,
		               GW_RING_CAP);
	return 0;
}
