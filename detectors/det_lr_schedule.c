/*
 * lr_schedule: the learning rate after a resume does not continue the
 * schedule it was on (warmup restarted, cosine restarted, a jump).
 *
 * Three comparisons, strongest first, each against lr_jump (x1.5 either
 * way, which no schedule does in one step):
 *   events     the `resumed` event's hparams.lr against the lr of the
 *              checkpoint_saved it restarts from (fires at the resumed line);
 *   replayed   a replayed step's lr against the pre-crash copy of the same
 *              step (the schedule is a function of the step);
 *   continued  with no overlap, the first lr after the restart against the
 *              schedule's continuation from the two lrs before S.  A jump up
 *              fires at once; a drop fires only if the lr then rises again
 *              within lr_drop_look steps (a restarted warmup).  A drop that
 *              stays flat looks like a scheduled step decay: info only.
 * One warning or critical alert per segment (once_per_segment).
 */
#include "detector.h"
#include "util.h"
#include "hist.h"
#include "regime.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct lr_state {
	uint32_t incident;
	bool drop_pending;
	double drop_lr, drop_expected;
};

static const char CAUSE[] = "the LR scheduler's state was not restored (warmup or cosine "
                            "restarted from its start), or the job runs a different LR config";
static const char ACTION[] = "load the scheduler's state_dict with the checkpoint (and the "
                             "optimizer's param_groups); compare the LR config of both runs";

static void lr_segment(void *st, const struct gw_det_ctx *ctx)
{
	struct lr_state *s = st;
	s->drop_pending = false;
}

static void lr_raise(struct lr_state *s, const struct gw_det_ctx *ctx, enum gw_severity sev,
                  json_t *ev, const char *cause, const char *action, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

static void lr_raise(struct lr_state *s, const struct gw_det_ctx *ctx, enum gw_severity sev,
                  json_t *ev, const char *cause, const char *action, const char *fmt, ...)
{
	struct gw_verdict v = {.incident = ++s->incident, .severity = sev, .evidence = ev};
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(v.summary, sizeof(v.summary), fmt, ap);
	va_end(ap);
	snprintf(v.cause, sizeof(v.cause), "%s", cause);
	snprintf(v.action, sizeof(v.action), "%s", action);
	gw_det_raise(ctx, &v);
}

static void lr_event(void *st, const struct gw_det_ctx *ctx)
{
	struct lr_state *s = st;
	if (strcmp(ctx->rec->event, "resumed") != 0)
		return;
	int64_t S = ctx->restart->ckpt_step, cstep;
	uint64_t cline;
	const json_t *c = gw_det_checkpoint_for(ctx, S, &cstep, &cline);
	if (!c)
		return;
	double la = json_number_value(json_object_get(json_object_get(c, "hparams"), "lr"));
	double lb = json_number_value(json_object_get(json_object_get(ctx->rec->attrs, "hparams"), "lr"));
	if (!(isfinite(la) && isfinite(lb) && la > 0 && lb > 0))
		return;
	if (fabs(log(lb / la)) <= log(ctx->th->lr_jump))
		return;
	char sb[32], a[24], b[24];
	lr_raise(s, ctx, GW_SEV_CRITICAL,
	      json_pack("{s:s, s:I, s:I, s:o, s:o, s:o, s:o}", "source", "events",
	                "checkpoint_step", (json_int_t)cstep, "checkpoint_line", (json_int_t)cline,
	                "checkpoint_lr", gw_json_num(la), "resumed_lr", gw_json_num(lb),
	                "ratio", gw_json_num(lb / la),
	                "threshold_ratio", gw_json_num(ctx->th->lr_jump)),
	      CAUSE, ACTION,
	      "resumed at step %s with lr %s, but the checkpoint it restarts from recorded lr %s "
	      "(%.3gx): the LR schedule was not restored",
	      gw_fmt_int(sb, sizeof(sb), S), gw_det_fmt_num(a, sizeof(a), lb),
	      gw_det_fmt_num(b, sizeof(b), la), lb / la);
}

static void lr_record(void *st, const struct gw_det_ctx *ctx)
{
	struct lr_state *s = st;
	const struct gw_restart *rs = ctx->restart;
	if (!rs->active)
		return;
	struct gw_hist_rec r;
	gw_hist_at(ctx->hist, 0, &r);
	if (isnan(r.lr) || r.lr <= 0)
		return;
	const struct gw_thresholds *th = ctx->th;
	double jump = log(th->lr_jump);
	char sb[32], sa[32], a[24], b[24], c[24];
	const struct gw_replayed *orig = gw_hist_replayed(ctx->hist, r.step);
	if (orig && orig->lr > 0) {
		if (fabs(log(r.lr / orig->lr)) > jump)
			lr_raise(s, ctx, GW_SEV_CRITICAL,
			      json_pack("{s:s, s:I, s:o, s:o, s:o, s:o}", "source", "replayed_step",
			                "step", (json_int_t)r.step, "lr", gw_json_num(r.lr),
			                "lr_before_crash", gw_json_num(orig->lr),
			                "ratio", gw_json_num(r.lr / orig->lr),
			                "threshold_ratio", gw_json_num(th->lr_jump)),
			      CAUSE, ACTION,
			      "LR at step %s after the resume from step %s is %s, but the first run used %s at "
			      "the same step (%.3gx): the LR schedule did not continue",
			      gw_fmt_int(sa, sizeof(sa), r.step),
			      gw_fmt_int(sb, sizeof(sb), rs->ckpt_step),
			      gw_det_fmt_num(a, sizeof(a), r.lr), gw_det_fmt_num(b, sizeof(b), orig->lr),
			      r.lr / orig->lr);
		return;
	}
	if (gw_hist_replay_count(ctx->hist))
		return; /* replayed steps exist but not this one: nothing to compare */
	if (rs->k == 1 && rs->lr_at_ckpt > 0) {
		double slope = rs->lr_before_ckpt > 0 ? rs->lr_at_ckpt / rs->lr_before_ckpt : 1.0;
		double expected = rs->lr_at_ckpt * slope;
		double lrr = log(r.lr / expected);
		if (lrr > jump) {
			lr_raise(s, ctx, GW_SEV_CRITICAL,
			      json_pack("{s:s, s:o, s:o, s:o, s:o, s:o}", "source", "continuation",
			                "lr_at_S", gw_json_num(rs->lr_at_ckpt),
			                "lr", gw_json_num(r.lr), "expected", gw_json_num(expected),
			                "ratio", gw_json_num(r.lr / expected),
			                "threshold_ratio", gw_json_num(th->lr_jump)),
			      "the LR scheduler's state was not restored: the schedule restarted from its start",
			      ACTION,
			      "LR jumped from %s at checkpoint step %s to %s at the first resumed step (%.3gx): "
			      "schedules do not jump up, it restarted",
			      gw_det_fmt_num(a, sizeof(a), rs->lr_at_ckpt),
			      gw_fmt_int(sb, sizeof(sb), rs->ckpt_step),
			      gw_det_fmt_num(b, sizeof(b), r.lr), r.lr / rs->lr_at_ckpt);
		} else if (lrr < -jump) {
			s->drop_pending = true;
			s->drop_lr = r.lr;
			s->drop_expected = expected;
		}
		return;
	}
	if (!s->drop_pending || rs->k < 2 || (double)rs->k > 1 + th->lr_drop_look)
		return;
	struct gw_hist_rec prev;
	if (gw_hist_at(ctx->hist, 1, &prev) && prev.lr > 0 && r.lr > prev.lr * (1 + th->lr_rise_eps)) {
		s->drop_pending = false;
		lr_raise(s, ctx, GW_SEV_CRITICAL,
		      json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o}", "source", "continuation",
		                "lr_at_S", gw_json_num(rs->lr_at_ckpt),
		                "lr_first", gw_json_num(s->drop_lr), "lr_now", gw_json_num(r.lr),
		                "expected", gw_json_num(s->drop_expected),
		                "ratio", gw_json_num(s->drop_lr / s->drop_expected),
		                "threshold_ratio", gw_json_num(th->lr_jump)),
		      "the LR scheduler's state was not restored: the warmup restarted from step 0", ACTION,
		      "LR dropped from %s at checkpoint step %s to %s at the first resumed step (%.3gx) and "
		      "is now rising again (%s): the warmup restarted",
		      gw_det_fmt_num(a, sizeof(a), rs->lr_at_ckpt),
		      gw_fmt_int(sb, sizeof(sb), rs->ckpt_step),
		      gw_det_fmt_num(b, sizeof(b), s->drop_lr), s->drop_lr / rs->lr_at_ckpt,
		      gw_det_fmt_num(c, sizeof(c), r.lr));
	} else if ((double)rs->k == 1 + th->lr_drop_look) {
		s->drop_pending = false;
		lr_raise(s, ctx, GW_SEV_INFO,
		      json_pack("{s:o, s:o}", "lr_at_S", gw_json_num(rs->lr_at_ckpt),
		                "lr_first", gw_json_num(s->drop_lr)),
		      "a step decay of the schedule that coincides with the restart",
		      "nothing, unless the schedule has no milestone here",
		      "LR dropped %.3gx at the resume from step %s and stayed flat: looks like a scheduled "
		      "step decay, not flagged", rs->lr_at_ckpt / s->drop_lr,
		      gw_fmt_int(sb, sizeof(sb), rs->ckpt_step));
	}
}

const struct gw_detector gw_det_lr_schedule = {
	.name = "lr_schedule",
	.state_size = sizeof(struct lr_state),
	.once_per_segment = true,
	.on_segment = lr_segment,
	.on_record = lr_record,
	.on_event = lr_event,
};
