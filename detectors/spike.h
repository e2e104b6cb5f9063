/*
 * spike: the statistics loss_spike and grad_explosion judge, computed once
 * per valid line and shared by both.
 *
 * For loss and grad norm, in log space: the median of the short window (the
 * sp_cur_window newest valid records, this line included), the median and
 * robust noise of the baseline (the sp_base_window valid records before
 * it), and the distance between the two medians in baseline noises (z) and
 * as a log ratio.  The first call on a line computes them into the run's
 * cache (engine-owned, reached as ctx->spike); later calls on the same line
 * read the cache.  gw_spike_possible is the cheap test that comes first
 * (once per line too).  While the statistics are asked for on line after
 * line (an episode), the baselines and their first differences are kept
 * sorted and slide by one record a line (robust.h sorted windows): the
 * medians and the noise then cost O(log n), not a selection each.
 */
#ifndef GW_SPIKE_H
#define GW_SPIKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "detector.h"

/* One series (log loss or log grad norm). */
struct gw_spike_series {
	double base_median;   /* median of the baseline */
	double base_noise;    /* its robust per-step noise, floored at sigma_floor_log */
	double cur_median;    /* median of the short window */
	double log_ratio;     /* cur_median - base_median */
	double z;             /* log_ratio / base_noise */
};

struct gw_spike_stat {
	bool ok;                       /* false while the history is too short */
	int64_t base_from, base_to;    /* steps of the baseline's first and last record */
	int64_t cur_from, cur_to;      /* ... and of the short window's */
	size_t base_n, cur_n;
	struct gw_spike_series loss, gn;
};

struct gw_spike_sorted;
struct gw_arena;

/* The per-run cache (a member of the engine's run state; a zeroed one is
 * empty; gw_spike_free frees what it holds). */
struct gw_spike_cache {
	uint64_t valid_records;        /* ctx->valid_records it was computed at */
	struct gw_spike_stat st;
	struct gw_spike_sorted *sorted; /* the baselines sorted (spike.c), from the first stat */
	struct gw_arena *arena;        /* where that comes from; NULL: malloc */
	uint64_t possible_at;          /* the timeline's change count (hist.h) at ... */
	bool possible;                 /* ... gw_spike_possible's last answer */
	bool has_logs;                 /* log_rel holds the logs of rel_of: */
	double rel_of[2], log_rel[2];  /* the loss's and grad norm's ratio thresholds */
};

/* The statistics of this line (computed on the first call).  Meaningful on
 * a valid metric line; st->ok is false when the history is too short or
 * sp_cur_window / sp_base_window are out of range. */
const struct gw_spike_stat *gw_spike_stat(const struct gw_det_ctx *ctx);

/* Could either ratio condition hold on this line (the loss short median
 * sp_loss_rel or sp_big_loss_rel above its baseline, or the grad norm's
 * sp_gn_rel above)?  The baseline's bounds (hist.h) first, then a count
 * over it, no selection: when false, a detector with no open episode has
 * nothing to do and gw_spike_stat is never computed. */
bool gw_spike_possible(const struct gw_det_ctx *ctx);

/* Free what a cache holds (unless it came from the arena, which frees
 * it); it is then empty. */
void gw_spike_free(struct gw_spike_cache *c);

/* The bytes a cache holds at most beside itself, at these thresholds. */
size_t gw_spike_sorted_bytes(const struct gw_thresholds *th);

#endif
