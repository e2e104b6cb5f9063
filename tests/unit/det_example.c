/*
 * example_negative_loss: a detector of the tests only, written by the
 * steps of docs/detectors.md ("Adding a detector") to show they are all a
 * new detector needs: this file, a row in the registry
 * (with_test_detector.py adds it to the real registry.c for the test), a
 * line in the build file (tests/unit/meson.build) and its test
 * (test_detector.c).  The daemon never runs it.
 *
 * Rule: a loss below zero.  A cross-entropy or a negative log-likelihood
 * cannot be negative; one that is comes from a sign error or a wrong
 * reduction, not from training.  The first negative loss opens a warning
 * incident; NEG_QUIET_STEPS non-negative losses in a row resolve it; a
 * later negative loss is a new incident.
 */
#include "detector.h"
#include "util.h"

#include <math.h>
#include <stdio.h>

/* Its one threshold, in its own file: how many non-negative losses in a
 * row end an incident.  10: one step back above zero is no recovery (a
 * loss near zero may cross it again), and a handful of logging intervals
 * is short enough for the alert to end while someone looks at it. */
#define NEG_QUIET_STEPS 10

struct neg_state {
	uint32_t incident;        /* key of the current incident, 0 = none yet */
	bool open;
	uint32_t quiet;           /* non-negative losses since the last negative one */
};

static void neg_record(void *st, const struct gw_det_ctx *ctx)
{
	struct neg_state *s = st;
	const struct gw_rec *r = ctx->rec;
	if (!gw_rec_has(r, GW_ROLE_LOSS) || isnan(r->v[GW_ROLE_LOSS]))
		return;
	double loss = r->v[GW_ROLE_LOSS];
	if (loss >= 0.0) {
		if (s->open && ++s->quiet >= NEG_QUIET_STEPS) {
			gw_det_resolve(ctx, s->incident);
			s->open = false;
		}
		return;
	}
	s->quiet = 0;
	if (s->open)
		return;
	struct gw_verdict v = {.incident = s->incident + 1, .severity = GW_SEV_WARNING};
	char step[32], num[24];
	gw_fmt_int(step, sizeof(step), r->step);
	snprintf(v.summary, sizeof(v.summary), "the loss is %s at step %s, below zero",
	         gw_det_fmt_num(num, sizeof(num), loss), step);
	snprintf(v.cause, sizeof(v.cause), "a sign error or a wrong reduction in the loss");
	snprintf(v.action, sizeof(v.action), "the loss function and what it is reduced over");
	v.evidence = json_pack("{s:I, s:o}", "step", (json_int_t)r->step, "loss", gw_json_num(loss));
	if (gw_det_raise(ctx, &v)) {
		s->incident++;
		s->open = true;
	}
}

const struct gw_detector gw_det_example = {
	.name = "example_negative_loss",
	.state_size = sizeof(struct neg_state),
	.on_record = neg_record,
};
