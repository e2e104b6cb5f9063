/*
 * example_negative_loss: a detector of the tests only, written by the
 * steps of docs/detectors.md ("Adding a detector") to show they are all a
 * new detector needs: this file (its thresholds in its own table), a row
 * in the registry (with_test_detector.py adds it to the real registry.c
 * for the test), a line in the build file (tests/unit/meson.build) and its
 * test (test_detector.c).  The daemon never runs it.
 *
 * Rule: a loss below neg_below (0).  A cross-entropy or a negative
 * log-likelihood cannot be negative; one that is comes from a sign error
 * or a wrong reduction, not from training.  The first such loss opens a
 * warning incident, critical once a loss is below neg_critical_below;
 * neg_quiet_steps losses in a row at or above neg_below resolve it; a
 * later low loss is a new incident.
 */
#include "detector.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>

/* Its thresholds, in its own file: the configuration sets them ("thresholds"
 * globally or per run glob), `gradwatch thresholds` lists them and their
 * ranges are checked as every other threshold's (thresholds.h). */
struct neg_th {
	double neg_below, neg_critical_below, neg_quiet_steps;
};

static const struct gw_threshold_info neg_thresholds[] = {
	GW_TH_OWN(struct neg_th, neg_below, 0, GW_TH_REAL, -1e300, 0,
	          "a loss below this opens an incident: a cross-entropy or a negative log-likelihood "
	          "is never below 0",
	          "a loss: at most 0 (above, a healthy loss near zero would fire)"),
	GW_TH_OWN(struct neg_th, neg_critical_below, -1, GW_TH_REAL, -1e300, 0,
	          "... critical below this: a loss of -1 is no rounding of a loss near 0",
	          "a loss: at most 0 (and at most neg_below, or a loss is critical before it is low)"),
	GW_TH_OWN(struct neg_th, neg_quiet_steps, 10, GW_TH_COUNT, 1, 1e6,
	          "losses in a row back at or above neg_below that end an incident: one step back "
	          "is no recovery (a loss near zero may cross it again), a handful of logging "
	          "intervals lets the alert end while someone looks at it",
	          "lines: at least 1 (one line back ends it), at most 1e6"),
	GW_TH_OWN_END,
};

static int neg_check(const void *own, char *err, size_t errlen)
{
	const struct neg_th *th = own;
	if (th->neg_critical_below > th->neg_below)
		return gw_errf(err, errlen, -EINVAL,
		               "neg_critical_below (%g) must not exceed neg_below (%g): a loss would be "
		               "critical before it opens an incident", th->neg_critical_below,
		               th->neg_below);
	return 0;
}

struct neg_state {
	uint32_t incident;        /* key of the current incident, 0 = none yet */
	bool open, critical;      /* an incident is open; it is critical */
	uint32_t quiet;           /* losses at or above neg_below since the last below */
};

static void neg_record(void *st, const struct gw_det_ctx *ctx)
{
	struct neg_state *s = st;
	const struct neg_th *th = gw_det_own_th(ctx);
	const struct gw_rec *r = ctx->rec;
	if (!gw_rec_has(r, GW_ROLE_LOSS) || isnan(r->v[GW_ROLE_LOSS]))
		return;
	double loss = r->v[GW_ROLE_LOSS];
	if (loss >= th->neg_below) {
		if (s->open && ++s->quiet >= th->neg_quiet_steps) {
			gw_det_resolve(ctx, s->incident);
			s->open = false;
		}
		return;
	}
	s->quiet = 0;
	bool critical = loss < th->neg_critical_below;
	if (s->open && (!critical || s->critical))
		return;
	struct gw_verdict v = {.incident = s->open ? s->incident : s->incident + 1,
	                       .severity = critical ? GW_SEV_CRITICAL : GW_SEV_WARNING};
	char step[32], num[24];
	gw_fmt_int(step, sizeof(step), r->step);
	snprintf(v.summary, sizeof(v.summary), "the loss is %s at step %s, below %g",
	         gw_det_fmt_num(num, sizeof(num), loss), step,
	         critical ? th->neg_critical_below : th->neg_below);
	snprintf(v.cause, sizeof(v.cause), "a sign error or a wrong reduction in the loss");
	snprintf(v.action, sizeof(v.action), "the loss function and what it is reduced over");
	v.evidence = json_pack("{s:I, s:o}", "step", (json_int_t)r->step, "loss", gw_json_num(loss));
	if (gw_det_raise(ctx, &v)) {
		s->incident = v.incident;
		s->open = true;
		s->critical = critical;
	}
}

const struct gw_detector gw_det_example = {
	.name = "example_negative_loss",
	.state_size = sizeof(struct neg_state),
	GW_DET_THRESHOLDS(neg_thresholds, struct neg_th),
	.check_thresholds = neg_check,
	.on_record = neg_record,
};
