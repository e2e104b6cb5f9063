/*
 * stall: a run that was logging steadily goes silent, or its throughput
 * collapses.
 *
 *  silence     (live only, on the wall-clock tick) the run has logged at
 *              least stall_min_records lines and has now been silent for
 *              longer than max(stall_min_seconds, stall_factor x its median
 *              interval between lines as received): the hang before a crash
 *              (an NCCL deadlock, a stuck checkpoint write).  Resolved when
 *              the run logs again.
 *  throughput  the median of the last 16 throughput values falls below
 *              thr_collapse of the median of the 128 before them, outside
 *              the first 20 steps after a restart (which warm up): a hung
 *              data loader, a failing node, thermal throttling.
 * The throughput rule needs no wall clock, so replay runs it too.
 */
#include "detector.h"
#include "hist.h"
#include "regime.h"
#include "robust.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define INTERVALS 16
#define THR_CUR 16
#define THR_BASE 128
#define THR_RESTART_SKIP 20

struct stall_state {
	uint32_t incident;
	bool silent;              /* a silence incident is open */
	double last_wall;
	double iv[INTERVALS];
	unsigned niv, next_iv;
	uint64_t seen;
	int64_t last_step;
	bool thr_active;
};

static void stall_init(void *st, const struct gw_det_ctx *ctx)
{
	struct stall_state *s = st;
	s->last_wall = NAN;
	s->last_step = -1;
}

static void throughput(struct stall_state *s, const struct gw_det_ctx *ctx)
{
	const struct gw_thresholds *th = ctx->th;
	const struct gw_restart *rs = ctx->restart;
	if (rs->active && rs->k <= THR_RESTART_SKIP)
		return;
	struct gw_win w = gw_hist_recent(ctx->hist, GW_COL_THROUGHPUT, THR_CUR + THR_BASE);
	if (gw_win_len(&w) < THR_CUR + THR_BASE)
		return;
	double cur[THR_CUR], base[THR_BASE];
	size_t nc = 0, nb = 0;
	for (size_t i = 0; i < THR_BASE + THR_CUR; i++) {
		double x = gw_win_at(&w, i);
		if (!isfinite(x) || x <= 0)
			continue;
		if (i < THR_BASE)
			base[nb++] = x;
		else
			cur[nc++] = x;
	}
	if (nc < THR_CUR || nb < THR_BASE / 2)
		return;
	double mc = gw_median(cur, nc);
	/* low needs mb > mc / thr_collapse: a count rules most lines out */
	struct gw_win bw = {.a = base, .na = nb};
	if (!s->thr_active && !gw_median_maybe_ge(&bw, mc / th->thr_collapse))
		return;
	double mb = gw_median(base, nb);
	bool low = mc < th->thr_collapse * mb;
	if (s->thr_active) {
		if (mc >= 0.8 * mb) {
			s->thr_active = false;
			gw_det_resolve(ctx, s->incident);
		}
		return;
	}
	if (!low)
		return;
	s->thr_active = true;
	struct gw_verdict v = {.incident = ++s->incident, .severity = GW_SEV_WARNING};
	char a[24], b[24], sb[32];
	snprintf(v.summary, sizeof(v.summary),
	         "throughput collapsed to %.0f%% of its recent level (%s \u2192 %s, medians of the last %d "
	         "and the %d steps before, to step %s)", 100 * mc / mb, gw_det_fmt_num(a, sizeof(a), mb),
	         gw_det_fmt_num(b, sizeof(b), mc), THR_CUR, THR_BASE,
	         gw_det_fmt_step(sb, sizeof(sb), ctx->rec->step));
	snprintf(v.cause, sizeof(v.cause),
	         "a slow or failing node, a starved data loader, throttling, or a collective waiting on a "
	         "straggler");
	snprintf(v.action, sizeof(v.action),
	         "check GPU utilisation and clocks on every node, the data loader's queue, and the "
	         "network; look for a straggler rank");
	v.evidence = json_pack("{s:s, s:f, s:f, s:i, s:i}", "rule", "throughput", "baseline_median", mb,
	                       "recent_median", mc, "recent_n", THR_CUR, "baseline_n", THR_BASE);
	gw_det_raise(ctx, &v);
}

static void stall_record(void *st, const struct gw_det_ctx *ctx)
{
	struct stall_state *s = st;
	if (ctx->live && isfinite(ctx->now)) {
		if (isfinite(s->last_wall) && ctx->now >= s->last_wall) {
			s->iv[s->next_iv] = ctx->now - s->last_wall;
			s->next_iv = (s->next_iv + 1) % INTERVALS;
			if (s->niv < INTERVALS)
				s->niv++;
		}
		s->last_wall = ctx->now;
		s->seen++;
		s->last_step = ctx->rec->step;
		if (s->silent) {
			s->silent = false;
			gw_det_resolve(ctx, s->incident);
		}
	}
	throughput(s, ctx);
}

static void stall_tick(void *st, const struct gw_det_ctx *ctx)
{
	struct stall_state *s = st;
	const struct gw_thresholds *th = ctx->th;
	if (!ctx->live || s->silent || !isfinite(s->last_wall) || (double)s->seen < th->stall_min_records ||
	    s->niv < 4)
		return;
	double tmp[INTERVALS];
	memcpy(tmp, s->iv, s->niv * sizeof(double));
	double usual = gw_median(tmp, s->niv);
	double quiet = ctx->now - s->last_wall;
	if (quiet <= fmax(th->stall_min_seconds, th->stall_factor * usual))
		return;
	s->silent = true;
	struct gw_verdict v = {.incident = ++s->incident, .severity = GW_SEV_WARNING,
	                       .step_set = true, .step = s->last_step};
	char sb[32];
	snprintf(v.summary, sizeof(v.summary),
	         "the run has logged nothing for %.0f s, %.0fx its usual interval of %.2g s (last step %s)",
	         quiet, usual > 0 ? quiet / usual : 0.0, usual, gw_det_fmt_step(sb, sizeof(sb), s->last_step));
	snprintf(v.cause, sizeof(v.cause),
	         "the job hangs (a collective deadlock, a stuck checkpoint write, a dead data loader) or "
	         "died without a word");
	snprintf(v.action, sizeof(v.action),
	         "check the job's processes and their stacks (py-spy dump), NCCL and storage health, and "
	         "the scheduler's view of the job");
	v.evidence = json_pack("{s:s, s:f, s:f, s:I}", "rule", "silence", "silent_seconds", quiet,
	                       "usual_interval_seconds", usual, "last_step", (json_int_t)s->last_step);
	gw_det_raise(ctx, &v);
}

const struct gw_detector gw_det_stall = {
	.name = "stall",
	.state_size = sizeof(struct stall_state),
	.init = stall_init,
	.on_record = stall_record,
	.on_tick = stall_tick,
};
