/*
 * resume_mismatch: at a `resumed` event, compare what was resumed with the
 * run's last `checkpoint_saved` (resume_check.c) and raise one critical
 * alert naming every difference.  Events are ground truth where telemetry is
 * only a symptom, so this fires at the resumed line itself, before the first
 * step of the new process.
 */
#include "detector.h"
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
	json_t *diffs = gw_resume_diff(ctx->last_checkpoint, ctx->rec->attrs);
	if (!diffs || !json_array_size(diffs)) {
		json_decref(diffs);
		return;
	}
	struct gw_verdict v = {.incident = ++s->incident, .severity = GW_SEV_CRITICAL};
	char step[32], ck[32];
	int64_t ckpt_step = ctx->restart_step >= 0 ? ctx->restart_step : ctx->rec->step;
	gw_det_fmt_step(step, sizeof(step), ckpt_step);
	size_t off;
	if (ctx->last_checkpoint) {
		gw_det_fmt_step(ck, sizeof(ck), ctx->last_checkpoint_step);
		off = (size_t)snprintf(v.summary, sizeof(v.summary),
		                       "the resume from step %s does not match the checkpoint saved at step %s: ",
		                       step, ck);
	} else {
		off = (size_t)snprintf(v.summary, sizeof(v.summary),
		                       "the resume from step %s reports a broken restore: ", step);
	}
	size_t i;
	json_t *d;
	json_array_foreach(diffs, i, d) {
		if (off < sizeof(v.summary))
			off += (size_t)snprintf(v.summary + off, sizeof(v.summary) - off, "%s%s",
			                        i ? "; " : "", json_string_value(json_object_get(d, "message")));
	}
	const char *kind = json_string_value(json_object_get(json_array_get(diffs, 0), "kind"));
	snprintf(v.cause, sizeof(v.cause), "%s", gw_resume_cause(kind));
	snprintf(v.action, sizeof(v.action), "%s", gw_resume_action(kind));
	v.evidence = json_pack("{s:I, s:I, s:o}", "resumed_from_step", (json_int_t)ckpt_step,
	                       "checkpoint_step", (json_int_t)ctx->last_checkpoint_step,
	                       "differences", diffs);
	gw_det_raise(ctx, &v);
}

const struct gw_detector gw_det_resume_mismatch = {
	.name = "resume_mismatch",
	.state_size = sizeof(struct rm_state),
	.on_event = rm_event,
};
