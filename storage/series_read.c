/*
 * series_read: chart data from the database (gw_store_read_series; see
 * series.c for how a query runs): the run's segments by index seeks, the
 * rows of each piece read as they are or through the downsampler, from
 * record_tiles for whole tiles and raw rows for the partial ones at the
 * ends, and the steps the tiles named read back by index lookups; a page
 * of every row when max_points is 0.  A database without record_tiles (an
 * older schema opened read-only) is scanned.
 */
#include "series_impl.h"
#include "schema.h"

#include "util.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading rows --------------------------------------------------------------------- */

struct reader {
	sqlite3 *db;
	int64_t run_id;
	bool has_tiles;
	bool extra;
	sqlite3_stmt *rows, *tiles, *at;
	char *err;
	size_t errlen;
};

static int db_fail(struct reader *r, const char *what)
{
	return gw_errf(r->err, r->errlen, -EIO, "%s: %s", what, sqlite3_errmsg(r->db));
}

static void fill_row(sqlite3_stmt *st, int col0, struct gw_series_row *row)
{
	for (int k = 0; k < GW_NROLES; k++) {
		if (sqlite3_column_type(st, col0 + k) == SQLITE_NULL) {
			row->v[k] = NAN;
			continue;
		}
		double v = sqlite3_column_double(st, col0 + k);
		if (isinf(v)) {
			row->nf |= 1u << k;
			v = NAN;
		}
		row->v[k] = v;
	}
	row->nf |= (unsigned)sqlite3_column_int(st, col0 + GW_NROLES) & 0xfu;
}

#define ROW_COLS "step, loss, grad_norm, lr, throughput, nonfinite, ts, line, extra"

/* Rows of segment seg with step in [lo, hi], in step order, to fn. */
static int scan(struct reader *r, int64_t seg, int64_t lo, int64_t hi,
                int (*fn)(void *ctx, const struct gw_series_row *row, sqlite3_stmt *st),
                void *ctx)
{
	sqlite3_stmt *st = r->rows;
	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, r->run_id);
	sqlite3_bind_int64(st, 2, seg);
	sqlite3_bind_int64(st, 3, lo);
	sqlite3_bind_int64(st, 4, hi);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct gw_series_row row = {.step = sqlite3_column_int64(st, 0), .seg = seg};
		fill_row(st, 1, &row);
		int e = fn(ctx, &row, st);
		if (e) {
			sqlite3_reset(st);
			return e;
		}
	}
	if (rc != SQLITE_DONE)
		return db_fail(r, "reading records");
	return 0;
}

struct ds_ctx {
	struct ds *d;
	bool sup;
	int64_t *total;
};

static int to_ds(void *ctx, const struct gw_series_row *row, sqlite3_stmt *st)
{
	struct ds_ctx *c = ctx;
	(*c->total)++;
	gw__ds_row(c->d, c->sup, row, c->d->ord++);
	return c->d->err;
}

/* Downsample segment seg's steps [lo, hi] (all current, or all
 * superseded) into d: tiles for the whole tiles inside, raw rows in the
 * tiles that hold lo and hi (also when whole: the piece's first and last
 * rows are kept, and only rows name them).  Adds the rows covered to
 * *total. */
static int ds_piece(struct reader *r, struct ds *d, int64_t seg, bool sup, int64_t lo,
                    int64_t hi, int64_t *total)
{
	struct ds_ctx c = {d, sup, total};
	int64_t t0 = (lo >> GW_SERIES_TILE_SHIFT) + 1;   /* first tile after lo's */
	int64_t t1 = (hi >> GW_SERIES_TILE_SHIFT) - 1;   /* last tile before hi's */
	if (!r->has_tiles || d->width < TILE || t0 > t1)
		return scan(r, seg, lo, hi, to_ds, &c);
	int rc;
	if (lo < t0 * TILE && (rc = scan(r, seg, lo, t0 * TILE - 1, to_ds, &c)))
		return rc;
	sqlite3_stmt *st = r->tiles;
	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, r->run_id);
	sqlite3_bind_int64(st, 2, seg);
	sqlite3_bind_int64(st, 3, t0);
	sqlite3_bind_int64(st, 4, t1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		*total += sqlite3_column_int64(st, 0);
		/* the tile's extremes in step order, so slots only move forward */
		struct { int crit; int64_t step; double val; } e[C_NF + 1];
		int n = 0;
		for (int i = 0; i <= C_NF; i++) {
			int vc = i < C_LR ? 1 + 2 * i : -1;         /* value column */
			int sc = i < C_LR ? 2 + 2 * i : 11 + (i - C_LR); /* step column */
			if (sqlite3_column_type(st, sc) == SQLITE_NULL)
				continue;
			e[n].crit = i;
			e[n].step = sqlite3_column_int64(st, sc);
			e[n].val = vc > 0 ? sqlite3_column_double(st, vc) : 0;
			for (int j = n++; j > 0 && e[j].step < e[j - 1].step; j--) {
				__typeof__(e[0]) t = e[j];
				e[j] = e[j - 1];
				e[j - 1] = t;
			}
		}
		for (int j = 0; j < n; j++)
			gw__ds_cand(d, sup, seg, e[j].crit, e[j].step, e[j].val);
		if (d->err)
			return d->err;
	}
	if (rc != SQLITE_DONE)
		return db_fail(r, "reading record_tiles");
	return scan(r, seg, (t1 + 1) * TILE, hi, to_ds, &c);
}

/* Replace the kept entries that only name a step by the rows at that step. */
static int fetch_named(struct reader *r, struct keptv *kv)
{
	size_t n = kv->n;
	for (size_t i = 0; i < n; i++) {
		if (kv->v[i].full)
			continue;
		struct kept k = kv->v[i];
		sqlite3_stmt *st = r->at;
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, r->run_id);
		sqlite3_bind_int64(st, 2, k.row.seg);
		sqlite3_bind_int64(st, 3, k.row.step);
		sqlite3_bind_int64(st, 4, k.row.step);
		int rc;
		bool first = true;
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			struct kept x = k;
			memset(&x.row.v, 0, sizeof(x.row.v));
			x.row.nf = 0;
			fill_row(st, 1, &x.row);
			x.full = true;
			if (first) {
				kv->v[i] = x;
				first = false;
			} else if (gw__series_keep(kv, &x) < 0) {
				return -ENOMEM;
			}
		}
		if (rc != SQLITE_DONE)
			return db_fail(r, "reading records");
		if (first)
			kv->v[i].full = true;   /* gone (cannot happen: rows are never deleted) */
	}
	return 0;
}

/* ---- segments --------------------------------------------------------------------------- */

static int one_int(sqlite3 *db, const char *sql, int64_t a, int64_t b, bool has_b, int64_t *out)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(st, 1, a);
	if (has_b)
		sqlite3_bind_int64(st, 2, b);
	int rc = sqlite3_step(st);
	int ret = 0;
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		*out = sqlite3_column_int64(st, 0);
	else if (rc == SQLITE_ROW || rc == SQLITE_DONE)
		ret = -ENOENT;
	else
		ret = -EIO;
	sqlite3_finalize(st);
	return ret;
}

/* Every segment that has records or a segments row, each found by an index
 * seek (a run restarted k times costs O(k log n), never a scan). */
static int read_segments(struct reader *r, struct gw_series_seg **out, size_t *nout)
{
	struct gw_series_seg *v = NULL;
	size_t n = 0, cap = 0;
	int64_t seg = INT64_MIN;
	int rc;
	for (;;) {
		int64_t next;
		rc = one_int(r->db, "SELECT min(seg) FROM records WHERE run_id = ?1 AND seg > ?2",
		             r->run_id, seg, true, &next);
		if (rc == -ENOENT)
			break;
		if (rc < 0)
			goto fail;
		if (gw_grow((void **)&v, &cap, n + 1, sizeof(*v)) < 0) {
			rc = -ENOMEM;
			goto fail;
		}
		struct gw_series_seg *s = &v[n++];
		memset(s, 0, sizeof(*s));
		s->seg = seg = next;
		s->first_step = s->restart_step = -1;
		gw_strlcpy(s->reason, "?", sizeof(s->reason));
		sqlite3_stmt *st;
		if (sqlite3_prepare_v2(r->db,
		                       "SELECT (SELECT step FROM records WHERE run_id = ?1 AND seg = ?2 ORDER BY step LIMIT 1),"
		                       " (SELECT step FROM records WHERE run_id = ?1 AND seg = ?2 ORDER BY step DESC LIMIT 1),"
		                       " reason, first_step, restart_step FROM (SELECT 1)"
		                       " LEFT JOIN segments ON run_id = ?1 AND seg = ?2", -1, &st, NULL) != SQLITE_OK) {
			rc = -EIO;
			goto fail;
		}
		sqlite3_bind_int64(st, 1, r->run_id);
		sqlite3_bind_int64(st, 2, seg);
		/* (SELECT 1) LEFT JOIN: always one row, unless the read failed */
		if ((rc = sqlite3_step(st)) != SQLITE_ROW) {
			sqlite3_finalize(st);
			rc = -EIO;
			goto fail;
		}
		s->min_step = sqlite3_column_int64(st, 0);
		s->max_step = sqlite3_column_int64(st, 1);
		if (sqlite3_column_text(st, 2))
			gw_strlcpy(s->reason, (const char *)sqlite3_column_text(st, 2), sizeof(s->reason));
		if (sqlite3_column_type(st, 3) != SQLITE_NULL)
			s->first_step = sqlite3_column_int64(st, 3);
		if (sqlite3_column_type(st, 4) != SQLITE_NULL)
			s->restart_step = sqlite3_column_int64(st, 4);
		sqlite3_finalize(st);
		s->records = -1;
		if (r->has_tiles) {
			int64_t cnt = 0;
			if (one_int(r->db, "SELECT sum(n) FROM record_tiles WHERE run_id = ?1 AND seg = ?2",
			            r->run_id, seg, true, &cnt) == 0)
				s->records = cnt;
		}
		if (s->records < 0 &&
		    one_int(r->db, "SELECT count(*) FROM records WHERE run_id = ?1 AND seg = ?2",
		            r->run_id, seg, true, &s->records) < 0)
			s->records = 0;
	}
	*out = v;
	*nout = n;
	return 0;
fail:
	free(v);
	return rc == -EIO ? db_fail(r, "reading segments") : rc;
}

static int64_t count_sql(struct reader *r, const char *sql, int64_t seg, int64_t a, int64_t b)
{
	sqlite3_stmt *st;
	int64_t n = -1;
	if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(st, 1, r->run_id);
	sqlite3_bind_int64(st, 2, seg);
	sqlite3_bind_int64(st, 3, a);
	sqlite3_bind_int64(st, 4, b);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

/* How many rows segment s holds in steps [from, to]: all of them when the
 * range covers it; else the whole tiles inside plus an index count of the
 * partial ones at the ends (O(range / 256 + 512)); without tiles, an index
 * count.  -1 if unknown. */
static int64_t rows_in(struct reader *r, const struct gw_series_seg *s, int64_t from, int64_t to)
{
	static const char cnt[] =
		"SELECT count(*) FROM records WHERE run_id = ?1 AND seg = ?2 AND step BETWEEN ?3 AND ?4";
	if (from <= s->min_step && to >= s->max_step)
		return s->records;
	int64_t lo = GW_MAX(from, s->min_step), hi = GW_MIN(to, s->max_step);
	int64_t t0 = (lo + TILE - 1) >> GW_SERIES_TILE_SHIFT, t1 = ((hi + 1) >> GW_SERIES_TILE_SHIFT) - 1;
	if (!r->has_tiles || t0 > t1)
		return count_sql(r, cnt, s->seg, lo, hi);
	int64_t n = count_sql(r, "SELECT coalesce(sum(n), 0) FROM record_tiles WHERE run_id = ?1"
	                         " AND seg = ?2 AND tile BETWEEN ?3 AND ?4", s->seg, t0, t1);
	int64_t e0 = lo < t0 * TILE ? count_sql(r, cnt, s->seg, lo, t0 * TILE - 1) : 0;
	int64_t e1 = (t1 + 1) * TILE <= hi ? count_sql(r, cnt, s->seg, (t1 + 1) * TILE, hi) : 0;
	return n < 0 || e0 < 0 || e1 < 0 ? -1 : n + e0 + e1;
}

/* ---- the database query -------------------------------------------------------------------- */

struct raw_ctx {
	struct keptv *kv;
	bool sup;
	bool extra;
	int64_t cutoff;
	size_t limit;             /* stop after this many rows (0: none) */
	int64_t stop_step;        /* where it stopped */
};

static int to_kept(void *ctx, const struct gw_series_row *row, sqlite3_stmt *st)
{
	struct raw_ctx *c = ctx;
	if (c->limit && c->kv->n >= c->limit) {
		c->stop_step = row->step;
		return 1;
	}
	struct kept k = {.row = *row, .sup = row->step >= c->cutoff, .full = true,
	                 .ord = (int64_t)c->kv->n, .ts = NAN, .line = -1};
	if (c->extra) {
		if (sqlite3_column_type(st, 6) != SQLITE_NULL)
			k.ts = sqlite3_column_double(st, 6);
		if (sqlite3_column_type(st, 7) != SQLITE_NULL)
			k.line = sqlite3_column_int64(st, 7);
		if (sqlite3_column_text(st, 8) && !(k.extra = strdup((const char *)sqlite3_column_text(st, 8))))
			return -ENOMEM;
	}
	if (gw__series_keep(c->kv, &k) < 0) {
		free(k.extra);
		return -ENOMEM;
	}
	return 0;
}

static int prepare(struct reader *r, const char *sql, sqlite3_stmt **st)
{
	return sqlite3_prepare_v2(r->db, sql, -1, st, NULL) == SQLITE_OK ? 0 : db_fail(r, "preparing a query");
}

int gw_store_read_series(const char *path, const struct gw_series_query *q, json_t **out,
                         char *err, size_t errlen)
{
	struct reader r = {.err = err, .errlen = errlen, .extra = q->extra};
	struct gw_series_seg *segs = NULL;
	size_t nsegs = 0;
	struct keptv kv = {0};
	json_t *info = NULL;
	int rc;
	*out = NULL;
	if (q->max_points > GW_SERIES_MAX_POINTS)
		return gw_errf(err, errlen, -EINVAL, "max_points is at most %d", GW_SERIES_MAX_POINTS);
	if (q->extra && q->max_points)
		return gw_errf(err, errlen, -EINVAL, "extra=1 needs max_points=0 (every row)");
	if (q->has_from && q->has_to && q->from > q->to)
		return gw_errf(err, errlen, -EINVAL, "from (%lld) is after to (%lld)",
		               (long long)q->from, (long long)q->to);
	if ((rc = gw__store_open_ro(path, &r.db, NULL, err, errlen)) < 0)
		return rc;
	/* one read transaction: every statement sees the same snapshot */
	if (sqlite3_exec(r.db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
		rc = db_fail(&r, path);
		goto out;
	}
	sqlite3_stmt *st;
	if ((rc = prepare(&r, "SELECT id, last_seg, last_step, last_ts, first_seen, last_seen"
	                      " FROM runs WHERE name = ?1", &st)) < 0)
		goto out;
	sqlite3_bind_text(st, 1, q->run, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		sqlite3_finalize(st);
		rc = rc == SQLITE_DONE ? gw_errf(err, errlen, -ENOENT, "no run named \"%s\"", q->run)
		                       : db_fail(&r, "reading runs");
		goto out;
	}
	r.run_id = sqlite3_column_int64(st, 0);
	/* where the run stands (what a polling page compares) */
	info = json_pack("{s:s, s:I}", "run", q->run, "segment", (json_int_t)sqlite3_column_int64(st, 1));
	static const char *const cols[] = {"last_step", "last_ts", "first_seen", "last_seen"};
	for (int k = 0; k < 4; k++) {
		int t = sqlite3_column_type(st, 2 + k);
		json_object_set_new(info, cols[k], t == SQLITE_NULL ? json_null()
		                                   : k == 0 ? json_integer(sqlite3_column_int64(st, 2))
		                                            : gw_json_num(sqlite3_column_double(st, 2 + k)));
	}
	sqlite3_finalize(st);
	/* the run's writers (detectors/engine.h "Ranks"): the interleaved-writers
	 * note and the ranks kept apart; not in a database before schema 5 */
	json_t *writers = NULL, *ranks = json_array();
	if (sqlite3_prepare_v2(r.db, "SELECT writers FROM runs WHERE id = ?1", -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, r.run_id);
		if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_TEXT)
			writers = json_loads((const char *)sqlite3_column_text(st, 0), 0, NULL);
		sqlite3_finalize(st);
	}
	if (sqlite3_prepare_v2(r.db, "SELECT rank, lines, last_step, last_recv FROM ranks"
	                             " WHERE run_id = ?1 ORDER BY rank", -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, r.run_id);
		while (sqlite3_step(st) == SQLITE_ROW)
			json_array_append_new(ranks, json_pack("{s:I, s:I, s:I, s:o}",
				"rank", (json_int_t)sqlite3_column_int64(st, 0),
				"lines", (json_int_t)sqlite3_column_int64(st, 1),
				"last_step", (json_int_t)sqlite3_column_int64(st, 2),
				"last_seen", gw_json_num(sqlite3_column_type(st, 3) == SQLITE_NULL
				                         ? NAN : sqlite3_column_double(st, 3))));
		sqlite3_finalize(st);
	}
	json_object_set_new(info, "writers", writers ? writers : json_null());
	json_object_set_new(info, "ranks", ranks);
	/* record_tiles is missing in a database of schema 2 opened read-only */
	r.has_tiles = sqlite3_prepare_v2(r.db, "SELECT n, lmin, lmin_s, lmax, lmax_s, gmin, gmin_s, gmax,"
	                                       " gmax_s, tmin, tmin_s, lr_s, nf_s FROM record_tiles"
	                                       " WHERE run_id = ?1 AND seg = ?2 AND tile BETWEEN ?3 AND ?4"
	                                       " ORDER BY tile", -1, &r.tiles, NULL) == SQLITE_OK;
	if ((rc = prepare(&r, "SELECT " ROW_COLS " FROM records WHERE run_id = ?1 AND seg = ?2"
	                      " AND step BETWEEN ?3 AND ?4 ORDER BY step", &r.rows)) < 0 ||
	    (rc = prepare(&r, "SELECT " ROW_COLS " FROM records WHERE run_id = ?1 AND seg = ?2"
	                      " AND step BETWEEN ?3 AND ?4", &r.at)) < 0)
		goto out;
	if ((rc = read_segments(&r, &segs, &nsegs)) < 0)
		goto out;
	gw__series_set_cutoffs(segs, nsegs);

	int64_t lo_all = INT64_MAX, hi_all = INT64_MIN;
	for (size_t i = 0; i < nsegs; i++) {
		if (segs[i].records <= 0 || (q->has_segment && segs[i].seg != q->segment))
			continue;
		lo_all = GW_MIN(lo_all, segs[i].min_step);
		hi_all = GW_MAX(hi_all, segs[i].max_step);
	}
	int64_t from = q->has_from ? q->from : lo_all, to = q->has_to ? q->to : hi_all;
	if (lo_all > hi_all)   /* no records: an empty answer */
		from = to = 0;

	/* the rows in the range (whole tiles plus index counts of the ends) */
	int64_t bound = 0;
	for (size_t i = 0; i < nsegs; i++)
		if (segs[i].records > 0 && segs[i].max_step >= from && segs[i].min_step <= to &&
		    (!q->has_segment || segs[i].seg == q->segment))
		{
			int64_t n = rows_in(&r, &segs[i], from, to);
			bound += n < 0 ? segs[i].records : n;
		}
	bool ds_mode = q->max_points && bound > (int64_t)q->max_points;
	size_t page = q->limit ? GW_MIN(q->limit, (size_t)GW_SERIES_MAX_ROWS) : GW_SERIES_MAX_ROWS;
	struct ds d = {.from = from, .out = &kv};
	if (ds_mode) {
		int64_t buckets = GW_MAX((int64_t)q->max_points / POINTS_PER_BUCKET, 1);
		d.width = GW_MAX((to - from) / buckets + 1, 1);
	}
	int64_t total = 0;
	char next[48] = "";
	for (size_t i = 0; i < nsegs && lo_all <= hi_all && !next[0]; i++) {
		const struct gw_series_seg *s = &segs[i];
		if (s->records <= 0 || (q->has_segment && s->seg != q->segment) ||
		    (q->has_cursor && s->seg < q->cursor_seg))
			continue;
		int64_t lo = GW_MAX(from, s->min_step), hi = GW_MIN(to, s->max_step);
		if (q->has_cursor && s->seg == q->cursor_seg)
			lo = GW_MAX(lo, q->cursor_step);
		if (lo > hi)
			continue;
		/* the current part, then the superseded part */
		int64_t cut = s->cutoff;
		int64_t parts[2][2] = {{lo, cut == NO_CUTOFF ? hi : GW_MIN(hi, cut - 1)},
		                       {GW_MAX(lo, cut), hi}};
		for (int p = 0; p < 2 && !next[0]; p++) {
			if (parts[p][0] > parts[p][1] || (p == 1 && cut == NO_CUTOFF))
				continue;
			if (ds_mode) {
				rc = ds_piece(&r, &d, s->seg, p == 1, parts[p][0], parts[p][1], &total);
				if (rc < 0)
					goto out;
				continue;
			}
			struct raw_ctx c = {.kv = &kv, .extra = q->extra, .cutoff = cut,
			                    .limit = q->max_points ? 0 : page};
			rc = scan(&r, s->seg, parts[p][0], parts[p][1], to_kept, &c);
			if (rc < 0)
				goto out;
			if (rc == 1) {
				/* the page is full: end it at a step boundary */
				int64_t at = c.stop_step;
				while (kv.n && kv.v[kv.n - 1].row.step == at && kv.v[kv.n - 1].row.seg == s->seg)
					free(kv.v[--kv.n].extra);
				if (!kv.n) {
					rc = gw_errf(err, errlen, -EOVERFLOW, "step %lld of segment %lld alone has more than %zu rows",
					             (long long)at, (long long)s->seg, page);
					goto out;
				}
				snprintf(next, sizeof(next), "%lld:%lld", (long long)s->seg, (long long)at);
			}
		}
	}
	if (ds_mode) {
		gw__ds_close(&d, true);
		if (d.err) {
			rc = d.err;
			goto out;
		}
		if ((rc = fetch_named(&r, &kv)) < 0)
			goto out;
	} else {
		total = (int64_t)kv.n;
	}
	if (q->max_points)
		gw__series_sort(&kv);
	json_t *o = gw__series_columns(q->run, &kv, q->extra);
	json_object_set_new(o, "from", json_integer(from));
	json_object_set_new(o, "to", json_integer(to));
	json_object_set_new(o, "total", json_integer(total));
	json_object_set_new(o, "downsampled", json_boolean(ds_mode && (int64_t)kv.n < total));
	json_object_set_new(o, "max_points", json_integer((json_int_t)q->max_points));
	json_object_set_new(o, "segments", gw__series_segs_json(segs, nsegs));
	json_object_set_new(o, "info", info);
	info = NULL;
	if (next[0])
		json_object_set_new(o, "next", json_string(next));
	*out = o;
	rc = 0;
out:
	json_decref(info);
	gw__series_keptv_free(&kv);
	free(segs);
	sqlite3_finalize(r.rows);
	sqlite3_finalize(r.tiles);
	sqlite3_finalize(r.at);
	sqlite3_close(r.db);   /* ends the read transaction */
	return rc;
}
