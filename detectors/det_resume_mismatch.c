/*
 * resume_mismatch: at a `resumed` event, compare what was resumed with the
 * `checkpoint_saved` it restarts from (the one saved at its checkpoint_step,
 * else the newest before it; resume_check.c) and raise one alert naming
 * every difference: critical when the optimizer state cannot be what was
 * saved, warning when only hyperparameters changed.  Events are ground
 * truth where telemetry is only a symptom, so this fires at the resumed
 * line itself, before the first step of the new process.
 */
#include "detector.h"
#include "util.h"
#include "regime.h"
#include "resume_check.h"

#include <stdio.h>
#include <string.h>

struct rm_state {
	uint32_t incident;
};

static void rm_event(void *st, const struct gw_det_ctx *ctx)
{
	struct rm_state *s = st;
	if (strcmp(ctx->rec->event, "resumed") != 0)
		return;
	int64_t S = ctx->restart->active ? ctx->restart->ckpt_step : ctx->rec->step;
	int64_t cstep;
	uint64_t cline;
	const json_t *ckpt = gw_det_checkpoint_for(ctx, S, &cstep, &cline);
	json_t *diffs = gw_resume_diff(ckpt, ctx->rec->attrs);
	if (!diffs || !json_array_size(diffs)) {
		json_decref(diffs);
		return;
	}
	/* hyperparameter changes alone may be deliberate: warning; a state
	 * that cannot be what was saved: critical */
	enum gw_severity sev = GW_SEV_WARNING;
	size_t i;
	json_t *d;
	json_array_foreach(diffs, i, d) {
		if (strcmp(json_string_value(json_object_get(d, "kind")), "hparams") != 0)
			sev = GW_SEV_CRITICAL;
	}
	struct gw_verdict v = {.incident = ++s->incident, .severity = sev, .step_set = true, .step = S};
	char step[32], ck[32];
	gw_fmt_int(step, sizeof(step), S);
	size_t off;
	if (ckpt) {
		gw_fmt_int(ck, sizeof(ck), cstep);
		off = (size_t)snprintf(v.summary, sizeof(v.summary),
		                       "the resume from step %s does not match the checkpoint saved at step %s: ",
		                       step, ck);
	} else {
		off = (size_t)snprintf(v.summary, sizeof(v.summary),
		                       "the resume from step %s reports a broken restore: ", step);
	}
	json_array_foreach(diffs, i, d) {
		if (off < sizeof(v.summary))
			off += (size_t)snprintf(v.summary + off, sizeof(v.summary) - off, "%s%s",
			                        i ? "; " : "", json_string_value(json_object_get(d, "message")));
	}
	const char *kind = json_string_value(json_object_get(json_array_get(diffs, 0), "kind"));
	snprintf(v.cause, sizeof(v.cause), "%s", gw_resume_cause(kind));
	snprintf(v.action, sizeof(v.action), "%s", gw_resume_action(kind));
	v.evidence = json_pack("{s:I, s:I, s:I, s:o}", "resumed_from_step", (json_int_t)S,
	                       "checkpoint_step", (json_int_t)cstep, "checkpoint_line", (json_int_t)cline,
	                       "differences", diffs);
	gw_det_raise(ctx, &v);
}

const struct gw_detector gw_det_resume_mismatch = {
	.name = "resume_mismatch",
	.state_size = sizeof(struct rm_state),
	.on_event = rm_event,
};
