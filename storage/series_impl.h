/*
 * series_impl: what the two halves of chart data share (internal; users
 * see series.h): the downsampler and the answer's JSON (series.c, which
 * also serves rows held in memory) and the database query that feeds them
 * (series_read.c).
 */
#ifndef GW_SERIES_IMPL_H
#define GW_SERIES_IMPL_H

#include "series.h"
#include "tiles.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define TILE ((int64_t)1 << GW_SERIES_TILE_SHIFT)

#define NO_CUTOFF INT64_MAX

/* per bucket: the extremes, the first LR and non-finite value; C_FIRST and
 * C_LAST (any row) are kept only in a piece's first and last bucket, so a
 * chart starts and ends where its data does (a streaming run's latest
 * point is drawn); the tiles name no such rows, so ds_piece reads the
 * rows at both ends of a piece */
enum { C_LMIN, C_LMAX, C_GMIN, C_GMAX, C_TMIN, C_LR, C_NF, C_FIRST, C_LAST, NCRIT };
#define POINTS_PER_BUCKET 5   /* typical distinct rows a bucket keeps */

struct cand {
	bool has;
	bool full;                 /* row holds the record; else only step is known */
	double val;
	int64_t ord;               /* scan ordinal of a full row (dedupe), -1 */
	struct gw_series_row row;
};

struct kept {
	struct gw_series_row row;
	bool sup;
	bool full;
	int64_t ord;               /* order of arrival (stable sort) */
	/* with q->extra (raw rows only) */
	double ts;
	int64_t line;
	char *extra;
};

struct keptv {
	struct kept *v;
	size_t n, cap;
};

struct ds {
	int64_t from, width;
	bool open;
	bool piece_start;          /* the open bucket is its piece's first */
	int64_t seg, bucket;
	bool sup;
	struct cand c[NCRIT];
	struct keptv *out;
	int64_t ord;
	int err;
};

/* Keep k in kv (0 or -ENOMEM); free kv and what its rows hold. */
int gw__series_keep(struct keptv *kv, const struct kept *k);
void gw__series_keptv_free(struct keptv *kv);

/* The downsampler: close the open bucket (piece_end: no later row of its
 * piece follows); offer a whole row of ordinal ord; offer a candidate
 * known only by its step and value (a tile's extreme, criterion crit). */
void gw__ds_close(struct ds *d, bool piece_end);
void gw__ds_row(struct ds *d, bool sup, const struct gw_series_row *r, int64_t ord);
void gw__ds_cand(struct ds *d, bool sup, int64_t seg, int crit, int64_t step, double val);

/* Each segment's cutoff: its steps at or above the first step of any
 * later segment were logged again after a restart (superseded). */
void gw__series_set_cutoffs(struct gw_series_seg *s, size_t n);

/* Sort the rows kept by step, then segment, then arrival. */
void gw__series_sort(struct keptv *kv);

/* The answer's JSON: the segments, and the columns of the rows kept
 * (sorted by step; with extra, ts, line and the other metrics). */
json_t *gw__series_segs_json(const struct gw_series_seg *s, size_t n);
json_t *gw__series_columns(const char *run, const struct keptv *kv, bool extra);

#endif
