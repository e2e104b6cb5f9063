/*
 * writers: which lines of a run are its primary writer's (engine.h
 * "Ranks" and "Interleaved writers"), for the engine (engine.c).
 *
 * A ranked line of another rank only moves that rank's position.  Lines
 * without a rank are watched for the interleaved-writers pattern: each
 * rewind segment_break reports is counted as shallow or not, and after
 * IW_STREAK shallow ones in a row (to two different steps, or all in time
 * by ts) the run is interleaved and from then on another writer's repeat of
 * a step is folded: counted, kept apart (e->apart), never a segment nor a
 * detector's input.  Nothing here allocates or does I/O.
 */
#include "engine_impl.h"

#include <math.h>
#include <string.h>

#define IW_DEPTH 8            /* interleaved writers: how far below a repeat may go */
#define IW_SHORT 4            /* records of a segment a shallow rewind may end */
#define IW_STREAK 3           /* shallow rewinds in a row that recognise them */
#define IW_LATE_INTERVALS 4   /* a repeat comes within this many step intervals */

void gw__writers_init(struct run *r)
{
	r->hi_step = -1;
	r->label_rank = -1;
	r->iw_last_target = -1;
	r->iw_step = -1;
	for (int k = 0; k < RANK_TRACK; k++) {
		r->rank_step[k] = -1;
		r->rank_wall[k] = NAN;
	}
}

void gw__writers_info(const struct run *r, struct gw_run_info *ri)
{
	ri->interleaved = r->interleaved;
	ri->iw_step = r->iw_step;
	ri->iw_line = r->iw_line;
	ri->folded = r->folded;
	ri->rank_lines = r->rank_lines;
	ri->ranks_seen = r->ranks_seen;
	ri->rank_max = r->rank_max;
	ri->label_rank = r->label_rank;
	ri->behind_rank = -1;
	ri->behind_wall = NAN;
	if (r->ranks_seen < 2)
		return;
	for (int k = 0; k < RANK_TRACK; k++)
		if (r->rank_step[k] >= 0 && (ri->behind_rank < 0 || r->rank_step[k] < ri->behind_step)) {
			ri->behind_rank = k;
			ri->behind_step = r->rank_step[k];
			ri->behind_wall = r->rank_wall[k];
		}
}

bool gw_engine_kept_apart(const struct gw_engine *e)
{
	return e->apart;
}

/* A line with a rank: its rank's position (rank 0's too). */
static void note_rank(struct run *r, const struct gw_rec *rec, double now)
{
	if (rec->rank < RANK_TRACK) {
		if (r->rank_step[rec->rank] < 0) {
			r->ranks_seen++;
			r->rank_step[rec->rank] = rec->step;
		} else if (!rec->event) {
			r->rank_step[rec->rank] = rec->step;
		}
		r->rank_wall[rec->rank] = now;
	}
	if (rec->rank > r->rank_max)
		r->rank_max = rec->rank;
}

/* Is this ranked line the run's primary writer's (engine.h "Ranks")? */
static bool rank_primary(struct run *r, const struct gw_rec *rec)
{
	if (!rec->rank_label)
		return rec->rank == 0;
	if (rec->event)
		return true;
	if (r->label_rank < 0)
		r->label_rank = rec->rank;
	return rec->rank == r->label_rank;
}

/* Does a repeat come soon enough after the last line to be another
 * writer's (ts unknown: yes)?  A restart takes longer than a few steps. */
static bool repeat_in_time(const struct run *r, const struct gw_rec *rec)
{
	if (isnan(rec->ts) || isnan(r->last_ts))
		return true;
	double dt = r->ndts ? gw__median_dts(r) : 0;
	return rec->ts - r->last_ts <= fmax(1.0, IW_LATE_INTERVALS * dt);
}

/* Is this rewind (segment_break said so) a shallow one (engine.h)? */
static bool shallow_rewind(const struct run *r, const struct gw_rec *rec)
{
	return !rec->has_rank && r->hi_step - rec->step <= IW_DEPTH &&
	       r->seg_records <= IW_SHORT && repeat_in_time(r, rec);
}

static void fold(struct gw_engine *e, struct run *r, const struct gw_rec *rec)
{
	r->records++;   /* stored apart by the daemon; another writer's copy of a step */
	r->folded++;
	r->present_ever |= rec->present;
	e->apart = true;
}

bool gw__writers_rewind(struct gw_engine *e, struct run *r, const struct gw_rec *rec,
                        uint64_t line)
{
	if (!shallow_rewind(r, rec)) {
		r->iw_streak = r->iw_targets = r->iw_timed = 0;
		r->iw_last_target = -1;
		return false;
	}
	r->iw_streak++;
	r->iw_timed += !isnan(rec->ts) && !isnan(r->last_ts);
	if (rec->step != r->iw_last_target)
		r->iw_targets++;
	r->iw_last_target = rec->step;
	if (r->iw_streak < IW_STREAK || (r->iw_targets < 2 && r->iw_timed < r->iw_streak))
		return false;
	r->interleaved = true;
	r->iw_step = rec->step;
	r->iw_line = line;
	if (e->hooks.on_writers && !e->quiet) {
		struct gw_writers_info wi = {.run = r->name, .step = rec->step, .line = line,
		                             .seg = r->seg};
		e->hooks.on_writers(e->hooks.data, &wi);
	}
	fold(e, r, rec);
	return true;
}

/* Once interleaved: is this line another writer's repeat of a step the run
 * has logged (at or below its last step, within IW_DEPTH, in time)? */
static bool repeat_of_another(const struct run *r, const struct gw_rec *rec)
{
	if (!r->interleaved || rec->has_rank || r->seg_from_event || r->last_step < 0)
		return false;
	bool repeat = rec->step < r->last_step ||
	              (rec->step == r->last_step && (rec->present & r->last_present));
	return repeat && r->last_step - rec->step <= IW_DEPTH && repeat_in_time(r, rec);
}

int64_t gw__checkpoint_step(const struct gw_rec *rec)
{
	json_t *cs = json_object_get(rec->attrs, "checkpoint_step");
	double v = json_number_value(cs);
	/* a step there is (one past GW_WIRE_STEP_MAX, 1e300 or inf would
	 * make the cast undefined); else the event's own */
	if (json_is_number(cs) && v >= 0 && v <= (double)GW_WIRE_STEP_MAX)
		return (int64_t)v;
	return rec->step;
}

/* Is this event another writer's copy of the one before it: a "resumed"
 * at the step (and from the checkpoint) of the one that opened the
 * segment, no metric line since, in time (known ts on both, or the run is
 * interleaved); once interleaved, a "checkpoint_saved" at the newest
 * one's step too. */
static bool copy_of_event(const struct run *r, const struct gw_rec *rec)
{
	if (rec->has_rank)
		return false;
	if (strcmp(rec->event, "resumed") == 0)
		return r->seg_from_event && rec->step == r->resumed_step &&
		       gw__checkpoint_step(rec) == r->resumed_ckpt && repeat_in_time(r, rec) &&
		       (r->interleaved || (!isnan(rec->ts) && !isnan(r->last_ts)));
	return r->interleaved && strcmp(rec->event, "checkpoint_saved") == 0 &&
	       r->ckpts[CKPT_KEEP - 1].attrs && r->ckpts[CKPT_KEEP - 1].step == rec->step;
}

bool gw__writers_primary(struct gw_engine *e, struct run *r, const struct gw_rec *rec, double now)
{
	note_rank(r, rec, now);
	if (rank_primary(r, rec))
		return true;
	r->rank_lines++;   /* stored apart by the daemon */
	e->apart = true;
	return false;
}

bool gw__writers_fold_record(struct gw_engine *e, struct run *r, const struct gw_rec *rec)
{
	if (!repeat_of_another(r, rec))
		return false;
	fold(e, r, rec);
	return true;
}

bool gw__writers_fold_event(struct gw_engine *e, struct run *r, const struct gw_rec *rec)
{
	if (!copy_of_event(r, rec))
		return false;
	r->folded++;
	e->apart = true;
	return true;
}
