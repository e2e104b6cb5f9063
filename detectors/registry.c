/*
 * The detector registry and the precedence between detectors (see
 * registry.h).
 *
 * Adding a detector: declare its `const struct gw_detector` below and put
 * it in gw_det_registry where it should run; if its verdicts make another
 * detector's redundant (or the reverse), add a precedence rule.  Its
 * thresholds, if any, come with its gw_detector (GW_DET_THRESHOLDS,
 * thresholds.h): the list of thresholds is built from this registry.
 * Registry order matters only within one line: a winner's verdict on an
 * earlier line (or earlier in the registry on the same line) is what a
 * rule sees.
 *
 * gw_det_index() looks names up in a table (lib/strtab.h) built on first
 * use over static storage, so it never allocates and never fails.
 */
#include "registry.h"
#include "strtab.h"
#include "util.h"

#include <pthread.h>
#include <string.h>

extern const struct gw_detector gw_det_nonfinite;
extern const struct gw_detector gw_det_resume_mismatch;
extern const struct gw_detector gw_det_lr_schedule;
extern const struct gw_detector gw_det_optimizer_reset;
extern const struct gw_detector gw_det_resume_regression;
extern const struct gw_detector gw_det_loss_spike;
extern const struct gw_detector gw_det_grad_explosion;
extern const struct gw_detector gw_det_stall;
extern const struct gw_detector gw_det_loss_scale;
extern const struct gw_detector gw_det_short_context;

/* Resume evidence first (events, LR, optimizer state, level), then the
 * generic spike rules, fp16 loss scaling, the rules for short context,
 * then stall. */
const struct gw_detector *const gw_det_registry[] = {
	&gw_det_nonfinite,
	&gw_det_resume_mismatch,
	&gw_det_lr_schedule,
	&gw_det_optimizer_reset,
	&gw_det_resume_regression,
	&gw_det_loss_spike,
	&gw_det_grad_explosion,
	&gw_det_loss_scale,
	&gw_det_short_context,
	&gw_det_stall,
	NULL,
};

const struct gw_det_precedence gw_det_precedence[] = {
	/* a restart resume_regression explained (a level jump, a climb) is not
	 * also an optimizer reset by the regime signature */
	{"resume_regression", "optimizer_reset", "signature", GW_PREC_SAME_RESTART},
	/* what a resume detector explained is not reported again as a spike */
	{"resume_regression", "loss_spike", NULL, GW_PREC_SAME_RESTART},
	{"optimizer_reset", "loss_spike", NULL, GW_PREC_SAME_RESTART},
	{"resume_regression", "grad_explosion", NULL, GW_PREC_SAME_RESTART},
	{"optimizer_reset", "grad_explosion", NULL, GW_PREC_SAME_RESTART},
	/* the aftermath of a divergence is not a silent optimizer reset */
	{"grad_explosion", "optimizer_reset", "midrun", GW_PREC_MIDRUN_WINDOWS},
	{NULL, NULL, NULL, 0},
};

static struct gw_strtab_slot names_buf[2 * GW_DET_MAX];
static struct gw_strtab names;
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void names_build(void)
{
	gw_strtab_init(&names, names_buf, GW_ARRAY_SIZE(names_buf));
	for (uint32_t i = 0; gw_det_registry[i]; i++) {
		const char *n = gw_det_registry[i]->name;
		int rc = gw_strtab_put(&names, n, strlen(n), i);
		GW_REQUIRE(i < GW_DET_MAX && rc == 0);   /* at most 16, names unique */
	}
}

int gw_det_index(const char *name)
{
	pthread_once(&names_once, names_build);
	uint32_t i;
	return gw_strtab_find(&names, name, strlen(name), &i) == 0 ? (int)i : -1;
}
