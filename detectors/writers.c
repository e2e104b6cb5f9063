/*
 * writers: which lines of a run are its primary writer's (see writers.h;
 * engine.h "Ranks" and "Interleaved writers").
 *
 * A ranked line of another rank only moves that rank's position.  Lines
 * without a rank are watched for the interleaved-writers pattern: each
 * rewind the segment rules report is counted as shallow or not, and after
 * IW_STREAK shallow ones in a row (to two different steps, or all in time
 * by ts) the run is interleaved and from then on another writer's repeat of
 * a step is folded: never a segment nor a detector's input.  The rules
 * read where the run stands from the engine (struct gw_writers_pos) and
 * keep their own state; nothing here knows the engine.
 */
#include "writers.h"

#include "arena.h"
#include "robust.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

#define IW_DEPTH 8            /* interleaved writers: how far below a repeat may go */
#define IW_SHORT 4            /* records of a segment a shallow rewind may end */
#define IW_STREAK 3           /* shallow rewinds in a row that recognise them */
#define IW_LATE_INTERVALS 4   /* a repeat comes within this many step intervals */

void gw__writers_init(struct gw_writers *w)
{
	*w = (struct gw_writers){.hi_step = -1, .label_rank = -1, .iw_last_target = -1,
	                         .iw_step = -1};
}

/* A line with a rank: its rank's position (rank 0's too). */
static void note_rank(struct gw_writers *w, struct gw_arena *arena, const struct gw_rec *rec,
                      double now)
{
	if (rec->rank < GW_RANK_TRACK && !w->ranks &&
	    (w->ranks = gw_arena_alloc(arena, GW_RANK_TRACK * sizeof(*w->ranks))))
		for (int k = 0; k < GW_RANK_TRACK; k++)
			w->ranks[k] = (struct gw_rank_pos){-1, NAN};
	if (rec->rank < GW_RANK_TRACK && w->ranks) {
		struct gw_rank_pos *p = &w->ranks[rec->rank];
		if (p->step < 0) {
			w->ranks_seen++;
			p->step = rec->step;
		} else if (!rec->event) {
			p->step = rec->step;
		}
		p->wall = now;
	}
	if (rec->rank > w->rank_max)
		w->rank_max = rec->rank;
}

/* Is this ranked line the run's primary writer's (engine.h "Ranks")? */
static bool rank_primary(struct gw_writers *w, const struct gw_rec *rec)
{
	if (!rec->rank_label)
		return rec->rank == 0;
	if (rec->event)
		return true;
	if (w->label_rank < 0)
		w->label_rank = rec->rank;
	return rec->rank == w->label_rank;
}

bool gw__writers_primary(struct gw_writers *w, struct gw_arena *arena, const struct gw_rec *rec,
                         double now)
{
	note_rank(w, arena, rec, now);
	if (rank_primary(w, rec))
		return true;
	w->rank_lines++;
	return false;
}

bool gw__writers_behind(const struct gw_writers *w, int64_t *rank, int64_t *step, double *wall)
{
	*rank = -1;
	if (w->ranks_seen < 2 || !w->ranks)
		return false;
	for (int k = 0; k < GW_RANK_TRACK; k++)
		if (w->ranks[k].step >= 0 && (*rank < 0 || w->ranks[k].step < *step)) {
			*rank = k;
			*step = w->ranks[k].step;
			*wall = w->ranks[k].wall;
		}
	return *rank >= 0;
}

/* The median of the run's recent step intervals (0 without any). */
static double step_interval(const struct gw_writers_pos *pos)
{
	double tmp[64];
	unsigned n = pos->ndts < 64 ? pos->ndts : 64;
	if (!n)
		return 0;
	memcpy(tmp, pos->dts, n * sizeof(double));
	return gw_median(tmp, n);
}

/* Does a repeat come soon enough after the last line to be another
 * writer's (ts unknown: yes)?  A restart takes longer than a few steps. */
static bool repeat_in_time(const struct gw_writers_pos *pos, const struct gw_rec *rec)
{
	if (isnan(rec->ts) || isnan(pos->last_ts))
		return true;
	return rec->ts - pos->last_ts <= fmax(1.0, IW_LATE_INTERVALS * step_interval(pos));
}

/* Is this rewind (the segment rules said so) a shallow one (engine.h)? */
static bool shallow_rewind(const struct gw_writers *w, const struct gw_writers_pos *pos,
                           const struct gw_rec *rec)
{
	return !rec->has_rank && w->hi_step - rec->step <= IW_DEPTH &&
	       pos->seg_records <= IW_SHORT && repeat_in_time(pos, rec);
}

bool gw__writers_rewind(struct gw_writers *w, const struct gw_writers_pos *pos,
                        const struct gw_rec *rec, uint64_t line)
{
	if (!shallow_rewind(w, pos, rec)) {
		w->iw_streak = w->iw_targets = w->iw_timed = 0;
		w->iw_last_target = -1;
		return false;
	}
	w->iw_streak++;
	w->iw_timed += !isnan(rec->ts) && !isnan(pos->last_ts);
	if (rec->step != w->iw_last_target)
		w->iw_targets++;
	w->iw_last_target = rec->step;
	if (w->iw_streak < IW_STREAK || (w->iw_targets < 2 && w->iw_timed < w->iw_streak))
		return false;
	w->interleaved = true;
	w->iw_step = rec->step;
	w->iw_line = line;
	w->folded++;
	return true;
}

bool gw__writers_fold_record(struct gw_writers *w, const struct gw_writers_pos *pos,
                             const struct gw_rec *rec)
{
	if (!w->interleaved || rec->has_rank || pos->seg_from_event || pos->last_step < 0)
		return false;
	bool repeat = rec->step < pos->last_step ||
	              (rec->step == pos->last_step && (rec->present & pos->last_present));
	if (!repeat || pos->last_step - rec->step > IW_DEPTH || !repeat_in_time(pos, rec))
		return false;
	w->folded++;
	return true;
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
static bool copy_of_event(const struct gw_writers *w, const struct gw_writers_pos *pos,
                          const struct gw_rec *rec)
{
	if (rec->has_rank)
		return false;
	if (strcmp(rec->event, "resumed") == 0)
		return pos->seg_from_event && rec->step == pos->resumed_step &&
		       gw__checkpoint_step(rec) == pos->resumed_ckpt && repeat_in_time(pos, rec) &&
		       (w->interleaved || (!isnan(rec->ts) && !isnan(pos->last_ts)));
	return w->interleaved && strcmp(rec->event, "checkpoint_saved") == 0 &&
	       pos->has_ckpt && pos->ckpt_step == rec->step;
}

bool gw__writers_fold_event(struct gw_writers *w, const struct gw_writers_pos *pos,
                            const struct gw_rec *rec)
{
	if (!copy_of_event(w, pos, rec))
		return false;
	w->folded++;
	return true;
}

void gw__writers_step(struct gw_writers *w, int64_t step, bool new_segment)
{
	if (step > w->hi_step || new_segment)
		w->hi_step = step;
}
