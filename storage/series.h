/*
 * series: a run's records as chart data, downsampled so that spikes
 * survive (GET /v1/runs/{run}/records, `gradwatch report`, `gradwatch
 * export`; docs/web.md).
 *
 * The answer is columnar: arrays `step`, `segment`, `superseded`, `loss`,
 * `grad_norm`, `lr`, `throughput`, `nonfinite` of equal length, sorted by
 * step (then segment).  A value that is missing or not finite is null, and
 * bit k of `nonfinite` says role k (loss, grad_norm, lr, throughput) held a
 * NaN or an infinity there.  `superseded` is 1 for a pre-crash copy of a
 * step that a later segment logged again: a step's current copy is the one
 * in the latest segment whose first step is at or below it.
 *
 * Downsampling is min/max per bucket: the requested step range is cut into
 * about max_points/5 buckets and, per bucket and per copy (segment,
 * current or superseded), the rows holding the minimum and the maximum of
 * loss and of grad norm, the minimum throughput, the first LR and the first
 * non-finite value are kept, so a one-step spike is always drawn; and the
 * first and last row of each copy in the range, so a chart ends at the
 * run's latest point.
 *
 * Speed: the store keeps, per run, segment and tile of 256 steps, the same
 * extremes (table record_tiles, written by the store's writer thread at each
 * commit through gw__tiles_*, so ingest pays one upsert per tile and
 * commit, not per record: tiles.h).  A query whose buckets are at least a
 * tile wide
 * reads the tiles and then only the few rows they point to; a narrower one
 * scans the rows of its range, which is then small.  A database without
 * the table (an older schema opened read-only) is scanned.
 */
#ifndef GW_SERIES_H
#define GW_SERIES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

#define GW_SERIES_DEFAULT_POINTS 2000
#define GW_SERIES_MAX_POINTS 200000            /* max_points above this is refused */
#define GW_SERIES_MAX_ROWS 100000              /* rows per page without downsampling */

/* One record as a chart point.  v[k] is NaN when role k is absent or not
 * finite; nf bit k is set when it was NaN or +-Inf. */
struct gw_series_row {
	int64_t step;
	int64_t seg;
	double v[GW_NROLES];
	unsigned nf;
};

/* One segment of a run. */
struct gw_series_seg {
	int64_t seg;
	char reason[24];           /* "start", "resumed", "rewind", "gap", ... */
	int64_t first_step;        /* step of the line that opened it (-1 unknown) */
	int64_t restart_step;      /* the checkpoint it resumed from (-1 unknown) */
	int64_t min_step, max_step;/* of its records (-1 when it has none) */
	int64_t records;
	int64_t cutoff;            /* its steps >= cutoff are superseded (INT64_MAX: none) */
};

struct gw_series_query {
	const char *run;
	bool has_from, has_to;
	int64_t from, to;          /* inclusive step range (default: the run's) */
	size_t max_points;         /* 0: every row in the range, in (segment, step)
	                              order, at most `limit` per page */
	size_t limit;              /* rows per page when max_points is 0 (0: GW_SERIES_MAX_ROWS) */
	bool has_segment;
	int64_t segment;           /* only this segment */
	bool has_cursor;           /* max_points 0: continue a paged read at */
	int64_t cursor_seg, cursor_step; /* (segment, step), from the last page's `next` */
	bool extra;                /* add ts, line and extra (the other metrics) */
};

/* Read one run's series from the database at path on a read-only
 * connection of its own (any thread but the event loop; one query per
 * bucket edge and tile range, see the file comment).  *out gets
 *   {run, from, to, total, downsampled, max_points, segments:[...],
 *    info: {run, segment, last_step, last_ts, first_seen, last_seen},
 *    step:[...], segment:[...], ... , next?}
 * (next: "SEGMENT:STEP", the cursor of the next page, when max_points is 0
 * and the range held more than `limit` rows).  Returns 0, -ENOENT for an
 * unknown run, -EINVAL for a bad range, -EIO (message in err). */
int gw_store_read_series(const char *path, const struct gw_series_query *q, json_t **out,
                         char *err, size_t errlen);

/* The same answer from rows held in memory (`gradwatch report`): rows in
 * the order they were recorded (segments ascending, steps non-decreasing
 * within a segment), segs with seg, reason, first_step and restart_step
 * set (the rest is computed here).  Returns a new reference or NULL (out
 * of memory). */
json_t *gw_series_from_rows(const char *run, const struct gw_series_row *rows, size_t n,
                            struct gw_series_seg *segs, size_t nsegs, size_t max_points);

#endif
