/*
 * tail: a run's most recent stored lines, read back to rebuild its
 * detector state (core/runs.c; store.h gw_store_read_tail): the newest n
 * records by the (run_id, seg, step) index, the events from the oldest of
 * them on, merged in the order the run sent them and handed over as
 * struct gw_rec with the wall clock each arrived at.  gw_store_reader keeps
 * one read-only connection with both queries prepared, for a restart that
 * rebuilds many runs; gw_store_read_tail opens its own.  (Split from
 * read.c, which it had taken over 600 lines.)
 */
#include "store.h"
#include "schema.h"

#include "util.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

struct tail_row {
	int64_t seg, step, rank;  /* rank -1: none */
	uint64_t line;
	double ts, recv, v[GW_NROLES], f[GW_NFIELDS];
	unsigned present, fields;
	struct gw_metric len[2];  /* the lengths the record declared (run_end.c) */
	size_t nlen;
	char *event;              /* NULL: a record */
	json_t *attrs;
};

struct gw_store_reader {
	sqlite3 *db;
	char *path;
	sqlite3_stmt *records, *events;   /* the tail's two queries, prepared once */
};

int gw_store_reader_open(const char *path, struct gw_store_reader **out, char *err,
                         size_t errlen)
{
	*out = NULL;
	struct gw_store_reader *rd = calloc(1, sizeof(*rd));
	if (!rd || !(rd->path = strdup(path))) {
		free(rd);
		return gw_errf(err, errlen, -ENOMEM, "out of memory");
	}
	int rc = gw__store_open_ro(path, &rd->db, NULL, err, errlen);
	if (rc < 0) {
		gw_store_reader_close(rd);
		return rc;
	}
	/* the newest n records, by the index on (run_id, seg, step), newest
	 * first; the events from the oldest of them on */
	if (sqlite3_prepare_v2(rd->db, "SELECT seg, step, line, ts, loss, grad_norm, lr, throughput, "
	                               "nonfinite, recv, json_extract(extra, '$.max_steps'), "
	                               "json_extract(extra, '$.total_steps'), rank, "
	                               "json_extract(extra, '$.loss_scale'), json_extract(extra, "
	                               "'$.skipped'), json_extract(extra, '$.nan_iterations') FROM records "
	                               "WHERE run_id = (SELECT id FROM runs WHERE name = ?1) "
	                               "ORDER BY seg DESC, step DESC LIMIT ?2", -1, &rd->records,
	                       NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(rd->db, "SELECT seg, step, line, ts, name, attrs, recv FROM events "
	                               "WHERE run_id = (SELECT id FROM runs WHERE name = ?1) AND "
	                               "(seg > ?2 OR (seg = ?2 AND step >= ?3)) ORDER BY seg, step, id",
	                       -1, &rd->events, NULL) != SQLITE_OK) {
		rc = gw_errf(err, errlen, -EIO, "%s: %s", path, sqlite3_errmsg(rd->db));
		gw_store_reader_close(rd);
		return rc;
	}
	*out = rd;
	return 0;
}

void gw_store_reader_close(struct gw_store_reader *rd)
{
	if (!rd)
		return;
	sqlite3_finalize(rd->records);
	sqlite3_finalize(rd->events);
	sqlite3_close(rd->db);
	free(rd->path);
	free(rd);
}

int gw_store_read_tail(const char *path, const char *run, size_t n,
                       int (*fn)(void *data, const struct gw_rec *rec, int64_t seg, uint64_t line,
                                 double recv),
                       void *data, char *err, size_t errlen)
{
	struct gw_store_reader *rd;
	int rc = gw_store_reader_open(path, &rd, err, errlen);
	if (rc < 0)
		return rc;
	rc = gw_store_read_tail_on(rd, run, n, fn, data, err, errlen);
	gw_store_reader_close(rd);
	return rc;
}

int gw_store_read_tail_on(struct gw_store_reader *rd, const char *run, size_t n,
                          int (*fn)(void *data, const struct gw_rec *rec, int64_t seg,
                                    uint64_t line, double recv),
                          void *data, char *err, size_t errlen)
{
	sqlite3 *db = rd->db;
	const char *path = rd->path;
	int rc;
	struct tail_row *rows = calloc(n ? n : 1, sizeof(*rows));
	struct tail_row *evs = NULL;
	size_t nrows = 0, nev = 0, cap_ev = 0;
	sqlite3_stmt *st = rd->records;
	if (!rows) {
		rc = -ENOMEM;
		goto out;
	}
	sqlite3_bind_text(st, 1, run, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)n);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && nrows < n) {
		struct tail_row *t = &rows[nrows++];
		t->seg = sqlite3_column_int64(st, 0);
		t->step = sqlite3_column_int64(st, 1);
		t->line = (uint64_t)sqlite3_column_int64(st, 2);
		t->ts = gw__store_col_real(st, 3);
		t->recv = gw__store_col_real(st, 9);
		static const char *const lens[2] = {"max_steps", "total_steps"};
		for (int k = 0; k < 2; k++)
			if (sqlite3_column_type(st, 10 + k) != SQLITE_NULL)
				t->len[t->nlen++] = (struct gw_metric){lens[k], sqlite3_column_double(st, 10 + k)};
		unsigned nonfinite = (unsigned)sqlite3_column_int(st, 8);
		t->rank = sqlite3_column_type(st, 12) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 12);
		/* the fp16 fields, stored among the extras (store.c extras_json);
		 * a non-finite one as the string "NaN", "Infinity", ... */
		for (int f = 0; f < GW_NFIELDS; f++) {
			int type = sqlite3_column_type(st, 13 + f);
			if (type == SQLITE_NULL)
				continue;
			t->f[f] = type == SQLITE_TEXT
			                  ? strtod((const char *)sqlite3_column_text(st, 13 + f), NULL)
			                  : sqlite3_column_double(st, 13 + f);
			t->fields |= 1u << f;
		}
		for (int k = 0; k < GW_NROLES; k++) {
			t->v[k] = gw__store_col_real(st, 4 + k);
			/* a NaN is stored as NULL with its bit set */
			if (sqlite3_column_type(st, 4 + k) != SQLITE_NULL || ((nonfinite >> k) & 1u))
				t->present |= 1u << k;
		}
	}
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		goto sqlfail;
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	/* the events from the oldest of those records on */
	int64_t min_seg = nrows ? rows[nrows - 1].seg : 0, min_step = nrows ? rows[nrows - 1].step : 0;
	st = rd->events;
	sqlite3_bind_text(st, 1, run, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, min_seg);
	sqlite3_bind_int64(st, 3, min_step);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (gw_grow((void **)&evs, &cap_ev, nev + 1, sizeof(*evs)) < 0) {
			rc = -ENOMEM;
			goto out;
		}
		struct tail_row *t = &evs[nev++];
		memset(t, 0, sizeof(*t));
		t->rank = -1;
		t->seg = sqlite3_column_int64(st, 0);
		t->step = sqlite3_column_int64(st, 1);
		t->line = (uint64_t)sqlite3_column_int64(st, 2);
		t->ts = gw__store_col_real(st, 3);
		t->recv = gw__store_col_real(st, 6);
		t->event = strdup((const char *)sqlite3_column_text(st, 4));
		const char *a = (const char *)sqlite3_column_text(st, 5);
		t->attrs = a ? json_loads(a, 0, NULL) : json_object();
		if (!t->event || !t->attrs) {
			rc = -ENOMEM;
			goto out;
		}
	}
	if (rc != SQLITE_DONE)
		goto sqlfail;
	/* oldest first, a record before an event at the same (seg, step): a
	 * checkpoint is saved after its step; a resume opens its segment
	 * before the steps that follow it */
	rc = 0;
	size_t i = nrows, j = 0;
	while (rc == 0 && (i > 0 || j < nev)) {
		const struct tail_row *t;
		if (i > 0 && (j >= nev || rows[i - 1].seg < evs[j].seg ||
		              (rows[i - 1].seg == evs[j].seg && rows[i - 1].step <= evs[j].step)))
			t = &rows[--i];
		else
			t = &evs[j++];
		struct gw_rec rec = {.run = run, .run_len = strlen(run), .step = t->step, .ts = t->ts,
		                     .present = t->present, .extra = t->len, .n_extra = t->nlen,
		                     .event = t->event, .attrs = t->attrs};
		memcpy(rec.v, t->v, sizeof(rec.v));
		rec.fields = t->fields;
		memcpy(rec.f, t->f, sizeof(rec.f));
		/* a stored record's rank is its run's primary writer's: fed as a
		 * label, it makes that rank the primary again (engine.h "Ranks") */
		if (t->rank >= 0 && t->rank <= GW_WIRE_RANK_MAX) {
			rec.has_rank = rec.rank_label = true;
			rec.rank = (uint32_t)t->rank;
		}
		rc = fn(data, &rec, t->seg, t->line, t->recv);
	}
	goto out;
sqlfail:
	rc = gw_errf(err, errlen, -EIO, "%s: reading run %s: %s", path, run, sqlite3_errmsg(db));
out:
	/* ready for the next run: no statement left open (it would hold a
	 * read transaction, and the WAL could not be checkpointed past it) */
	sqlite3_reset(rd->records);
	sqlite3_clear_bindings(rd->records);
	sqlite3_reset(rd->events);
	sqlite3_clear_bindings(rd->events);
	for (size_t k = 0; k < nev; k++) {
		free(evs[k].event);
		json_decref(evs[k].attrs);
	}
	free(evs);
	free(rows);
	return rc;
}

