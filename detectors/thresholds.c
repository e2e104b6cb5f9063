/*
 * The threshold table and its setters (see thresholds.h).
 */
#include "thresholds.h"

#include <errno.h>
#include <math.h>
#include <string.h>

const struct gw_threshold_info gw_threshold_table[] = {
#define GW_TH_INFO(n, d, r) {#n, d, r, offsetof(struct gw_thresholds, n)},
	GW_THRESHOLDS(GW_TH_INFO)
#undef GW_TH_INFO
	{NULL, 0, NULL, 0},
};

void gw_thresholds_default(struct gw_thresholds *t)
{
	for (const struct gw_threshold_info *i = gw_threshold_table; i->name; i++)
		*(double *)((char *)t + i->offset) = i->def;
}

int gw_thresholds_set(struct gw_thresholds *t, const char *name, double v)
{
	if (!isfinite(v))
		return -EINVAL;
	for (const struct gw_threshold_info *i = gw_threshold_table; i->name; i++) {
		if (strcmp(i->name, name) == 0) {
			*(double *)((char *)t + i->offset) = v;
			return 0;
		}
	}
	return -ENOENT;
}
