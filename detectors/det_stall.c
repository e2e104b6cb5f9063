/*
 * stall: a live run that was logging steadily goes silent, or its
 * throughput collapses.
 *
 *  silence     (live only, on the wall-clock tick) the run has logged at
 *              least stall_min_records metric lines and has now been
 *              silent for longer than max(stall_min_seconds, stall_factor x
 *              its median interval between lines as received): the hang
 *              before a crash (an NCCL deadlock, a stuck checkpoint write).
 *              Only for a job that should still be logging:
 *               - the run has not ended (ctx->run_ended: a run_finished
 *                 event, its declared max_steps reached, its followed file
 *                 closed; engine.h "Run endings");
 *               - its lines were arriving live: the last one's ts was within
 *                 stall_fresh_seconds of the wall clock when it arrived, or
 *                 (a host whose clock is off) its last lines arrived at
 *                 least stall_live_ratio as fast as their ts advance,
 *                 measured from the oldest of up to LIVE_N lines kept
 *                 >= LIVE_SPACING s of ts apart.  A backlog -- `gradwatch
 *                 send` of an old log, a follower catching up on a finished
 *                 file -- arrives at once with its ts long past: no job that
 *                 can hang.  Lines without ts tell nothing and count as live.
 *              Resolved when the run logs again (a metric line or an event)
 *              or ends, saying how long it was silent.
 *              After a daemon restart (stall_restart) a run that was live
 *              when the daemon stopped -- its state rebuilt from its stored
 *              lines with their arrival times -- is watched from the
 *              daemon's start: its silence counts from then (the job had
 *              nowhere to send before), and the alert gives the downtime.
 *  throughput  the median of the last 16 throughput values falls below
 *              thr_collapse of the median of the 128 before them, outside
 *              the first 20 steps after a restart (which warm up): a hung
 *              data loader, a failing node, thermal throttling.
 * The throughput rule needs no wall clock, so replay runs it too.
 */
#include "detector.h"
#include "util.h"
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
#define LIVE_N 16
#define LIVE_SPACING 1.0

struct stall_state {
	uint32_t incident;
	bool silent;              /* a silence incident is open */
	double last_wall;         /* arrival of the last line (live) */
	double iv[INTERVALS];     /* intervals between arrivals */
	unsigned niv, next_iv;
	uint64_t seen;            /* metric lines received live */
	int64_t last_step;
	bool thr_active;
	/* the rate rule: the last ts and its arrival, and (ts, arrival) of up
	 * to LIVE_N lines >= LIVE_SPACING s of ts apart */
	double ts_last, ts_wall;
	double lv_ts[LIVE_N], lv_wall[LIVE_N];
	unsigned nlv, next_lv;
	double watch_until;       /* when a silence from now on would be one (tick) */
	/* after a daemon restart (stall_restart): the silence counts from the
	 * daemon's start, watch_from; it was down from down_from */
	double watch_from, down_from;
};

static void stall_init(void *st, const struct gw_det_ctx *ctx)
{
	struct stall_state *s = st;
	s->last_wall = NAN;
	s->last_step = -1;
	s->ts_last = s->ts_wall = NAN;
	s->watch_until = -INFINITY;
	s->watch_from = s->down_from = -INFINITY;
}

/* The lowest positive finite throughput of the last THR_CUR records, 0
 * when there is none or fewer records: a lower bound of the median of
 * those the rule keeps. */
static double recent_low(const struct gw_hist *h)
{
	struct gw_win w = gw_hist_recent(h, GW_COL_THROUGHPUT, THR_CUR);
	if (gw_win_len(&w) < THR_CUR)
		return 0;
	double lo = INFINITY;
	for (size_t i = 0; i < w.na; i++)
		lo = w.a[i] > 0 && w.a[i] < lo ? w.a[i] : lo;
	for (size_t i = 0; i < w.nb; i++)
		lo = w.b[i] > 0 && w.b[i] < lo ? w.b[i] : lo;
	return isfinite(lo) ? lo : 0;
}

static void throughput(struct stall_state *s, const struct gw_det_ctx *ctx)
{
	const struct gw_thresholds *th = ctx->th;
	const struct gw_restart *rs = ctx->restart;
	if (rs->active && rs->k <= THR_RESTART_SKIP)
		return;
	/* cheap bounds first (robust.h): a collapse needs the base median
	 * above mc / thr_collapse; they rule out nearly every line.  The
	 * recent window's lowest kept value bounds its median from below
	 * as well as a kept order statistic does, and a pass over 16 values
	 * costs less than renewing one every few lines */
	double bc, bb;
	if (!s->thr_active &&
	    gw_hist_recent_bound(ctx->hist, GW_COL_THROUGHPUT, THR_BASE, THR_CUR, 1, &bb) &&
	    ((bc = recent_low(ctx->hist)) > 0 ||
	     gw_hist_recent_bound(ctx->hist, GW_COL_THROUGHPUT, THR_CUR, 0, -1, &bc)) &&
	    gw_mid_surely_below(bb, bc / th->thr_collapse))
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
	         gw_fmt_int(sb, sizeof(sb), ctx->rec->step));
	snprintf(v.cause, sizeof(v.cause),
	         "a slow or failing node, a starved data loader, throttling, or a collective waiting on a "
	         "straggler");
	snprintf(v.action, sizeof(v.action),
	         "check GPU utilisation and clocks on every node, the data loader's queue, and the "
	         "network; look for a straggler rank");
	v.evidence = json_pack("{s:s, s:o, s:o, s:i, s:i}", "rule", "throughput",
	                       "baseline_median", gw_json_num(mb),
	                       "recent_median", gw_json_num(mc), "recent_n", THR_CUR,
	                       "baseline_n", THR_BASE);
	gw_det_raise(ctx, &v);
}

/* Keep the line's ts and arrival for the rate rule. */
static void note_ts(struct stall_state *s, double ts, double now)
{
	if (isnan(ts))
		return;
	s->ts_last = ts;
	s->ts_wall = now;
	double newest = s->nlv ? s->lv_ts[(s->next_lv + LIVE_N - 1) % LIVE_N] : NAN;
	if (s->nlv && ts < newest)
		s->nlv = s->next_lv = 0;   /* ts went back: another clock or an older log */
	if (s->nlv && ts < newest + LIVE_SPACING)
		return;
	s->lv_ts[s->next_lv] = ts;
	s->lv_wall[s->next_lv] = now;
	s->next_lv = (s->next_lv + 1) % LIVE_N;
	if (s->nlv < LIVE_N)
		s->nlv++;
}

/* Were the run's lines arriving live?  *lag gets the last ts's lag behind
 * the wall clock, *ratio the arrival rate against the ts rate (NaN when
 * not measured). */
static bool arriving_live(const struct stall_state *s, const struct gw_thresholds *th,
                          double *lag, double *ratio)
{
	*lag = *ratio = NAN;
	if (isnan(s->ts_last))
		return true;   /* no ts: nothing says it is a backlog */
	*lag = s->ts_wall - s->ts_last;
	unsigned oldest = (s->next_lv + LIVE_N - s->nlv) % LIVE_N;
	double ts_span = s->nlv ? s->ts_last - s->lv_ts[oldest] : 0;
	if (ts_span > 0)
		*ratio = (s->ts_wall - s->lv_wall[oldest]) / ts_span;
	if (fabs(*lag) <= th->stall_fresh_seconds)
		return true;
	return ts_span > 0 && *ratio >= th->stall_live_ratio;
}

/* The silence is over: a line came (this one), or the run finished. */
static void end_silence(struct stall_state *s, const struct gw_det_ctx *ctx, bool finished,
                        double quiet)
{
	s->silent = false;
	struct gw_verdict v = {.incident = s->incident};
	char sb[32], nb[32], how[96];
	const char *reason = NULL;
	if (finished) {
		reason = json_string_value(json_object_get(ctx->rec->attrs, "reason"));
		snprintf(how, sizeof(how), "finished%s%s%s", reason && *reason ? " (" : "",
		         reason && *reason ? reason : "", reason && *reason ? ")" : "");
	} else {
		v.step_set = !ctx->rec->event;
		v.step = ctx->rec->step;
		snprintf(how, sizeof(how), "logged again at step %s",
		         gw_fmt_int(nb, sizeof(nb), ctx->rec->step));
	}
	snprintf(v.summary, sizeof(v.summary), "the run %s after %.0f s of silence (last step before it %s)",
	         how, quiet, gw_fmt_int(sb, sizeof(sb), s->last_step));
	v.evidence = json_pack("{s:s, s:o, s:I, s:s, s:s?}", "rule", "silence", "silent_seconds",
	                       gw_json_num(quiet), "last_step", (json_int_t)s->last_step,
	                       "ended_by", finished ? "run_finished" : "line", "reason", reason);
	gw_det_resolve_v(ctx, &v);
}

/* A line of the run arrived (live): intervals, the rate rule, and the end
 * of a silence. */
static void heard(struct stall_state *s, const struct gw_det_ctx *ctx)
{
	if (!ctx->live || !isfinite(ctx->now))
		return;
	double quiet = isfinite(s->last_wall) ? ctx->now - s->last_wall : NAN;
	/* the daemon's downtime is no interval of the run's */
	bool across_restart = s->watch_from > s->last_wall;
	s->watch_from = s->down_from = -INFINITY;
	if (quiet >= 0 && !across_restart) {
		s->iv[s->next_iv] = quiet;
		s->next_iv = (s->next_iv + 1) % INTERVALS;
		if (s->niv < INTERVALS)
			s->niv++;
	}
	s->last_wall = ctx->now;
	note_ts(s, ctx->rec->ts, ctx->now);
	if (s->silent)
		end_silence(s, ctx, false, quiet);
}

static void stall_record(void *st, const struct gw_det_ctx *ctx)
{
	struct stall_state *s = st;
	heard(s, ctx);
	if (ctx->live && isfinite(ctx->now)) {
		s->seen++;
		s->last_step = ctx->rec->step;
	}
	throughput(s, ctx);
}

static void stall_event(void *st, const struct gw_det_ctx *ctx)
{
	struct stall_state *s = st;
	if (strcmp(ctx->rec->event, "run_finished") != 0) {
		heard(s, ctx);
		return;
	}
	/* the run ended (a line, or gw_engine_run_ended): no silence after */
	if (s->silent)
		end_silence(s, ctx, true, ctx->now - s->last_wall);
}

static void stall_tick(void *st, const struct gw_det_ctx *ctx)
{
	struct stall_state *s = st;
	const struct gw_thresholds *th = ctx->th;
	s->watch_until = -INFINITY;
	if (!ctx->live || s->silent || ctx->run_ended || !isfinite(s->last_wall) ||
	    (double)s->seen < th->stall_min_records || s->niv < 4)
		return;
	double tmp[INTERVALS];
	memcpy(tmp, s->iv, s->niv * sizeof(double));
	double usual = gw_median(tmp, s->niv);
	double quiet = ctx->now - s->last_wall;
	/* after a daemon restart the silence counts from its start: the job
	 * had no daemon to send to before */
	double since = fmax(s->last_wall, s->watch_from);
	double window = fmax(th->stall_min_seconds, th->stall_factor * usual);
	/* until the silence is long enough, and a tick after it, when it
	 * would be raised then (the lines were arriving live) */
	double lag0, ratio0;
	if (arriving_live(s, th, &lag0, &ratio0))
		s->watch_until = since + window + 1;
	double lag, ratio;
	if (ctx->now - since <= window || !arriving_live(s, th, &lag, &ratio))
		return;
	s->silent = true;
	struct gw_verdict v = {.incident = ++s->incident, .severity = GW_SEV_WARNING,
	                       .step_set = true, .step = s->last_step};
	char sb[32];
	bool restarted = s->watch_from > s->last_wall;
	if (restarted)
		snprintf(v.summary, sizeof(v.summary),
		         "the run has logged nothing for %.0f s since gradwatchd restarted (it was down "
		         "%.0f s; the run's last line came %.0f s before it stopped), %.0fx its usual "
		         "interval of %.2g s (last step %s)", ctx->now - s->watch_from,
		         s->watch_from - s->down_from, s->down_from - s->last_wall,
		         usual > 0 ? (ctx->now - s->watch_from) / usual : 0.0, usual,
		         gw_fmt_int(sb, sizeof(sb), s->last_step));
	else
		snprintf(v.summary, sizeof(v.summary),
		         "the run has logged nothing for %.0f s, %.0fx its usual interval of %.2g s (last "
		         "step %s)", quiet, usual > 0 ? quiet / usual : 0.0, usual,
		         gw_fmt_int(sb, sizeof(sb), s->last_step));
	snprintf(v.cause, sizeof(v.cause),
	         "the job hangs (a collective deadlock, a stuck checkpoint write, a dead data loader) or "
	         "died without a word");
	snprintf(v.action, sizeof(v.action),
	         "check the job's processes and their stacks (py-spy dump), NCCL and storage health, and "
	         "the scheduler's view of the job; a job that ended should send run_finished "
	         "(gradwatch.Client.close() does)");
	v.evidence = json_pack("{s:s, s:o, s:o, s:I, s:o, s:o}", "rule", "silence", "silent_seconds",
	                       gw_json_num(quiet), "usual_interval_seconds", gw_json_num(usual),
	                       "last_step", (json_int_t)s->last_step,
	                       "ts_lag_seconds", gw_json_num(lag),
	                       "arrival_rate_ratio", gw_json_num(ratio));
	if (v.evidence && restarted) {
		json_object_set_new(v.evidence, "daemon_down_from", gw_json_num(s->down_from));
		json_object_set_new(v.evidence, "daemon_down_to", gw_json_num(s->watch_from));
	}
	gw_det_raise(ctx, &v);
}

/* The daemon restarted: a run that was live before it stopped (it had not
 * ended, logged enough, and its lines were arriving live) is watched from
 * now on, as if its last line had come now; any other run is not. */
static bool stall_restart(void *st, const struct gw_det_ctx *ctx, double down_from)
{
	struct stall_state *s = st;
	double lag, ratio;
	if (!ctx->live || ctx->run_ended || !isfinite(s->last_wall) || !isfinite(ctx->now) ||
	    (double)s->seen < ctx->th->stall_min_records || s->niv < 4 ||
	    !arriving_live(s, ctx->th, &lag, &ratio))
		return false;
	s->watch_from = ctx->now;
	s->down_from = fmax(down_from, s->last_wall);
	return true;
}

static double stall_watch_until(const void *st)
{
	return ((const struct stall_state *)st)->watch_until;
}

const struct gw_detector gw_det_stall = {
	.name = "stall",
	.state_size = sizeof(struct stall_state),
	.init = stall_init,
	.on_record = stall_record,
	.on_event = stall_event,
	.on_tick = stall_tick,
	.on_restart = stall_restart,
	.watch_until = stall_watch_until,
};
