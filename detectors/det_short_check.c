/*
 * short_context's rules (the list at the top of det_short.c): a point
 * against the points before it, and the first point after a restart
 * against those before the restart; the words and evidence of each alert.
 */
#include "det_short_impl.h"

#include "regime.h"
#include "robust.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The finite values of one series among the last k points (of this
 * segment only, unless all), oldest first. */
static size_t prior_of(const struct sc_state *s, const double *col, size_t k, bool all,
                       double *out)
{
	size_t m = 0;
	size_t n = all ? s->n : s->seg_n;
	size_t have = n < k ? n : k;
	for (size_t i = have; i > 0; i--) {
		double v = col[(s->head + SC_KEEP - i) % SC_KEEP];
		if (isfinite(v))
			out[m++] = v;
	}
	return m;
}

static size_t prior(const struct sc_state *s, const double *col, size_t k, double *out)
{
	return prior_of(s, col, k, false, out);
}

struct rise {
	size_t k;          /* points before */
	double max, median, ratio, z;   /* median and z: after rise_spread */
	const double *p;   /* the points, for rise_spread */
	double x;
};

/* x against the positive points before it: their count, highest, and x's
 * ratio to it; false if any is not positive or there are none.  The
 * median and the spread in log space are rise_spread's: most points need
 * neither (no rule can fire below sc_abs_rise), and they are most of the
 * detector's time while runs are short. */
static bool rise_of(const double *p, size_t k, double x, struct rise *o)
{
	if (k == 0 || !(x > 0))
		return false;
	double mx = 0;
	for (size_t i = 0; i < k; i++) {
		if (!(p[i] > 0))
			return false;
		mx = p[i] > mx ? p[i] : mx;   /* positive: as fmax, without the call */
	}
	*o = (struct rise){.k = k, .max = mx, .ratio = x / mx, .p = p, .x = x,
	                   .median = NAN, .z = NAN};
	return true;
}

/* The rise's median and its size in spreads of the points (log space). */
static void rise_spread(struct rise *o, const struct gw_thresholds *th)
{
	size_t k = o->k;
	double lg[SC_KEEP], tmp[SC_KEEP];
	for (size_t i = 0; i < k; i++)
		lg[i] = log(o->p[i]);
	double spread = 0;
	if (k >= 4) {
		spread = gw_noise(lg, k, tmp);
	} else {
		for (size_t i = 1; i < k; i++)
			spread = fmax(spread, fabs(lg[i] - lg[i - 1]));
	}
	if (!isfinite(spread) || spread < th->sigma_floor_log)
		spread = th->sigma_floor_log;
	memcpy(tmp, lg, k * sizeof(double));
	double med = gw_median(tmp, k);
	o->median = exp(med);
	o->z = k >= 2 ? (log(o->x) - med) / spread : NAN;   /* one point: no spread */
}

/* The spreads a rise over k points must reach (fewer points, a spread
 * more often small by chance). */
static double need_z(const struct sc_th *sc, size_t k)
{
	return k <= 2 ? sc->sc_z2 : k == 3 ? sc->sc_z3 : sc->sc_z;
}

/* Raise one verdict; `what` is the sentence before the context note. */
static void sc_raise(struct sc_state *s, const struct gw_det_ctx *ctx, const char *rule,
                     bool critical, const char *what, const char *cause, const char *action,
                     json_t *ev)
{
	struct gw_verdict v = {.incident = s->incident + 1, .rule = rule,
	                       .severity = critical ? GW_SEV_CRITICAL : GW_SEV_WARNING};
	unsigned long long pts = (unsigned long long)s->points;
	snprintf(v.summary, sizeof(v.summary),
	         "%s (short context: judged on the run's %llu point%s, fewer than the %g the other "
	         "detectors need)", what, pts, pts == 1 ? "" : "s",
	         ctx->th->sp_base_window + ctx->th->sp_cur_window);
	snprintf(v.cause, sizeof(v.cause), "%s", cause);
	snprintf(v.action, sizeof(v.action), "%s", action);
	json_object_set_new(ev, "rule", json_string(rule));
	json_object_set_new(ev, "short_context", json_true());
	json_object_set_new(ev, "points", json_integer((json_int_t)pts));
	v.evidence = ev;
	if (gw_det_raise(ctx, &v))
		s->incident = v.incident;
}

static const char CAUSE_DIVERGE[] =
	"the start of a divergence: LR too high or an LR spike, a bad batch, numerical "
	"instability (fp16 overflow, attention logits), or a resume that lost state";
static const char ACTION_DIVERGE[] =
	"look at the LR, the loss scale and the data of these steps, and at whether the run "
	"resumed just before; consider rolling back to the last good checkpoint";

/* ", while the fp16 loss scale fell from X to Y" when it fell at this point
 * or the one before. */
static void scale_note(const struct sc_state *s, double scale, char *buf, size_t size)
{
	buf[0] = 0;
	if (!isfinite(scale) || s->seg_n == 0)
		return;
	for (unsigned back = 1; back <= 2 && back <= s->seg_n; back++) {
		double before = s->scale[back - 1];
		if (isfinite(before) && scale < before) {
			char a[24], b[24];
			snprintf(buf, size, ", while the fp16 loss scale fell from %s to %s (overflows)",
			         gw_det_fmt_num(a, sizeof(a), before), gw_det_fmt_num(b, sizeof(b), scale));
			return;
		}
	}
}

/* "the point before it (6.44)" or "the highest of the 3 points before it
 * (3.68; 10 spreads of them)" */
static void points_before(char *buf, size_t size, size_t k, double max, double z)
{
	char m[24];
	gw_det_fmt_num(m, sizeof(m), max);
	if (k == 1)
		snprintf(buf, size, "the point before it (%s)", m);
	else if (isfinite(z))
		snprintf(buf, size, "the highest of the %zu points before it (%s; %.0f spreads of them)",
		         k, m, z);
	else
		snprintf(buf, size, "the highest of the %zu points before it (%s)", k, m);
}

static json_t *rise_ev(const char *metric, double x, const struct rise *r, int64_t step)
{
	return json_pack("{s:s, s:I, s:o, s:I, s:o, s:o, s:o, s:o}", "metric", metric,
	                 "step", (json_int_t)step, "value", gw_json_num(x),
	                 "prior_points", (json_int_t)r->k, "prior_max", gw_json_num(r->max),
	                 "prior_median", gw_json_num(r->median), "ratio", gw_json_num(r->ratio),
	                 "spreads", gw_json_num(r->z));
}

/* The checks of one point; true when a verdict was given. */
bool gw__sc_check(struct sc_state *s, const struct gw_det_ctx *ctx, double L, double G,
                  double scale)
{
	const struct gw_thresholds *th = ctx->th;
	const struct sc_th *sc = gw_det_own_th(ctx);
	int64_t step = ctx->rec->step;
	/* sb: the step, written only into an alert (formatting it on every
	 * point cost more than the rules) */
	char sb[32], a[24], b[24], c[24], what[400], note[128];

	/* absurd magnitudes */
	if ((isfinite(L) && fabs(L) >= sc->sc_absurd) || (isfinite(G) && G >= sc->sc_absurd)) {
		bool gl = isfinite(L) && fabs(L) >= sc->sc_absurd;
		snprintf(what, sizeof(what), "%s is %s at step %s: numerics have broken down",
		         gl ? "loss" : "grad norm", gw_det_fmt_num(a, sizeof(a), gl ? L : G),
		         gw_fmt_int(sb, sizeof(sb), step));
		sc_raise(s, ctx, "absurd", true, what,
		         "an overflow short of Inf: LR far too high, a divergence already under way, "
		         "or a loss computed on garbage (wrong scaling, bad inputs)",
		         "stop the run; check the LR, the inputs and the loss computation at this step",
		         json_pack("{s:I, s:o, s:o}", "step", (json_int_t)step, "loss", gw_json_num(L),
		                   "grad_norm", gw_json_num(G)));
		return true;
	}

	double pl[SC_KEEP], pg[SC_KEEP];
	size_t kmax = (size_t)sc->sc_prior_max;
	size_t kl = prior(s, s->loss, kmax, pl), kg = prior(s, s->gn, kmax, pg);
	struct rise rl = {0}, rg = {0};
	bool hl = isfinite(L) && rise_of(pl, kl, L, &rl);
	bool hg = isfinite(G) && rise_of(pg, kg, G, &rg);

	/* collapse: a positive loss falls a thousandfold */
	if (isfinite(L) && L >= 0 && kl >= 1) {
		bool pos = true;
		double mx = 0;
		for (size_t i = 0; i < kl; i++) {
			pos = pos && pl[i] > 0;
			mx = pl[i] > mx ? pl[i] : mx;   /* read only when all are positive */
		}
		/* the median is at most the highest: most points stop here */
		double med = NAN;
		if (pos && L < sc->sc_collapse_rel * mx) {
			double tmp[SC_KEEP];
			memcpy(tmp, pl, kl * sizeof(double));
			med = gw_median(tmp, kl);
		}
		if (pos && L < sc->sc_collapse_rel * med) {
			snprintf(what, sizeof(what),
			         "loss collapsed to %s at step %s from a median of %s over the %zu "
			         "point%s before: a fall of x%.0f is no learning",
			         gw_det_fmt_num(a, sizeof(a), L), gw_fmt_int(sb, sizeof(sb), step),
			         gw_det_fmt_num(b, sizeof(b), med), kl,
			         kl == 1 ? "" : "s", L > 0 ? med / L : INFINITY);
			sc_raise(s, ctx, "collapse", true, what,
			         "the loss no longer measures the task: labels leaked into the inputs, "
			         "a mask that hides every token, an empty batch, or a broken loss",
			         "look at a batch and its labels at this step and at the loss masking",
			         json_pack("{s:I, s:o, s:o, s:I, s:o}", "step", (json_int_t)step,
			                   "loss", gw_json_num(L), "prior_median", gw_json_num(med),
			                   "prior_points", (json_int_t)kl, "grad_norm", gw_json_num(G)));
			return true;
		}
	}

	scale_note(s, scale, note, sizeof(note));
	/* jump: loss alone, or loss and grad norm together */
	bool armed = (double)step >= sc->sc_arm_steps;
	/* a whole unit of loss, armed: what every rule that reads the loss's
	 * median or spread (jump, the start of a level) asks first */
	bool rises = hl && armed && L - rl.max >= sc->sc_abs_rise;
	if (rises)
		rise_spread(&rl, th);
	bool zl = rises && rl.k >= 2 && rl.z >= need_z(sc, rl.k);
	bool jump_l = zl && rl.ratio >= (rl.k == 2 ? sc->sc_jump_rel2 : sc->sc_jump_rel);
	/* both at once: with one point before too (two series agree) */
	bool one = hl && hg && rl.k == 1 && rg.k == 1 && armed && L - rl.max >= sc->sc_abs_rise;
	bool jump_b = (zl || one) && hg && rg.k >= 1 && rl.ratio >= sc->sc_both_loss_rel &&
	              rg.ratio >= sc->sc_both_gn_rel;
	if (jump_l || jump_b) {
		char before[96];
		points_before(before, sizeof(before), rl.k, rl.max, rl.z);
		int n = snprintf(what, sizeof(what), "loss jumped to %s at step %s, x%.2g %s",
		                 gw_det_fmt_num(a, sizeof(a), L), gw_fmt_int(sb, sizeof(sb), step), rl.ratio,
		                 before);
		if (hg && n > 0 && (size_t)n < sizeof(what))
			n += snprintf(what + n, sizeof(what) - (size_t)n, "; grad norm x%.2g to %s",
			              rg.ratio, gw_det_fmt_num(c, sizeof(c), G));
		if (n > 0 && (size_t)n < sizeof(what))
			snprintf(what + n, sizeof(what) - (size_t)n, "%s", note);
		json_t *ev = rise_ev("loss", L, &rl, step);
		json_object_set_new(ev, "grad_norm", gw_json_num(G));
		if (hg)
			json_object_set_new(ev, "grad_norm_ratio", gw_json_num(rg.ratio));
		json_object_set_new(ev, "loss_scale", gw_json_num(scale));
		sc_raise(s, ctx, "jump", rl.ratio >= th->sp_crit_rel || jump_b, what, CAUSE_DIVERGE,
		         ACTION_DIVERGE, ev);
		return true;
	}

	/* level: a jump that stays */
	if (s->pend && isfinite(L)) {
		if (L >= s->pend_base * s->pend_rel) {
			s->pend_lo = fmin(s->pend_lo, L);
			s->pend_hi = fmax(s->pend_hi, L);
			/* a level: its points closer to each other than to the points
			 * before, by sc_z */
			double own = fmax(log(s->pend_hi / s->pend_lo), th->sigma_floor_log);
			/* with one point before, twice the points */
			double need_n = s->pend_k == 1 ? sc->sc_level_n1 : sc->sc_level_n;
			if (++s->pend_n >= need_n &&
			    log(s->pend_lo / s->pend_base) >= sc->sc_z * own) {
				char before[96];
				points_before(before, sizeof(before), s->pend_k, s->pend_base, s->pend_z);
				snprintf(what, sizeof(what),
				         "loss rose to %s at step %s, x%.2g %s, and stayed there for %u points "
				         "(now %s)%s", gw_det_fmt_num(a, sizeof(a), s->pend_first),
				         gw_fmt_int(sb, sizeof(sb), s->pend_step), s->pend_first / s->pend_base,
				         before, s->pend_n, gw_det_fmt_num(c, sizeof(c), L), note);
				sc_raise(s, ctx, "level", s->pend_first / s->pend_base >= th->sp_crit_rel, what,
				         CAUSE_DIVERGE, ACTION_DIVERGE,
				         json_pack("{s:s, s:I, s:o, s:I, s:o, s:o, s:I, s:o, s:o}",
				                   "metric", "loss", "step", (json_int_t)s->pend_step,
				                   "value", gw_json_num(s->pend_first),
				                   "prior_points", (json_int_t)s->pend_k,
				                   "prior_max", gw_json_num(s->pend_base),
				                   "spreads", gw_json_num(s->pend_z),
				                   "points_above", (json_int_t)s->pend_n,
				                   "last", gw_json_num(L), "loss_scale", gw_json_num(scale)));
				return true;
			}
		} else {
			s->pend = false;
		}
	}
	if (!s->pend && hl &&
	    ((zl && rl.ratio >= sc->sc_level_rel) ||
	     (armed && rl.k == 1 && rl.ratio >= sc->sc_gross_rel &&
	      L - rl.max >= sc->sc_abs_rise))) {
		s->pend = true;
		s->pend_n = 1;
		s->pend_k = (unsigned)rl.k;
		s->pend_base = rl.max;
		s->pend_rel = rl.k >= 2 ? sc->sc_level_rel : sc->sc_gross_rel;
		s->pend_first = s->pend_lo = s->pend_hi = L;
		s->pend_z = rl.k >= 2 ? rl.z : NAN;
		s->pend_step = step;
	}

	/* climb */
	if (isfinite(L) && isfinite(s->last_loss)) {
		if (L > s->last_loss) {
			if (s->climb++ == 0) {
				s->climb_from = s->last_loss;
				s->climb_step = s->last_step;
			}
		} else {
			s->climb = 0;
		}
		/* the grad norm up too, over the highest point before this one */
		bool gn_up = hg && rg.k >= 2 && rg.ratio >= sc->sc_both_gn_rel;
		if (armed && s->climb >= sc->sc_climb_n && s->climb_from > 0 && gn_up &&
		    L >= sc->sc_climb_rel * s->climb_from && L - s->climb_from >= sc->sc_abs_rise) {
			char fb[32];
			snprintf(what, sizeof(what),
			         "loss climbed on %u lines in a row, from %s at step %s to %s at step %s "
			         "(x%.2g)%s", s->climb, gw_det_fmt_num(a, sizeof(a), s->climb_from),
			         gw_fmt_int(fb, sizeof(fb), s->climb_step), gw_det_fmt_num(b, sizeof(b), L),
			         gw_fmt_int(sb, sizeof(sb), step),
			         L / s->climb_from, note);
			sc_raise(s, ctx, "climb", L / s->climb_from >= th->sp_crit_rel, what, CAUSE_DIVERGE,
			         ACTION_DIVERGE,
			         json_pack("{s:I, s:I, s:o, s:o, s:I, s:o}", "from_step",
			                   (json_int_t)s->climb_step, "step", (json_int_t)step,
			                   "from", gw_json_num(s->climb_from), "value", gw_json_num(L),
			                   "rises", (json_int_t)s->climb, "grad_norm", gw_json_num(G)));
			return true;
		}
	}

	/* frozen */
	if (isfinite(L)) {
		if (s->frz_n > 0 && L == s->frz_v) {
			s->frz_n++;
		} else {
			s->frz_v = L;
			s->frz_n = 1;
			s->frz_from = step;
			s->frz_gn_lo = s->frz_gn_hi = NAN;
		}
		if (isfinite(G)) {
			s->frz_gn_lo = isnan(s->frz_gn_lo) ? G : fmin(s->frz_gn_lo, G);
			s->frz_gn_hi = isnan(s->frz_gn_hi) ? G : fmax(s->frz_gn_hi, G);
		}
		/* a loss that stays put while the grad norm moves is a loss defined
		 * to be constant (a policy-gradient surrogate is 0 at the sampling
		 * policy), not a model that stopped */
		bool gn_moves = isfinite(s->frz_gn_lo) && s->frz_gn_hi > s->frz_gn_lo;
		if (!gn_moves && s->frz_n >= sc->sc_frozen_n &&
		    (double)(step - s->frz_from) >= sc->sc_frozen_steps) {
			char fb[32];
			snprintf(what, sizeof(what),
			         "loss has stayed at exactly %s on %u lines, from step %s to %s: the "
			         "model is not learning", gw_det_fmt_num(a, sizeof(a), L), s->frz_n,
			         gw_fmt_int(fb, sizeof(fb), s->frz_from), gw_fmt_int(sb, sizeof(sb), step));
			sc_raise(s, ctx, "frozen", false, what,
			         "no update reaches the weights: LR 0 or a frozen model, gradients zeroed "
			         "or skipped (fp16 overflow), dead units, labels the model cannot learn; or "
			         "the log repeats one value",
			         "check that the optimizer steps (LR, requires_grad, skipped steps), the "
			         "grad norm, and whether the printed loss is updated at all",
			         json_pack("{s:I, s:I, s:o, s:I}", "from_step", (json_int_t)s->frz_from,
			                   "step", (json_int_t)step, "value", gw_json_num(L),
			                   "lines", (json_int_t)s->frz_n));
			return true;
		}
	}
	return false;
}

/* The first point after a restart against the points before it (the
 * resumed rule at the top); true when a verdict was given. */
bool gw__sc_resumed(struct sc_state *s, const struct gw_det_ctx *ctx, double L, double G)
{
	const struct gw_thresholds *th = ctx->th;
	const struct sc_th *sc = gw_det_own_th(ctx);
	double pl[SC_KEEP], pg[SC_KEEP];
	size_t kmax = (size_t)sc->sc_prior_max;
	size_t kl = prior_of(s, s->loss, kmax, true, pl), kg = prior_of(s, s->gn, kmax, true, pg);
	struct rise rl, rg;
	if (kl < 3 || kg < 3 || !rise_of(pl, kl, L, &rl) || !rise_of(pg, kg, G, &rg))
		return false;
	rise_spread(&rl, th);
	rise_spread(&rg, th);
	if (!(rl.ratio > 1 && rl.z >= need_z(sc, kl) && rg.ratio >= sc->sc_res_gn_rel &&
	      rg.z >= need_z(sc, kg)))
		return false;
	const struct gw_restart *rs = ctx->restart;
	char a[24], b[24], c[24], d[24], e[24], sb[32], kb[32], what[400];
	snprintf(what, sizeof(what),
	         "after the restart from step %s, step %s logged loss %s (%s) and grad norm %s "
	         "(x%.2g) against the highest of the %zu points before the restart (%s, %s; %.0f and "
	         "%.0f spreads of them): the run did not go on from where it was saved",
	         gw_fmt_int(kb, sizeof(kb), rs->ckpt_step), gw_fmt_int(sb, sizeof(sb), ctx->rec->step),
	         gw_det_fmt_num(a, sizeof(a), L), gw_det_fmt_pct(e, sizeof(e), log(rl.ratio)),
	         gw_det_fmt_num(b, sizeof(b), G), rg.ratio, kl, gw_det_fmt_num(c, sizeof(c), rl.max),
	         gw_det_fmt_num(d, sizeof(d), rg.max), rl.z, rg.z);
	s->points = kl + 1;   /* the context: the points before and this one */
	json_t *ev = rise_ev("grad_norm", G, &rg, ctx->rec->step);
	json_object_set_new(ev, "loss", gw_json_num(L));
	json_object_set_new(ev, "loss_prior_max", gw_json_num(rl.max));
	json_object_set_new(ev, "loss_ratio", gw_json_num(rl.ratio));
	json_object_set_new(ev, "loss_spreads", gw_json_num(rl.z));
	json_object_set_new(ev, "checkpoint_step", json_integer((json_int_t)rs->ckpt_step));
	sc_raise(s, ctx, "resumed", false, what,
	         "the resumed state is not the saved one: the optimizer state lost or taken from "
	         "another run, a checkpoint converted to another parallel layout (TP/PP) or loaded "
	         "onto the wrong parameters",
	         "compare the restart's checkpoint, its optimizer state and its parallel layout "
	         "with the run that saved it; the first steps after a resume should continue the "
	         "curve",
	         ev);
	return true;
}
