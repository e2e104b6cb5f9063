/*
 * tiles: the store's writer's side of chart data (series.h): per run,
 * segment and tile of GW_SERIES_TILE_SHIFT bits of steps, the steps of
 * the records holding the chart's extremes, kept in record_tiles and
 * merged at each commit (tiles.c), and the migration that adds the table.
 * Internal to storage/ (gw__): the writer (store_writer.c) and the schema
 * (schema.c) use it; series.c reads the table.
 */
#ifndef GW_TILES_H
#define GW_TILES_H

#include <stdint.h>

#include "wire.h"

#define GW_SERIES_TILE_SHIFT 8                 /* 256 steps per tile */

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
 * the records already stored (schema.c's migrations[]). */
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
