/*
 * hist: a run's history, as the detectors read it.
 *
 * The *timeline* is the last GW_RING_CAP metric records of the run that
 * still stand, in a ring with one column array per metric (and the logs of
 * loss and grad norm, for the records where both are finite and > 0), so
 * that a window of one column is at most two contiguous spans (struct
 * gw_win, robust.h) that the kernels and the robust statistics read in
 * place.  The *valid-record ring* names those records, in timeline order,
 * by their timeline slot: "the last n valid records" is the timeline's
 * spans when no other record is between them (nearly always), else the
 * column gathered through the ring's slots -- no value is stored twice.
 *
 * At a restart from checkpoint step S, the records with step > S (logged by
 * the crashed process, about to be logged again) leave the timeline and
 * become the *replay copy*, looked up by step for the replayed-step
 * comparisons; the restarted process's records continue the timeline after
 * S.  The copy lives until the next segment starts.
 *
 * The engine writes (gw_hist_push, gw_hist_merge_last, gw_hist_cut,
 * gw_hist_end_replay); detectors only read, and when they run the line
 * being processed is already in (index 0 of gw_hist_at).  A zeroed struct
 * is an empty history.  Fixed size except the replay copy (GW_REPLAY_CAP
 * records, allocated at the first restart that has one).  No I/O beyond
 * logging a failed allocation; single-threaded.
 */
#ifndef GW_HIST_H
#define GW_HIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "robust.h"
#include "wire.h"

struct gw_arena;

/* Records in the timeline (and in the valid-record ring); a power of two,
 * at most 65,536 (the valid ring's slots are unsigned short). */
#define GW_RING_CAP 512u

/* Pre-crash records kept at a restart for the replayed-step comparison. */
#define GW_REPLAY_CAP 256u

/* Columns of the timeline. */
enum gw_col {
	GW_COL_LOSS = GW_ROLE_LOSS,
	GW_COL_GRAD_NORM = GW_ROLE_GRAD_NORM,
	GW_COL_LR = GW_ROLE_LR,
	GW_COL_THROUGHPUT = GW_ROLE_THROUGHPUT,
	GW_NCOLS,
};

/* Columns of the valid-record ring. */
enum gw_vcol {
	GW_V_LOSS,
	GW_V_GRAD_NORM,
	GW_V_LOG_LOSS,
	GW_V_LOG_GRAD_NORM,
	GW_V_LR,
	GW_NVCOLS,
};

/* One record of the timeline. */
struct gw_hist_rec {
	int64_t step;
	double loss, grad_norm, lr, throughput;  /* NaN when absent */
	bool valid;        /* loss and grad norm both finite and > 0 */
};

/* The pre-crash copy of one replayed step. */
struct gw_replayed {
	int64_t step;
	double loss, grad_norm, lr;
	bool valid;
};

/* The window bounds' cache (hist.c "Bounds"): keys (a window and a side;
 * 0 free) apart from their values, so a lookup reads one line. */
#define GW_HIST_BOUNDS 12
struct gw_hist_bound {
	double v;
	uint64_t at;              /* the ring's change count when last checked */
	uint32_t lasts;           /* changes after `at` it holds for; 0: none */
};
struct gw_hist_bounds {
	uint32_t key[GW_HIST_BOUNDS];
	unsigned next;            /* the slot a new window takes when all are used */
	unsigned hint;            /* the slot after the last one asked for */
	struct gw_hist_bound b[GW_HIST_BOUNDS];
};

/* The engine embeds the history by value, hence the full definition; read
 * it through the functions below. */
struct gw_hist {
	double col[GW_NCOLS][GW_RING_CAP];   /* the timeline */
	double logs[2][GW_RING_CAP];         /* log loss, log grad norm of a valid slot */
	int64_t step[GW_RING_CAP];
	uint8_t valid[GW_RING_CAP];
	size_t head;        /* slot of the next record */
	size_t count;       /* records in the timeline */
	unsigned short vslot[GW_RING_CAP];   /* the valid-record ring: timeline slots */
	size_t vhead, vcount;
	struct gw_replayed *rep;   /* the replay copy, sorted by step */
	size_t nrep;
	/* changes to the timeline and to the valid-record ring: one per record
	 * added, removed or changed (the window bounds' clock) */
	uint64_t tchanges, vchanges;
	struct gw_hist_bounds bounds;   /* the bounds' cache (hist.c) */
	struct gw_arena *arena;         /* where the replay copy comes from; NULL: malloc */
};

/* ---- reading (detectors) */

/* Record i of the timeline, 0 = the newest.  False when i >= the count. */
bool gw_hist_at(const struct gw_hist *h, size_t i, struct gw_hist_rec *out);

/* Column col over the last n records of the timeline (fewer if it holds
 * fewer), in place. */
struct gw_win gw_hist_recent(const struct gw_hist *h, enum gw_col col, size_t n);

/* Column col over the `count` newest valid records after skipping the
 * `skip` newest, oldest first, in place (spans, or gathered when invalid
 * records stand between them); shorter when there are fewer. */
struct gw_win gw_hist_valid(const struct gw_hist *h, enum gw_vcol col, size_t count, size_t skip);

/* Step of record i (0 = oldest) of that window, -1 if out of range. */
int64_t gw_hist_valid_step(const struct gw_hist *h, size_t count, size_t skip, size_t i);

/* The same window copied into arrays (any may be NULL); returns its length. */
size_t gw_hist_last_valid(const struct gw_hist *h, size_t count, size_t skip, double *loss,
                          double *grad_norm, double *lr, int64_t *step);

/* A cheap bound on the middle of a window (robust.h "bounds"): side < 0
 * a lower bound of its lower middle value, side > 0 an upper bound of its
 * upper middle, into *v.  Amortised O(1): an order statistic 1/16 to 1/4
 * of the count from the middle, kept as long as the window's changes
 * (records in, out or changed) cannot have moved the middle past it
 * (hist.c "Bounds").  False (work the statistic out instead) unless the
 * window is full and holds at least 3 values.
 * gw_hist_valid_bound: the window gw_hist_valid(h, col, count, skip) of
 * loss, grad norm or their logs (not LR, which may be absent).
 * gw_hist_recent_bound: the positive finite values among the `count`
 * timeline records before the `skip` newest (throughput, say). */
bool gw_hist_valid_bound(const struct gw_hist *h, enum gw_vcol col, size_t count, size_t skip,
                         int side, double *v);
bool gw_hist_recent_bound(const struct gw_hist *h, enum gw_col col, size_t count, size_t skip,
                          int side, double *v);

/* The pre-crash copy of `step` if the current segment replays it, else NULL. */
const struct gw_replayed *gw_hist_replayed(const struct gw_hist *h, int64_t step);

/* Pre-crash copies held for the current segment (0 without an overlap). */
size_t gw_hist_replay_count(const struct gw_hist *h);

/* ---- writing (the engine) */

/* Append a metric record (the oldest leaves when the ring is full). */
void gw_hist_push(struct gw_hist *h, const struct gw_rec *rec);

/* Add the roles rec has to the newest record: a step split over several
 * lines. */
void gw_hist_merge_last(struct gw_hist *h, const struct gw_rec *rec);

/* A restart from checkpoint step S: the records with step > S leave the
 * timeline and the first GW_REPLAY_CAP of them become the replay copy
 * (without one if its allocation fails, which is logged).  Returns T, the
 * last step logged before the restart (S when none was after S). */
int64_t gw_hist_cut(struct gw_hist *h, int64_t S);

/* A segment without a restart point: forget the replay copy. */
void gw_hist_end_replay(struct gw_hist *h);

/* Free the replay copy (unless it came from the arena, which frees it);
 * the history is then empty of it. */
void gw_hist_free(struct gw_hist *h);

#endif
