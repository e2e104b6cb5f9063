/*
 * writers: which lines of a run are its primary writer's (engine.h "Ranks"
 * and "Interleaved writers").  Internal to the detector engine.
 *
 * The state of one run (struct gw_writers, in the engine's run) and the
 * rules, which read where the run stands (struct gw_writers_pos, filled by
 * the engine) and answer: is this line the run's, is it another writer's
 * repeat to fold, did this rewind recognise interleaved writers.  What
 * follows from an answer -- counting the line, keeping it apart, calling a
 * hook -- is the engine's.  The positions of ranks 0..GW_RANK_TRACK-1 are
 * allocated (from the run's arena) at the run's first line with a rank.
 * No I/O.
 */
#ifndef GW_WRITERS_H
#define GW_WRITERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

#define GW_RANK_TRACK 64      /* ranks whose position is kept (engine.h "Ranks") */

struct gw_arena;

/* The last step and wall clock of one rank (-1 / NaN: none). */
struct gw_rank_pos {
	int64_t step;
	double wall;
};

struct gw_writers {
	/* "Interleaved writers" */
	int64_t hi_step;          /* highest step of a primary metric record */
	unsigned iw_streak;       /* shallow rewinds in short segments, in a row ... */
	unsigned iw_targets;      /* ... how many different steps they went back to ... */
	unsigned iw_timed;        /* ... and how many had a ts (in time) */
	int64_t iw_last_target;
	bool interleaved;         /* recognised: repeats are folded, no segments */
	int64_t iw_step;          /* the step and line it was recognised at */
	uint64_t iw_line;
	uint64_t folded;          /* lines folded as another writer's since */
	/* "Ranks" */
	uint64_t rank_lines;      /* lines of ranks that are not the run's primary writer */
	int64_t label_rank;       /* the rank label whose lines are the run's, -1: none yet */
	uint32_t rank_max;        /* highest rank seen (ranks_seen > 0) */
	uint32_t ranks_seen;      /* distinct ranks among the tracked ones */
	struct gw_rank_pos *ranks; /* GW_RANK_TRACK of them, from the first ranked line */
};

/* Where the run stands, as the engine knows it, for the rules here. */
struct gw_writers_pos {
	int64_t last_step;        /* of the last record; -1 after a resumed event */
	unsigned last_present;    /* roles of the last record */
	double last_ts;           /* NaN if unknown */
	const double *dts;        /* recent step intervals (any order) ... */
	unsigned ndts;            /* ... and how many */
	uint64_t seg_records;     /* metric records of the segment */
	bool seg_from_event;      /* the segment was opened by "resumed", no metric line yet */
	int64_t resumed_step;     /* that event's step and checkpoint step */
	int64_t resumed_ckpt;
	bool has_ckpt;            /* a checkpoint_saved with attributes is kept ... */
	int64_t ckpt_step;        /* ... and the newest one's step */
};

/* A new run's. */
void gw__writers_init(struct gw_writers *w);

/* A line with a rank: note the rank's position (its wall clock `now`);
 * true when it is the run's primary writer's line, false when another
 * rank's (counted in rank_lines: the engine keeps it apart).  -ENOMEM is
 * not an answer: without memory for the positions they are not kept. */
bool gw__writers_primary(struct gw_writers *w, struct gw_arena *arena, const struct gw_rec *rec,
                         double now);

/* Once interleaved: is this metric record another writer's repeat of a
 * step the run has logged (at or below its last step, within the depth,
 * in time)?  True: fold it (counted in folded). */
bool gw__writers_fold_record(struct gw_writers *w, const struct gw_writers_pos *pos,
                             const struct gw_rec *rec);

/* Is this event another writer's copy of the one before it (a "resumed"
 * repeated, or once interleaved a "checkpoint_saved")?  True: fold it
 * (counted in folded). */
bool gw__writers_fold_event(struct gw_writers *w, const struct gw_writers_pos *pos,
                            const struct gw_rec *rec);

/* A rewind the segment rules reported, counted towards recognising
 * interleaved writers.  True when this one recognised them: from now on
 * w->interleaved, and this line is folded (counted in folded); the engine
 * says so (on_writers). */
bool gw__writers_rewind(struct gw_writers *w, const struct gw_writers_pos *pos,
                        const struct gw_rec *rec, uint64_t line);

/* A record's step was the run's (the engine moved its position): keep the
 * highest, or the step a new segment started from. */
void gw__writers_step(struct gw_writers *w, int64_t step, bool new_segment);

/* Of 2+ ranks seen, the one with the lowest last step: true and its
 * rank, step and wall clock; false if fewer than 2 were seen. */
bool gw__writers_behind(const struct gw_writers *w, int64_t *rank, int64_t *step, double *wall);

/* A resumed event's checkpoint_step attribute, else its step. */
int64_t gw__checkpoint_step(const struct gw_rec *rec);

#endif
