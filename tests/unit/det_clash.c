/*
 * A detector of the tests whose threshold takes a name already taken
 * (loss_scale's ls_gap): test_detector_clash.c checks that the list of
 * thresholds refuses to be built with it rather than let one name set two
 * values.  The daemon never runs it.
 */
#include "detector.h"

struct clash_th {
	double ls_gap;
};

static const struct gw_threshold_info clash_thresholds[] = {
	GW_TH_OWN(struct clash_th, ls_gap, 3, GW_TH_COUNT, 1, 10, "a name loss_scale has",
	          "steps: 1 to 10"),
	GW_TH_OWN_END,
};

const struct gw_detector gw_det_clash = {
	.name = "example_clash",
	GW_DET_THRESHOLDS(clash_thresholds, struct clash_th),
};
