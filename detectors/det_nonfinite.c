/*
 * nonfinite: NaN or +-Inf in the loss or the grad norm.
 *
 * A training loop writes NaN/Infinity exactly when the forward or backward
 * pass overflowed or divided by zero.  The first non-finite value opens a
 * critical incident; further non-finite steps belong to the same incident
 * until the run has logged `nonfinite_quiet_steps` finite steps in a row,
 * which resolves it.  A later non-finite value is a new incident.
 */
#include "detector.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

struct nf_state {
	uint32_t incident;        /* key of the current incident, 0 = none yet */
	bool open;
	uint32_t finite_run;      /* finite steps since the last non-finite one */
	uint64_t bad_steps;       /* non-finite steps in the current incident */
	int64_t last_good_step;
	double last_good[2];      /* loss, grad norm at the last finite step */
};

static void nf_init(void *st, const struct gw_det_ctx *ctx)
{
	struct nf_state *s = st;
	s->last_good_step = -1;
	s->last_good[0] = s->last_good[1] = NAN;
	(void)ctx;
}

static const char *what(double v)
{
	return isnan(v) ? "NaN" : v > 0 ? "+Infinity" : "-Infinity";
}

static void nf_record(void *st, const struct gw_det_ctx *ctx)
{
	struct nf_state *s = st;
	const struct gw_rec *r = ctx->rec;
	bool has_l = gw_rec_has(r, GW_ROLE_LOSS), has_g = gw_rec_has(r, GW_ROLE_GRAD_NORM);
	bool bad_l = has_l && !isfinite(r->v[GW_ROLE_LOSS]);
	bool bad_g = has_g && !isfinite(r->v[GW_ROLE_GRAD_NORM]);
	if (!bad_l && !bad_g) {
		if (!has_l && !has_g)
			return;
		s->finite_run++;
		s->last_good_step = r->step;
		if (has_l)
			s->last_good[0] = r->v[GW_ROLE_LOSS];
		if (has_g)
			s->last_good[1] = r->v[GW_ROLE_GRAD_NORM];
		if (s->open && s->finite_run >= ctx->th->nonfinite_quiet_steps) {
			gw_det_resolve(ctx, s->incident);
			s->open = false;
		}
		return;
	}
	s->finite_run = 0;
	if (s->open) {
		s->bad_steps++;
		return;
	}
	s->open = true;
	s->incident++;
	s->bad_steps = 1;

	struct gw_verdict v = {.incident = s->incident, .severity = GW_SEV_CRITICAL};
	char st_buf[32], a[24], b[24];
	gw_fmt_int(st_buf, sizeof(st_buf), r->step);
	const char *metric = bad_l && bad_g ? "loss and grad norm" : bad_l ? "loss" : "grad norm";
	const char *val = bad_l ? what(r->v[GW_ROLE_LOSS]) : what(r->v[GW_ROLE_GRAD_NORM]);
	if (s->last_good_step >= 0) {
		char lg[32], vals[96] = "";
		if (isfinite(s->last_good[0]))
			snprintf(vals, sizeof(vals), ": loss %s", gw_det_fmt_num(a, sizeof(a), s->last_good[0]));
		if (isfinite(s->last_good[1]))
			snprintf(vals + strlen(vals), sizeof(vals) - strlen(vals), "%sgrad norm %s",
			         vals[0] ? ", " : ": ", gw_det_fmt_num(b, sizeof(b), s->last_good[1]));
		snprintf(v.summary, sizeof(v.summary), "%s %s %s at step %s (last finite step %s%s)",
		         metric, bad_l && bad_g ? "are" : "is", val, st_buf,
		         gw_fmt_int(lg, sizeof(lg), s->last_good_step), vals);
	} else {
		snprintf(v.summary, sizeof(v.summary),
		         "%s %s %s at step %s, and no finite value has been logged before it",
		         metric, bad_l && bad_g ? "are" : "is", val, st_buf);
	}
	snprintf(v.cause, sizeof(v.cause),
	         "the forward or backward pass overflowed or divided by zero: "
	         "LR too high, fp16 loss-scale overflow, a bad batch, or bad initial weights");
	snprintf(v.action, sizeof(v.action),
	         "the LR and loss scale at the steps before, the batch of step %s "
	         "and whether the optimizer skipped the update; roll back to the last "
	         "good checkpoint if it repeats", st_buf);
	v.evidence = json_pack("{s:s, s:I, s:s?, s:s?, s:I, s:o, s:o}",
	                       "metric", metric, "step", (json_int_t)r->step,
	                       "loss", has_l ? (isfinite(r->v[GW_ROLE_LOSS]) ? NULL : what(r->v[GW_ROLE_LOSS])) : NULL,
	                       "grad_norm", has_g ? (isfinite(r->v[GW_ROLE_GRAD_NORM]) ? NULL : what(r->v[GW_ROLE_GRAD_NORM])) : NULL,
	                       "last_finite_step", (json_int_t)s->last_good_step,
	                       "last_finite_loss", gw_json_num(s->last_good[0]),
	                       "last_finite_grad_norm", gw_json_num(s->last_good[1]));
	gw_det_raise(ctx, &v);
}

const struct gw_detector gw_det_nonfinite = {
	.name = "nonfinite",
	.state_size = sizeof(struct nf_state),
	.init = nf_init,
	.on_record = nf_record,
};
