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
 * commit, not per record).  A query whose buckets are at least a tile wide
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

#define GW_SERIES_TILE_SHIFT 8                 /* 256 steps per tile */
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

/* ---- the tile accumulator of the store's writer (store.c) --------------- */

struct sqlite3;
struct gw__tiles;

/* New, empty accumulator; NULL when out of memory. */
struct gw__tiles *gw__tiles_new(void);
void gw__tiles_free(struct gw__tiles *t);
/* Account one record (v as stored: NaN for absent or NaN; nf its NaN bits).
 * Returns 0 or -ENOMEM. */
int gw__tiles_add(struct gw__tiles *t, int64_t run_id, int64_t seg, int64_t step,
                  const double v[GW_NROLES], unsigned nf);
/* Merge what was added into record_tiles inside the caller's transaction
 * and empty the accumulator.  Returns an SQLite result code. */
int gw__tiles_flush(struct gw__tiles *t, struct sqlite3 *db);
/* Forget what was added (the transaction was rolled back).  Free the
 * accumulator before closing the connection it flushed to. */
void gw__tiles_clear(struct gw__tiles *t);
/* Forget what the batch holds of run run_id (deleted in this transaction):
 * gw__tiles_flush writes none of it. */
void gw__tiles_drop_run(struct gw__tiles *t, int64_t run_id);

/* The SQL of the schema migration that adds record_tiles and fills it from
 * the records already stored (store.c's migrations[]). */
#define GW_SERIES_TILES_MIGRATION \
	"CREATE TABLE record_tiles(run_id INTEGER NOT NULL, seg INTEGER NOT NULL," \
	"  tile INTEGER NOT NULL, n INTEGER NOT NULL, lmin REAL, lmin_s INTEGER, lmax REAL," \
	"  lmax_s INTEGER, gmin REAL, gmin_s INTEGER, gmax REAL, gmax_s INTEGER, tmin REAL," \
	"  tmin_s INTEGER, lr_s INTEGER, nf_s INTEGER," \
	"  PRIMARY KEY(run_id, seg, tile)) WITHOUT ROWID;" \
	"INSERT INTO record_tiles(run_id, seg, tile, n, lr_s, nf_s)" \
	"  SELECT run_id, seg, step >> 8, count(*), min(CASE WHEN lr IS NOT NULL AND abs(lr) < 9e999 THEN step END)," \
	"  min(CASE WHEN nonfinite != 0 OR abs(loss) >= 9e999 OR abs(grad_norm) >= 9e999" \
	"   OR abs(lr) >= 9e999 OR abs(throughput) >= 9e999 THEN step END)" \
	"  FROM records GROUP BY run_id, seg, step >> 8;" \
	GW__TILE_FILL("lmin", "min", "loss") GW__TILE_FILL("lmax", "max", "loss") \
	GW__TILE_FILL("gmin", "min", "grad_norm") GW__TILE_FILL("gmax", "max", "grad_norm") \
	GW__TILE_FILL("tmin", "min", "throughput")
/* One extreme per tile: SQLite takes the bare column `step` from the row
 * holding the min() or max(); infinities are left out (nf_s keeps them). */
#define GW__TILE_FILL(col, fn, src) \
	"UPDATE record_tiles SET " col " = x.v, " col "_s = x.s FROM (SELECT run_id, seg," \
	"  step >> 8 AS tile, " fn "(" src ") AS v, step AS s FROM records" \
	"  WHERE " src " IS NOT NULL AND abs(" src ") < 9e999 GROUP BY run_id, seg, step >> 8) x" \
	"  WHERE x.run_id = record_tiles.run_id AND x.seg = record_tiles.seg" \
	"  AND x.tile = record_tiles.tile;"

#endif
