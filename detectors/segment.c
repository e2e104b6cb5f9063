/*
 * Segments (engine.h): when a run's next segment starts, and what starting
 * one does.
 *
 * A metric record starts one when it rewinds (a step below the last, or
 * the same step repeating a field it already had) or comes after a
 * wall-clock gap of at least max(gap_min_seconds, gap_factor x the median
 * of the run's last GAP_HIST step intervals); a "resumed" event starts one
 * itself (engine.c).  The median is taken only for a gap that is longer
 * than gap_min_seconds already: no shorter one can pass.  A line that
 * arrived late (lines swapped on the way) is no rewind.  When a segment
 * restarts from checkpoint step S, the history gives up its records after
 * S as the replay copy (gw_hist_cut) and the regime before S is
 * snapshotted (gw_regime_open) into the run's restart, allocated from its
 * arena at its first restart.  The engine then calls the hooks
 * (engine.c).
 */
#include "run.h"

#include "log.h"
#include "robust.h"

#include <math.h>
#include <string.h>

#define GAP_MIN_INTERVALS 4   /* intervals known before a gap can split */

void gw__note_interval(struct run *r, double dt)
{
	r->dts[r->dts_next] = dt;
	r->dts_next = (r->dts_next + 1) % GAP_HIST;
	if (r->ndts < GAP_HIST)
		r->ndts++;
}

/* The median of the run's recent step intervals. */
static double median_dts(const struct run *r)
{
	double tmp[GAP_HIST];
	memcpy(tmp, r->dts, r->ndts * sizeof(double));
	return gw_median(tmp, r->ndts);
}

void gw__writers_pos(const struct run *r, struct gw_writers_pos *pos)
{
	const struct ckpt *c = &r->ckpts[CKPT_KEEP - 1];
	*pos = (struct gw_writers_pos){
		.last_step = r->last_step, .last_present = r->last_present, .last_ts = r->last_ts,
		.dts = r->dts, .ndts = r->ndts, .seg_records = r->seg_records,
		.seg_from_event = r->seg_from_event, .resumed_step = r->resumed_step,
		.resumed_ckpt = r->resumed_ckpt, .has_ckpt = c->attrs != NULL, .ckpt_step = c->step,
	};
}

enum gw__break gw__segment_break(const struct run *r, const struct gw_rec *rec)
{
	if (r->seg == 0)
		return GW__BREAK_START;
	if (r->seg_from_event)
		return GW__NO_BREAK;   /* the resumed event opened it; this line is its first */
	bool rewind = rec->step < r->last_step ||
	              (rec->step == r->last_step && (rec->present & r->last_present));
	if (rewind)
		return GW__BREAK_REWIND;
	if (!isnan(rec->ts) && !isnan(r->last_ts) && r->ndts >= GAP_MIN_INTERVALS &&
	    rec->ts - r->last_ts > r->th->gap_min_seconds) {
		double need = fmax(r->th->gap_min_seconds, r->th->gap_factor * median_dts(r));
		if (rec->ts - r->last_ts > need)
			return GW__BREAK_GAP;
	}
	return GW__NO_BREAK;
}

/* Its step lies strictly between the newest step of the history below the
 * last step and the last step, and its ts (if both are known) is not after
 * the last line's.  A restart replays steps that were logged (S+1..T), or,
 * when its first step was lost, comes a restart gap later: neither
 * passes. */
bool gw__arrived_late(const struct run *r, const struct gw_rec *rec)
{
	if (r->seg_from_event || !(rec->step < r->last_step) || r->seg_records < 2)
		return false;
	if (!isnan(rec->ts) && !isnan(r->last_ts) && rec->ts > r->last_ts)
		return false;
	struct gw_hist_rec h;
	for (size_t i = 0; i < 2 && gw_hist_at(&r->hist, i, &h); i++)
		if (h.step < r->last_step)
			return rec->step > h.step;
	return false;
}

void gw__segment_start(struct run *r, bool restart_point, bool go_on, int64_t restart_step,
                       bool from_event)
{
	r->seg++;
	if (go_on)
		r->ended = false;   /* a restart: the job goes on */
	r->seg_records = 0;
	r->seg_fired = 0;
	r->seg_from_event = from_event;
	if (r->restart)
		memset(r->restart, 0, sizeof(*r->restart));
	if (!restart_point) {
		gw_hist_end_replay(&r->hist);
		return;
	}
	int64_t T = gw_hist_cut(&r->hist, restart_step);
	if (!r->restart && !(r->restart = gw_arena_alloc(&r->arena, sizeof(*r->restart))))
		gw_log_err("no memory for a restart regime: run %s, segment %lld not judged against it",
		           r->name, (long long)r->seg);
	if (r->restart)
		gw_regime_open(r->restart, restart_step, T, &r->hist, r->th);
}
