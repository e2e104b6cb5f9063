/*
 * series: chart data of one run, downsampled by min/max per bucket (see
 * series.h for the answer's shape and the reasons).
 *
 * How a query runs: the run's segments are found by index seeks (never a
 * scan), each with its first and last step and the step from which a later
 * segment supersedes it.  Each segment's part of the range is cut at that
 * cutoff into a current and a superseded piece.  If the range holds no more
 * rows than asked for, the rows are read as they are.  Otherwise a
 * downsampler (struct ds) takes the piece's content in step order and keeps
 * per bucket the extreme rows: from raw rows when buckets are narrower than
 * a tile, else from record_tiles for the whole tiles inside the piece (each
 * tile names the steps of its extremes) and from raw rows for the partial
 * tiles at its ends; the steps the tiles named are then read back by index
 * lookups.  The same downsampler serves rows held in memory
 * (gw_series_from_rows, for `gradwatch report`).  The writer's side, which
 * keeps record_tiles, is tiles.c.
 *
 * This file is the downsampler, the answer's JSON and the rows in memory;
 * the query plan over the database is series_read.c's (series_impl.h
 * between them).
 */
#include "series_impl.h"

#include "buf.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the downsampler -------------------------------------------------------------- */

int gw__series_keep(struct keptv *kv, const struct kept *k)
{
	if (gw_grow((void **)&kv->v, &kv->cap, kv->n + 1, sizeof(*kv->v)) < 0)
		return -ENOMEM;
	kv->v[kv->n++] = *k;
	return 0;
}

void gw__series_keptv_free(struct keptv *kv)
{
	for (size_t i = 0; i < kv->n; i++)
		free(kv->v[i].extra);
	free(kv->v);
	memset(kv, 0, sizeof(*kv));
}

/* Keep the open bucket's rows; piece_end: no later row of its piece (the
 * same segment and copy) follows. */
void gw__ds_close(struct ds *d, bool piece_end)
{
	if (!d->open)
		return;
	d->open = false;
	if (!d->piece_start)
		d->c[C_FIRST].has = false;
	if (!piece_end)
		d->c[C_LAST].has = false;
	for (int i = 0; i < NCRIT; i++) {
		struct cand *c = &d->c[i];
		if (!c->has)
			continue;
		bool dup = false;
		for (int j = 0; j < i && !dup; j++) {
			const struct cand *o = &d->c[j];
			dup = o->has && o->full == c->full &&
			      (c->full ? o->ord == c->ord : o->row.step == c->row.step);
		}
		if (dup)
			continue;
		struct kept k = {.row = c->row, .sup = d->sup, .full = c->full, .ord = d->ord++,
		                 .ts = NAN, .line = -1};
		if (gw__series_keep(d->out, &k) < 0)
			d->err = -ENOMEM;
	}
}

static void ds_slot(struct ds *d, int64_t seg, bool sup, int64_t step)
{
	int64_t b = (step - d->from) / d->width;
	bool same_piece = d->open && d->seg == seg && d->sup == sup;
	if (same_piece && d->bucket == b)
		return;
	gw__ds_close(d, !same_piece);
	d->piece_start = !same_piece;
	d->open = true;
	d->seg = seg;
	d->sup = sup;
	d->bucket = b;
	memset(d->c, 0, sizeof(d->c));
}

static void offer(struct cand *c, int crit, double val, const struct gw_series_row *row,
                  bool full, int64_t ord)
{
	bool better;
	switch (crit) {
	case C_LMIN: case C_GMIN: case C_TMIN: better = !c->has || val < c->val; break;
	case C_LMAX: case C_GMAX: better = !c->has || val > c->val; break;
	case C_LAST: better = true; break;
	default: better = !c->has; break;   /* first LR, first non-finite, first row */
	}
	if (!better)
		return;
	c->has = true;
	c->full = full;
	c->val = val;
	c->ord = ord;
	c->row = *row;
}

/* A whole row (raw scan or memory): a candidate for every criterion. */
void gw__ds_row(struct ds *d, bool sup, const struct gw_series_row *r, int64_t ord)
{
	ds_slot(d, r->seg, sup, r->step);
	static const int role_of[NCRIT] = {
		[C_LMIN] = GW_ROLE_LOSS, [C_LMAX] = GW_ROLE_LOSS,
		[C_GMIN] = GW_ROLE_GRAD_NORM, [C_GMAX] = GW_ROLE_GRAD_NORM,
		[C_TMIN] = GW_ROLE_THROUGHPUT, [C_LR] = GW_ROLE_LR,
	};
	for (int i = 0; i < C_NF; i++)
		if (!isnan(r->v[role_of[i]]))
			offer(&d->c[i], i, r->v[role_of[i]], r, true, ord);
	if (r->nf)
		offer(&d->c[C_NF], C_NF, 0, r, true, ord);
	offer(&d->c[C_FIRST], C_FIRST, 0, r, true, ord);
	offer(&d->c[C_LAST], C_LAST, 0, r, true, ord);
}

/* One extreme a tile names (only its step and value are known). */
void gw__ds_cand(struct ds *d, bool sup, int64_t seg, int crit, int64_t step, double val)
{
	ds_slot(d, seg, sup, step);
	struct gw_series_row r = {.step = step, .seg = seg, .v = {NAN, NAN, NAN, NAN}};
	offer(&d->c[crit], crit, val, &r, false, -1);
}

/* ---- JSON --------------------------------------------------------------------------------- */

json_t *gw__series_segs_json(const struct gw_series_seg *s, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_pack("{s:I, s:s, s:I, s:I, s:I}", "segment", (json_int_t)s[i].seg,
		                      "reason", s[i].reason, "records", (json_int_t)s[i].records,
		                      "min_step", (json_int_t)s[i].min_step,
		                      "max_step", (json_int_t)s[i].max_step);
		json_object_set_new(o, "first_step", s[i].first_step >= 0 ? json_integer(s[i].first_step) : json_null());
		json_object_set_new(o, "restart_step", s[i].restart_step >= 0 ? json_integer(s[i].restart_step) : json_null());
		json_object_set_new(o, "superseded_from", s[i].cutoff != NO_CUTOFF ? json_integer(s[i].cutoff) : json_null());
		json_array_append_new(a, o);
	}
	return a;
}

static int cmp_step(const void *a, const void *b)
{
	const struct kept *x = a, *y = b;
	if (x->row.step != y->row.step)
		return x->row.step < y->row.step ? -1 : 1;
	if (x->row.seg != y->row.seg)
		return x->row.seg < y->row.seg ? -1 : 1;
	return x->ord < y->ord ? -1 : x->ord > y->ord;
}

void gw__series_sort(struct keptv *kv)
{
	if (kv->n)   /* qsort's base must not be NULL, even for 0 rows */
		qsort(kv->v, kv->n, sizeof(*kv->v), cmp_step);
}

json_t *gw__series_columns(const char *run, const struct keptv *kv, bool extra)
{
	static const char *const roles[GW_NROLES] = {"loss", "grad_norm", "lr", "throughput"};
	json_t *step = json_array(), *seg = json_array(), *sup = json_array(), *nf = json_array();
	json_t *v[GW_NROLES];
	for (int k = 0; k < GW_NROLES; k++)
		v[k] = json_array();
	json_t *ts = extra ? json_array() : NULL, *line = extra ? json_array() : NULL;
	json_t *ex = extra ? json_array() : NULL;
	for (size_t i = 0; i < kv->n; i++) {
		const struct kept *k = &kv->v[i];
		json_array_append_new(step, json_integer(k->row.step));
		json_array_append_new(seg, json_integer(k->row.seg));
		json_array_append_new(sup, json_integer(k->sup));
		json_array_append_new(nf, json_integer(k->row.nf));
		for (int r = 0; r < GW_NROLES; r++)
			json_array_append_new(v[r], gw_json_num(k->row.v[r]));
		if (extra) {
			json_array_append_new(ts, gw_json_num(k->ts));
			json_array_append_new(line, k->line >= 0 ? json_integer(k->line) : json_null());
			json_t *e = k->extra ? json_loads(k->extra, JSON_DECODE_ANY, NULL) : NULL;
			json_array_append_new(ex, e ? e : json_null());
		}
	}
	json_t *o = json_pack("{s:s, s:o, s:o, s:o, s:o}", "run", run, "step", step, "segment", seg,
	                      "superseded", sup, "nonfinite", nf);
	for (int k = 0; k < GW_NROLES; k++)
		json_object_set_new(o, roles[k], v[k]);
	if (extra) {
		json_object_set_new(o, "ts", ts);
		json_object_set_new(o, "line", line);
		json_object_set_new(o, "extra", ex);
	}
	return o;
}

/* Each segment's steps at or above the first step of any later segment
 * were logged again after a restart: superseded. */
void gw__series_set_cutoffs(struct gw_series_seg *s, size_t n)
{
	int64_t c = NO_CUTOFF;
	for (size_t i = n; i-- > 0;) {
		s[i].cutoff = c;
		if (s[i].records > 0 && s[i].min_step < c)
			c = s[i].min_step;
	}
}

/* ---- rows in memory ------------------------------------------------------------------------- */

json_t *gw_series_from_rows(const char *run, const struct gw_series_row *rows, size_t n,
                            struct gw_series_seg *segs, size_t nsegs, size_t max_points)
{
	for (size_t i = 0; i < nsegs; i++) {
		segs[i].min_step = segs[i].max_step = -1;
		segs[i].records = 0;
	}
	/* rows come segment by segment: one pass finds each one's extent */
	size_t si = 0;
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	for (size_t i = 0; i < n; i++) {
		while (si < nsegs && segs[si].seg < rows[i].seg)
			si++;
		lo = GW_MIN(lo, rows[i].step);
		hi = GW_MAX(hi, rows[i].step);
		if (si == nsegs || segs[si].seg != rows[i].seg)
			continue;
		struct gw_series_seg *s = &segs[si];
		if (!s->records++)
			s->min_step = s->max_step = rows[i].step;
		s->min_step = GW_MIN(s->min_step, rows[i].step);
		s->max_step = GW_MAX(s->max_step, rows[i].step);
	}
	gw__series_set_cutoffs(segs, nsegs);
	struct keptv kv = {0};
	bool ds_mode = max_points && n > max_points;
	struct ds d = {.from = lo, .out = &kv};
	if (ds_mode) {
		int64_t buckets = GW_MAX((int64_t)max_points / POINTS_PER_BUCKET, 1);
		d.width = GW_MAX((hi - lo) / buckets + 1, 1);
	}
	si = 0;
	for (size_t i = 0; i < n; i++) {
		while (si < nsegs && segs[si].seg < rows[i].seg)
			si++;
		int64_t cut = si < nsegs && segs[si].seg == rows[i].seg ? segs[si].cutoff : NO_CUTOFF;
		bool sup = rows[i].step >= cut;
		if (ds_mode) {
			gw__ds_row(&d, sup, &rows[i], (int64_t)i);
		} else {
			struct kept k = {.row = rows[i], .sup = sup, .full = true, .ord = (int64_t)i,
			                 .ts = NAN, .line = -1};
			if (gw__series_keep(&kv, &k) < 0)
				d.err = -ENOMEM;
		}
		if (d.err)
			break;
	}
	gw__ds_close(&d, true);
	if (d.err) {
		gw__series_keptv_free(&kv);
		return NULL;
	}
	gw__series_sort(&kv);
	json_t *o = gw__series_columns(run, &kv, false);
	json_object_set_new(o, "from", json_integer(n ? lo : 0));
	json_object_set_new(o, "to", json_integer(n ? hi : 0));
	json_object_set_new(o, "total", json_integer((json_int_t)n));
	json_object_set_new(o, "downsampled", json_boolean(kv.n < n));
	json_object_set_new(o, "max_points", json_integer((json_int_t)max_points));
	json_object_set_new(o, "segments", gw__series_segs_json(segs, nsegs));
	gw__series_keptv_free(&kv);
	return o;
}
