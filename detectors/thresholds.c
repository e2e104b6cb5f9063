/*
 * The thresholds, their setters and their range checks (see thresholds.h).
 * A value is checked on its own when it is set (finite, an integer where
 * it counts, within its range) and a whole set once it is complete (the
 * thresholds that must agree with each other): a config that sets
 * post_window and post_window_min together may pass through an order in
 * which they disagree for a moment.
 *
 * The list of every threshold is built once, on first use, into static
 * storage: the shared table, then each registered detector's own table with
 * its offsets moved to where its struct sits in gw_thresholds.own.  So
 * every reader (find, set, check, default, the configuration, `gradwatch
 * thresholds`) walks one list and never asks whose a threshold is.
 */
#include "thresholds.h"

#include "hist.h"
#include "regime.h"
#include "registry.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The bounds in the table name the history's sizes as numbers. */
_Static_assert(GW_RING_CAP == 512, "thresholds.h: window bounds say 512");
_Static_assert(GW_POST_CAP == 32, "thresholds.h: post_window bounds say 32");

static const struct gw_threshold_info shared[] = {
#define GW_TH_INFO(n, d, k, l, h, r, rr) {#n, d, k, l, h, r, rr, offsetof(struct gw_thresholds, n)},
	GW_THRESHOLDS(GW_TH_INFO)
#undef GW_TH_INFO
};

#define N_SHARED GW_ARRAY_SIZE(shared)

static struct gw_threshold_info list[N_SHARED + GW_TH_OWN_MAX + 1];
static size_t own_at[GW_DET_MAX];   /* where detector d's struct starts in own[] */
static pthread_once_t list_once = PTHREAD_ONCE_INIT;

static bool taken(size_t n, const char *name)
{
	for (size_t k = 0; k < n; k++)
		if (strcmp(list[k].name, name) == 0)
			return true;
	return false;
}

/* A detector's table after the n entries of the list so far, its struct at
 * own[used]; returns how many entries it has.  Aborts on a name taken
 * twice, more than GW_TH_OWN_MAX in all, or a table that does not describe
 * its struct exactly, one double per entry (thresholds.h, GW_TH_OWN). */
static size_t add_own(const struct gw_detector *det, size_t n, size_t used)
{
	bool seen[GW_TH_OWN_MAX] = {false};
	size_t m = 0;
	for (const struct gw_threshold_info *i = det->thresholds; i->name; i++, m++) {
		size_t slot = i->offset / sizeof(double);
		if (taken(n + m, i->name)) {
			char what[160];
			snprintf(what, sizeof(what), "threshold \"%s\" of detector %s has a name of its own",
			         i->name, det->name);
			gw__require_failed(what, __FILE__, __LINE__);
		}
		GW_REQUIRE(used + m < GW_TH_OWN_MAX);
		GW_REQUIRE(i->offset % sizeof(double) == 0 && i->offset < det->thresholds_size &&
		           slot < GW_TH_OWN_MAX && !seen[slot]);
		seen[slot] = true;
		list[n + m] = *i;
		list[n + m].offset = offsetof(struct gw_thresholds, own) + used * sizeof(double) + i->offset;
	}
	GW_REQUIRE(det->thresholds_size == m * sizeof(double));
	return m;
}

static void list_build(void)
{
	memcpy(list, shared, sizeof(shared));
	size_t n = N_SHARED, used = 0;
	for (size_t d = 0; gw_det_registry[d]; d++) {
		const struct gw_detector *det = gw_det_registry[d];
		GW_REQUIRE(d < GW_DET_MAX);
		own_at[d] = used;
		if (!det->thresholds) {
			GW_REQUIRE(det->thresholds_size == 0 && !det->check_thresholds);
			continue;
		}
		size_t m = add_own(det, n, used);
		n += m;
		used += m;
	}
	list[n] = (struct gw_threshold_info){.name = NULL};
}

const struct gw_threshold_info *gw_threshold_list(void)
{
	pthread_once(&list_once, list_build);
	return list;
}

const void *gw_det_own_th(const struct gw_det_ctx *ctx)
{
	pthread_once(&list_once, list_build);
	if (!gw_det_registry[ctx->det_index]->thresholds)
		return NULL;
	return ctx->th->own + own_at[ctx->det_index];
}

static double get(const struct gw_thresholds *t, const struct gw_threshold_info *i)
{
	return *(const double *)((const char *)t + i->offset);
}

const struct gw_threshold_info *gw_threshold_find(const char *name)
{
	for (const struct gw_threshold_info *i = gw_threshold_list(); i->name; i++)
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
	memset(t, 0, sizeof(*t));
	for (const struct gw_threshold_info *i = gw_threshold_list(); i->name; i++)
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
	for (const struct gw_threshold_info *i = gw_threshold_list(); i->name; i++)
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
	pthread_once(&list_once, list_build);
	for (size_t d = 0; gw_det_registry[d]; d++) {
		const struct gw_detector *det = gw_det_registry[d];
		int rc = det->check_thresholds ? det->check_thresholds(t->own + own_at[d], err, errlen) : 0;
		if (rc < 0)
			return rc;
	}
	return 0;
}
