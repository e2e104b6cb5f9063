/*
 * short_context's parts (det_short.c, the detector and its thresholds;
 * det_short_check.c, its rules): the state and the thresholds both read.
 */
#ifndef GW_DET_SHORT_IMPL_H
#define GW_DET_SHORT_IMPL_H

#include "detector.h"

#define SC_KEEP 16   /* points kept: sc_prior_max's upper bound */

/* short_context's own thresholds: their defaults, ranges and reasons are
 * the table in det_short.c (thresholds.h, "Where they live"). */
struct sc_th {
	double sc_prior_max, sc_jump_rel, sc_z, sc_z3, sc_z2, sc_jump_rel2, sc_abs_rise,
	       sc_level_n1, sc_arm_steps, sc_level_rel, sc_level_n, sc_gross_rel,
	       sc_both_loss_rel, sc_both_gn_rel, sc_climb_n, sc_climb_rel, sc_collapse_rel,
	       sc_frozen_n, sc_frozen_steps, sc_res_gn_rel, sc_absurd;
};

struct sc_state {
	uint32_t incident;
	unsigned n, head;             /* the ring of the last points */
	double loss[SC_KEEP], gn[SC_KEEP];
	double scale[2];              /* the loss scale of the last point, the one before */
	int64_t last_step;            /* the last point's step */
	unsigned seg_n;               /* ... of which this segment's (the rules' context) */
	bool seg_first;               /* no point of this segment yet */
	uint64_t points;              /* points of the segment so far */
	/* a level being watched */
	bool pend;
	unsigned pend_n, pend_k;
	double pend_base, pend_rel, pend_first, pend_z, pend_lo, pend_hi;
	int64_t pend_step;
	/* frozen */
	double frz_v, frz_gn_lo, frz_gn_hi;
	unsigned frz_n;
	int64_t frz_from;
	/* climb */
	unsigned climb;
	double climb_from;
	int64_t climb_step;
	double last_loss;
};

/* The checks of one point (the rules at the top of det_short.c but
 * resumed); true when a verdict was given. */
bool gw__sc_check(struct sc_state *s, const struct gw_det_ctx *ctx, double L, double G,
                  double scale);

/* The resumed rule: the first point after a restart against the points
 * before it; true when a verdict was given. */
bool gw__sc_resumed(struct sc_state *s, const struct gw_det_ctx *ctx, double L, double G);

#endif
