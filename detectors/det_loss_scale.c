/*
 * loss_scale: fp16 dynamic loss scaling that has given up.
 *
 * Reads the `overflow` events the log readers make of DeepSpeed, fairseq and
 * apex overflow lines (attributes loss_scale, attempted_loss_scale,
 * min_scale) and the records' loss_scale field (Megatron).  A scaler halves
 * its scale on each overflow and doubles it after a run of good steps;
 * healthy runs dip now and then and recover, and a scaler that starts at
 * 2^16-2^32 halves several times in a row to calibrate.  The rules:
 *   storm     ls_storm_n overflows in a row, each within ls_gap steps of the
 *             last, that drove the scale to ls_low or below;
 *   floor     an overflow set the scale below ls_floor (critical);
 *   pinned    ls_pinned_n overflows within ls_pinned_steps that could not
 *             lower the scale: it is at its minimum and steps are skipped
 *             (critical);
 *   minimum   the scaler said it reached its minimum (critical);
 *   skipped   ls_skip_n records in a row report skipped iterations or
 *             iterations with a NaN loss (Megatron's counts; critical with
 *             a NaN).
 * The evidence carries the loss and grad norm at that time; when the loss
 * rose by x1.5 or more over the storm, the summary says the spike came with
 * the overflows.  One alert per segment.
 */
#include "detector.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define LS_PIN_KEEP 8

/* Its thresholds, its own (thresholds.h, "Where they live"): the
 * configuration's keys, `gradwatch thresholds` and the range checks see
 * them as they see the shared ones.  Tuned on tests/data/incidents (issue
 * 19) and held to zero false alerts on every window of 5-40 points of the
 * healthy real logs (bench/det_windows.py). */
struct ls_th {
	double ls_storm_n, ls_gap, ls_low, ls_floor, ls_pinned_n, ls_skip_n, ls_pinned_steps;
};

static const struct gw_threshold_info ls_thresholds[] = {
	GW_TH_OWN(struct ls_th, ls_storm_n, 4.0, GW_TH_COUNT, 2, 1e9,
	  "overflow storm: this many overflows in a row (each within ls_gap steps of the last) ...",
	  "overflows: at least 2 (one is routine)"),
	GW_TH_OWN(struct ls_th, ls_gap, 3.0, GW_TH_COUNT, 1, 1e9,
	  "... steps between two overflows of one storm (a storm skips step after step)",
	  "steps: at least 1"),
	GW_TH_OWN(struct ls_th, ls_low, 8.0, GW_TH_ABOVE, 0, 1e12,
	  "... that drove the scale to this or below: a scaler starting at 2^16-2^32 halves a few "
	  "times to calibrate (6 times from 2^32 in a healthy start); at <= 8 the fp16 gradients "
	  "are hardly scaled", "a scale: above 0"),
	GW_TH_OWN(struct ls_th, ls_floor, 1.0, GW_TH_ABOVE, 0, 1e12,
	  "an overflow that set the scale below this: the gradients overflow unscaled (fairseq "
	  "stops at 1e-4; healthy runs hold at 1)", "a scale: above 0"),
	GW_TH_OWN(struct ls_th, ls_pinned_n, 2.0, GW_TH_COUNT, 1, 1e9,
	  "pinned scale: this many overflows that could not lower the scale (at its minimum) ...",
	  "overflows: at least 1"),
	GW_TH_OWN(struct ls_th, ls_skip_n, 3.0, GW_TH_COUNT, 1, 1e9,
	  "skipped: this many records in a row that report skipped or NaN iterations (a healthy "
	  "Megatron fp16 run skips in one record while its scale calibrates)",
	  "records: at least 1"),
	GW_TH_OWN(struct ls_th, ls_pinned_steps, 50.0, GW_TH_COUNT, 1, 1e9,
	  "... within this many steps (a healthy run at its floor overflows once in ~100 updates)",
	  "steps: at least 1"),
	GW_TH_OWN_END,
};

struct ls_state {
	uint32_t incident;
	double scale;              /* the last known scale, NaN if none */
	unsigned storm;            /* overflows in the current storm */
	int64_t storm_last, storm_from_step;
	double storm_from;         /* the scale before the storm */
	double loss_before;        /* the last loss before the storm */
	int64_t pins[LS_PIN_KEEP]; /* steps of overflows that did not lower the scale */
	unsigned npins;
	double loss, gn;           /* the last record's */
	int64_t rec_step;
	unsigned skip_recs;        /* records in a row that skipped iterations */
	double skipped, nans;      /* ... how many, and how many had a NaN */
	int64_t skip_from;
};

static void ls_reset(struct ls_state *s)
{
	uint32_t inc = s->incident;
	memset(s, 0, sizeof(*s));
	s->incident = inc;
	s->scale = s->storm_from = s->loss_before = s->loss = s->gn = NAN;
	s->rec_step = -1;
}

static void ls_init(void *st, const struct gw_det_ctx *ctx)
{
	ls_reset(st);
	(void)ctx;
}

static void ls_segment(void *st, const struct gw_det_ctx *ctx)
{
	ls_reset(st);
	(void)ctx;
}

static double attr_num(const json_t *attrs, const char *k)
{
	const json_t *v = attrs ? json_object_get(attrs, k) : NULL;
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static void ls_raise(struct ls_state *s, const struct gw_det_ctx *ctx, const char *rule,
                     bool critical, const char *what, int64_t step)
{
	struct gw_verdict v = {.incident = s->incident + 1, .rule = rule,
	                       .severity = critical ? GW_SEV_CRITICAL : GW_SEV_WARNING};
	char a[24], b[24], extra[160] = "";
	if (isfinite(s->loss) && isfinite(s->loss_before) && s->loss_before > 0 &&
	    s->loss >= 1.5 * s->loss_before)
		snprintf(extra, sizeof(extra), "; the loss jumped from %s to %s with them",
		         gw_det_fmt_num(a, sizeof(a), s->loss_before), gw_det_fmt_num(b, sizeof(b), s->loss));
	else if (isfinite(s->loss) || isfinite(s->gn))
		snprintf(extra, sizeof(extra), "; last logged loss %s, grad norm %s",
		         isfinite(s->loss) ? gw_det_fmt_num(a, sizeof(a), s->loss) : "-",
		         isfinite(s->gn) ? gw_det_fmt_num(b, sizeof(b), s->gn) : "-");
	snprintf(v.summary, sizeof(v.summary), "%s%s", what, extra);
	snprintf(v.cause, sizeof(v.cause),
	         "gradients overflow fp16 step after step: the loss is exploding (LR too high, batch "
	         "too small, an unstable layer), or the model cannot be trained in fp16 as set up");
	snprintf(v.action, sizeof(v.action),
	         "lower the LR or raise the warm-up, clip gradients, check for an unstable layer; "
	         "bf16 or fp32 if the hardware allows; roll back to the last checkpoint before the storm");
	v.evidence = json_pack("{s:s, s:I, s:o, s:I, s:I, s:o, s:o, s:o, s:o, s:I}",
	                       "rule", rule, "step", (json_int_t)step,
	                       "loss_scale", gw_json_num(s->scale),
	                       "overflows_in_a_row", (json_int_t)s->storm,
	                       "from_step", (json_int_t)s->storm_from_step,
	                       "scale_before", gw_json_num(s->storm_from),
	                       "loss", gw_json_num(s->loss), "grad_norm", gw_json_num(s->gn),
	                       "loss_before", gw_json_num(s->loss_before),
	                       "loss_step", (json_int_t)s->rec_step);
	if (gw_det_raise(ctx, &v))
		s->incident = v.incident;
}

/* One overflow (an event, or a record whose scale fell) at step to scale
 * `to` (NaN if not said) from `from` (NaN if not known). */
static void overflow(struct ls_state *s, const struct gw_det_ctx *ctx, int64_t step, double from,
                     double to, bool at_min)
{
	const struct ls_th *th = gw_det_own_th(ctx);
	char a[24], b[24], sb[32], fb[32], what[320];
	gw_fmt_int(sb, sizeof(sb), step);
	if (s->storm > 0 && step - s->storm_last <= th->ls_gap && step >= s->storm_last) {
		s->storm++;
	} else {
		s->storm = 1;
		s->storm_from = isfinite(from) ? from : to;
		s->storm_from_step = step;
		s->loss_before = s->loss;
	}
	s->storm_last = step;
	bool pinned = isfinite(to) && isfinite(from) && to >= from;
	if (isfinite(to))
		s->scale = to;
	if (at_min) {
		snprintf(what, sizeof(what),
		         "fp16 loss scale at its minimum at step %s: the scaler cannot go lower and the "
		         "run stops or skips every step", sb);
		ls_raise(s, ctx, "minimum", true, what, step);
		return;
	}
	if (pinned) {
		if (s->npins == LS_PIN_KEEP) {
			memmove(s->pins, s->pins + 1, (LS_PIN_KEEP - 1) * sizeof(s->pins[0]));
			s->npins--;
		}
		s->pins[s->npins++] = step;
		unsigned n = 0;
		for (unsigned i = 0; i < s->npins; i++)
			n += (double)(step - s->pins[i]) <= th->ls_pinned_steps;
		if (n >= th->ls_pinned_n) {
			snprintf(what, sizeof(what),
			         "fp16 overflow at step %s with the loss scale pinned at %s: %u overflows "
			         "within %g steps could not lower it, so those updates were skipped", sb,
			         gw_det_fmt_num(a, sizeof(a), to), n, th->ls_pinned_steps);
			ls_raise(s, ctx, "pinned", true, what, step);
		}
		return;
	}
	if (isfinite(to) && to < th->ls_floor) {
		snprintf(what, sizeof(what),
		         "fp16 loss scale driven to %s at step %s (%u overflow%s in a row from %s): below "
		         "%g the gradients overflow even unscaled", gw_det_fmt_num(a, sizeof(a), to), sb,
		         s->storm, s->storm == 1 ? "" : "s", gw_det_fmt_num(b, sizeof(b), s->storm_from),
		         th->ls_floor);
		ls_raise(s, ctx, "floor", true, what, step);
		return;
	}
	if (s->storm >= th->ls_storm_n && isfinite(to) && to <= th->ls_low) {
		snprintf(what, sizeof(what),
		         "fp16 overflow storm: %u overflows in a row from step %s to %s drove the loss "
		         "scale from %s to %s", s->storm, gw_fmt_int(fb, sizeof(fb), s->storm_from_step), sb,
		         gw_det_fmt_num(a, sizeof(a), s->storm_from), gw_det_fmt_num(b, sizeof(b), to));
		ls_raise(s, ctx, "storm", false, what, step);
	}
}

static void ls_event(void *st, const struct gw_det_ctx *ctx)
{
	struct ls_state *s = st;
	if (strcmp(ctx->rec->event, "overflow") != 0)
		return;
	const json_t *at = ctx->rec->attrs;
	double to = attr_num(at, "loss_scale");
	double from = attr_num(at, "attempted_loss_scale");
	if (!isfinite(from))
		from = s->scale;
	const json_t *m = at ? json_object_get(at, "min_scale") : NULL;
	overflow(s, ctx, ctx->rec->step, from, to, json_is_true(m));
}

static void ls_record(void *st, const struct gw_det_ctx *ctx)
{
	struct ls_state *s = st;
	const struct ls_th *th = gw_det_own_th(ctx);
	const struct gw_rec *r = ctx->rec;
	if (gw_rec_has(r, GW_ROLE_LOSS))
		s->loss = r->v[GW_ROLE_LOSS];
	if (gw_rec_has(r, GW_ROLE_GRAD_NORM))
		s->gn = r->v[GW_ROLE_GRAD_NORM];
	s->rec_step = r->step;
	double sk = gw_rec_has_field(r, GW_FIELD_SKIPPED) ? r->f[GW_FIELD_SKIPPED] : 0;
	double nn = gw_rec_has_field(r, GW_FIELD_NAN_ITERATIONS) ? r->f[GW_FIELD_NAN_ITERATIONS] : 0;
	if ((isfinite(sk) && sk > 0) || (isfinite(nn) && nn > 0)) {
		if (s->skip_recs++ == 0) {
			s->skipped = s->nans = 0;
			s->skip_from = r->step;
		}
		s->skipped += isfinite(sk) && sk > 0 ? sk : 0;
		s->nans += isfinite(nn) && nn > 0 ? nn : 0;
		if (s->skip_recs >= th->ls_skip_n) {
			char what[320], fb[32], sb[32];
			snprintf(what, sizeof(what),
			         "%u records in a row, steps %s to %s, report skipped iterations (%.0f "
			         "skipped, %.0f with a NaN loss): updates are being thrown away",
			         s->skip_recs, gw_fmt_int(fb, sizeof(fb), s->skip_from),
			         gw_fmt_int(sb, sizeof(sb), r->step), s->skipped, s->nans);
			s->storm = s->skip_recs;
			s->storm_from_step = s->skip_from;
			ls_raise(s, ctx, "skipped", s->nans > 0, what, r->step);
			return;
		}
	} else {
		s->skip_recs = 0;
	}
	if (!gw_rec_has_field(r, GW_FIELD_LOSS_SCALE))
		return;
	double sc = r->f[GW_FIELD_LOSS_SCALE];
	if (!isfinite(sc))
		return;
	if (isfinite(s->scale) && sc < s->scale) {
		overflow(s, ctx, r->step, s->scale, sc, false);
		return;
	}
	s->scale = sc;
}

const struct gw_detector gw_det_loss_scale = {
	.name = "loss_scale",
	.state_size = sizeof(struct ls_state),
	.once_per_segment = true,
	GW_DET_THRESHOLDS(ls_thresholds, struct ls_th),
	.init = ls_init,
	.on_segment = ls_segment,
	.on_record = ls_record,
	.on_event = ls_event,
};
