/*
 * tiles: the store writer's side of storage/series.c (see tiles.h).  While a commit's
 * records are written, gw__tiles_add keeps, per (run, segment, 256-step
 * tile) the batch touches, the value and step of the minimum and maximum
 * loss and grad norm, the minimum throughput, the first LR and the first
 * non-finite value (the lib's integer-key table over the batch's tiles,
 * keyed by a 64-bit FNV-1a of the triple, so interleaved runs cost one
 * probe per record; two triples that hash alike each get their own entry,
 * and the upsert merges entries of one tile); gw__tiles_flush merges them
 * into record_tiles with one upsert per tile just before COMMIT.  So ingest pays
 * per tile and commit, not per record (a per-row trigger measured 4x
 * slower; docs/web.md).
 */
#include "tiles.h"

#include "buf.h"
#include "hash.h"
#include "intset.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdlib.h>

/* Upsert of one extreme: keep the old value and its step unless the new
 * one is better ("<" for a minimum).  Every right-hand side of an UPDATE
 * reads the old row, so the step is compared before the value changes. */
#define GW__TILE_MERGE(c, op) \
	" " c "_s = CASE WHEN excluded." c " IS NOT NULL AND (" c " IS NULL OR excluded." c " " op " " c ")" \
	" THEN excluded." c "_s ELSE " c "_s END," \
	" " c " = CASE WHEN excluded." c " IS NOT NULL AND (" c " IS NULL OR excluded." c " " op " " c ")" \
	" THEN excluded." c " ELSE " c " END"

struct tile_acc {
	int64_t run_id, seg, tile;
	int64_t n;
	double val[5];            /* lmin lmax gmin gmax tmin (NaN: none) */
	int64_t at[5];
	int64_t lr_s, nf_s;       /* -1: none */
};

struct gw__tiles {
	sqlite3 *db;              /* the connection st belongs to */
	sqlite3_stmt *st;
	struct tile_acc *v;
	size_t n, cap;
	size_t last;              /* the tile touched last (records come in runs) */
	struct gw_intset by_key;  /* tile_key -> index into v */
};

static uint64_t tile_key(int64_t run_id, int64_t seg, int64_t tile)
{
	const int64_t k[3] = {run_id, seg, tile};
	return gw_fnv1a64_add(GW_FNV64_INIT, k, sizeof(k));
}

struct gw__tiles *gw__tiles_new(void)
{
	return calloc(1, sizeof(struct gw__tiles));
}

void gw__tiles_free(struct gw__tiles *t)
{
	if (t) {
		sqlite3_finalize(t->st);
		gw_intset_free(&t->by_key);
		free(t->v);
	}
	free(t);
}

void gw__tiles_clear(struct gw__tiles *t)
{
	t->n = 0;
	t->last = 0;
	gw_intset_clear(&t->by_key);
}

void gw__tiles_drop_run(struct gw__tiles *t, int64_t run_id)
{
	/* run ids are >= 1: an entry of run -1 matches no lookup and is not
	 * flushed; its key stays in the table until gw__tiles_clear */
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].run_id == run_id)
			t->v[i].run_id = -1;
}

int gw__tiles_add(struct gw__tiles *t, int64_t run_id, int64_t seg, int64_t step,
                  const double v[GW_NROLES], unsigned nf)
{
	int64_t tile = step >> GW_SERIES_TILE_SHIFT;
	struct tile_acc *a = NULL;
	if (t->last < t->n) {
		struct tile_acc *l = &t->v[t->last];
		if (l->run_id == run_id && l->seg == seg && l->tile == tile)
			a = l;
	}
	/* interleaved runs: the table */
	uint64_t key = 0;
	uint32_t at;
	if (!a) {
		key = tile_key(run_id, seg, tile);
		if (gw_intset_find(&t->by_key, key, &at) == 0) {
			struct tile_acc *c = &t->v[at];
			if (c->run_id == run_id && c->seg == seg && c->tile == tile)
				a = c;
		}
	}
	if (!a) {
		/* new, or another triple with its key: the key names the newest */
		if (t->n >= UINT32_MAX || gw_grow((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v)) < 0 ||
		    gw_intset_set(&t->by_key, key, (uint32_t)t->n) < 0)
			return -ENOMEM;
		a = &t->v[t->n++];
		*a = (struct tile_acc){.run_id = run_id, .seg = seg, .tile = tile, .lr_s = -1, .nf_s = -1,
		                       .val = {NAN, NAN, NAN, NAN, NAN}};
	}
	t->last = (size_t)(a - t->v);
	a->n++;
	static const int role[5] = {GW_ROLE_LOSS, GW_ROLE_LOSS, GW_ROLE_GRAD_NORM, GW_ROLE_GRAD_NORM,
	                            GW_ROLE_THROUGHPUT};
	bool nonfinite = nf != 0;
	for (int k = 0; k < GW_NROLES; k++)
		nonfinite |= isinf(v[k]);
	for (int i = 0; i < 5; i++) {
		double x = v[role[i]];
		if (!isfinite(x))
			continue;
		bool is_max = i == 1 || i == 3;
		if (isnan(a->val[i]) || (is_max ? x > a->val[i] : x < a->val[i])) {
			a->val[i] = x;
			a->at[i] = step;
		}
	}
	if (a->lr_s < 0 && isfinite(v[GW_ROLE_LR]))
		a->lr_s = step;
	if (a->nf_s < 0 && nonfinite)
		a->nf_s = step;
	return 0;
}

int gw__tiles_flush(struct gw__tiles *t, sqlite3 *db)
{
	static const char sql[] =
		"INSERT INTO record_tiles VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16)"
		" ON CONFLICT DO UPDATE SET n = n + excluded.n,"
		GW__TILE_MERGE("lmin", "<") "," GW__TILE_MERGE("lmax", ">") ","
		GW__TILE_MERGE("gmin", "<") "," GW__TILE_MERGE("gmax", ">") ","
		GW__TILE_MERGE("tmin", "<") ","
		" lr_s = coalesce(min(lr_s, excluded.lr_s), lr_s, excluded.lr_s),"
		" nf_s = coalesce(min(nf_s, excluded.nf_s), nf_s, excluded.nf_s)";
	if (!t->n)
		return SQLITE_OK;
	int rc;
	if (t->db != db) {
		sqlite3_finalize(t->st);
		t->st = NULL;
		t->db = db;
		if ((rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &t->st, NULL)) != SQLITE_OK) {
			t->db = NULL;
			return rc;
		}
	}
	sqlite3_stmt *st = t->st;
	rc = SQLITE_OK;
	for (size_t i = 0; i < t->n && rc == SQLITE_OK; i++) {
		const struct tile_acc *a = &t->v[i];
		if (a->run_id < 0)
			continue;   /* its run was deleted (gw__tiles_drop_run) */
		sqlite3_bind_int64(st, 1, a->run_id);
		sqlite3_bind_int64(st, 2, a->seg);
		sqlite3_bind_int64(st, 3, a->tile);
		sqlite3_bind_int64(st, 4, a->n);
		for (int k = 0; k < 5; k++) {
			if (isnan(a->val[k])) {
				sqlite3_bind_null(st, 5 + 2 * k);
				sqlite3_bind_null(st, 6 + 2 * k);
			} else {
				sqlite3_bind_double(st, 5 + 2 * k, a->val[k]);
				sqlite3_bind_int64(st, 6 + 2 * k, a->at[k]);
			}
		}
		if (a->lr_s >= 0)
			sqlite3_bind_int64(st, 15, a->lr_s);
		else
			sqlite3_bind_null(st, 15);
		if (a->nf_s >= 0)
			sqlite3_bind_int64(st, 16, a->nf_s);
		else
			sqlite3_bind_null(st, 16);
		rc = sqlite3_step(st);
		rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
		sqlite3_reset(st);
	}
	if (rc == SQLITE_OK)
		gw__tiles_clear(t);
	return rc;
}
