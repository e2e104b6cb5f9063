/*
 * ship_sq: the shipper's SQLite side (ship_impl.h): the committed rows
 * after the cursors, read in one snapshot into COPY's binary format; the
 * backlog; the durable cursors in fleet_cursor.  The shipper's thread
 * only, on its own connection.
 */
#include "ship_impl.h"

#include "clock.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- COPY binary -------------------------------------------------------------------- */

static int put(struct gw__fleet_buf *t, const char *s, size_t n)
{
	if (t->len + n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 65536;
		while (cap < t->len + n + 1)
			cap *= 2;
		char *p = realloc(t->p, cap);
		if (!p)
			return -ENOMEM;
		t->p = p;
		t->cap = cap;
	}
	memcpy(t->p + t->len, s, n);
	t->len += n;
	return 0;
}

/* COPY's binary format (PostgreSQL's docs, "Binary Format"): a header,
 * per row a field count and per field its length (-1: NULL) and value in
 * network byte order, a trailer.  No number is printed or parsed on either
 * side: the doubles cross as their eight bytes, exactly. */
static const char copy_header[19] = "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0";

static int put_be(struct gw__fleet_buf *t, uint64_t v, int bytes)
{
	unsigned char b[8];
	for (int i = 0; i < bytes; i++)
		b[i] = (unsigned char)(v >> (8 * (bytes - 1 - i)));
	return put(t, (const char *)b, (size_t)bytes);
}

static int put_field(struct gw__fleet_buf *t, const void *p, int32_t len)
{
	int rc = put_be(t, (uint32_t)len, 4);
	return rc || len <= 0 ? rc : put(t, p, (size_t)len);
}

/* One row of st: node, then its columns as types says (t text, B bigint,
 * i int, f float8: the shared table's column types). */
static int put_row(struct gw__fleet_buf *t, const char *node, sqlite3_stmt *st, const char *types)
{
	int n = (int)strlen(types);
	int rc = t->len ? 0 : put(t, copy_header, sizeof(copy_header));
	rc = rc ?: put_be(t, (uint16_t)n, 2);
	rc = rc ?: put_field(t, node, (int32_t)strlen(node));
	for (int c = 0; rc == 0 && c + 1 < n; c++) {
		if (sqlite3_column_type(st, c) == SQLITE_NULL) {
			rc = put_be(t, 0xffffffffu, 4);
			continue;
		}
		switch (types[c + 1]) {
		case 'B':
			rc = put_be(t, 8, 4) ?: put_be(t, (uint64_t)sqlite3_column_int64(st, c), 8);
			break;
		case 'i':
			rc = put_be(t, 4, 4) ?: put_be(t, (uint32_t)(int32_t)sqlite3_column_int64(st, c), 4);
			break;
		case 'f': {
			double v = sqlite3_column_double(st, c);
			uint64_t u;
			memcpy(&u, &v, sizeof(u));
			rc = put_be(t, 8, 4) ?: put_be(t, u, 8);
			break;
		}
		default: {
			const unsigned char *s = sqlite3_column_text(st, c);
			rc = s ? put_field(t, s, sqlite3_column_bytes(st, c)) : -ENOMEM;
		}
		}
	}
	return rc;
}

/* ---- SQLite side ------------------------------------------------------------------- */

static int sq_fail(struct gw_fleet *f, int rc, const char *what)
{
	snprintf(f->pg.err, sizeof(f->pg.err), "%s: %s", what, sqlite3_errmsg(f->db));
	return rc == SQLITE_BUSY ? -EBUSY : -EIO;
}

int gw__fleet_sq_open(struct gw_fleet *f, char *err, size_t errlen)
{
	int rc = sqlite3_open_v2(f->db_path, &f->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK)
		return gw_errf(err, errlen, -EIO, "fleet: cannot open %s: %s", f->db_path,
		               f->db ? sqlite3_errmsg(f->db) : sqlite3_errstr(rc));
	sqlite3_busy_timeout(f->db, 5000);
	for (int t = 0; t < GW_FLEET_N_TABLES; t++)
		if (sqlite3_prepare_v3(f->db, gw__fleet_tables[t].select, -1, SQLITE_PREPARE_PERSISTENT,
		                       &f->sel[t], NULL) != SQLITE_OK)
			return gw_errf(err, errlen, -EIO, "fleet: %s: %s", f->db_path, sqlite3_errmsg(f->db));
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(f->db, "SELECT tbl, last_id FROM fleet_cursor", -1, &st, NULL) != SQLITE_OK)
		return gw_errf(err, errlen, -EIO, "fleet: %s: %s", f->db_path, sqlite3_errmsg(f->db));
	while (sqlite3_step(st) == SQLITE_ROW)
		for (int t = 0; t < GW_FLEET_N_TABLES; t++)
			if (!strcmp((const char *)sqlite3_column_text(st, 0), gw_fleet_table_names[t]))
				f->cursor[t] = sqlite3_column_int64(st, 1);
	sqlite3_finalize(st);
	return 0;
}

/* Read the rows to ship into f->buf (one snapshot). */
int gw__fleet_sq_read(struct gw_fleet *f)
{
	int rc = sqlite3_exec(f->db, "BEGIN", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return sq_fail(f, rc, "SQLite BEGIN");
	for (int t = 0; t < GW_FLEET_N_TABLES && rc == SQLITE_OK; t++) {
		sqlite3_stmt *st = f->sel[t];
		f->buf[t].len = 0;
		f->rows[t] = 0;
		if (gw__fleet_tables[t].by_id) {
			sqlite3_bind_int64(st, 1, f->cursor[t]);
			sqlite3_bind_int64(st, 2, f->cfg.batch_rows);
		} else {
			sqlite3_bind_double(st, 1, f->changed_since);
			sqlite3_bind_int64(st, 2, -1);
		}
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			if (put_row(&f->buf[t], f->cfg.node, st, gw__fleet_tables[t].types) < 0) {
				rc = SQLITE_NOMEM;
				break;
			}
			if (gw__fleet_tables[t].by_id)
				f->last[t] = sqlite3_column_int64(st, 0);
			f->rows[t]++;
		}
		if (f->rows[t] && put_be(&f->buf[t], 0xffff, 2) < 0)   /* the trailer */
			rc = SQLITE_NOMEM;
		rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
		sqlite3_reset(st);
	}
	if (rc != SQLITE_OK) {
		int r = sq_fail(f, rc, "reading the rows to ship");
		sqlite3_exec(f->db, "ROLLBACK", NULL, NULL, NULL);
		return r;
	}
	sqlite3_exec(f->db, "COMMIT", NULL, NULL, NULL);
	return 0;
}

/* The committed records and events not shipped yet, and the age of the
 * oldest of them. */
void gw__fleet_sq_backlog(struct gw_fleet *f, uint64_t *backlog, double *lag)
{
	static const char *const q[] = {
		"SELECT (SELECT coalesce(max(id), 0) FROM records) - ?1,"
		" (SELECT recv FROM records WHERE id > ?1 ORDER BY id LIMIT 1)",
		"SELECT (SELECT coalesce(max(id), 0) FROM events) - ?1,"
		" (SELECT recv FROM events WHERE id > ?1 ORDER BY id LIMIT 1)",
	};
	const int tb[] = {GW_FLEET_RECORDS, GW_FLEET_EVENTS};
	double now = gw_wall_now(), oldest = now;
	*backlog = 0;
	for (int i = 0; i < 2; i++) {
		sqlite3_stmt *st;
		if (sqlite3_prepare_v2(f->db, q[i], -1, &st, NULL) != SQLITE_OK)
			continue;
		sqlite3_bind_int64(st, 1, f->cursor[tb[i]]);
		if (sqlite3_step(st) == SQLITE_ROW) {
			int64_t n = sqlite3_column_int64(st, 0);
			*backlog += n > 0 ? (uint64_t)n : 0;
			if (sqlite3_column_type(st, 1) != SQLITE_NULL && sqlite3_column_double(st, 1) < oldest)
				oldest = sqlite3_column_double(st, 1);
		}
		sqlite3_finalize(st);
	}
	*lag = *backlog ? now - oldest : 0;
	if (*lag < 0)
		*lag = 0;
}

/* The cursors after PostgreSQL committed; a failure here is logged and
 * only means those rows are sent again (and dropped there) after a restart. */
void gw__fleet_sq_save_cursors(struct gw_fleet *f)
{
	sqlite3_stmt *st;
	if (sqlite3_exec(f->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(f->db, "INSERT INTO fleet_cursor(tbl, last_id, shipped_at)"
	                       " VALUES(?1, ?2, ?3) ON CONFLICT(tbl) DO UPDATE SET"
	                       " last_id = excluded.last_id, shipped_at = excluded.shipped_at",
	                       -1, &st, NULL) != SQLITE_OK) {
		gw_log_warn("fleet: cannot save the cursors (sent again after a restart): %s",
		            sqlite3_errmsg(f->db));
		sqlite3_exec(f->db, "ROLLBACK", NULL, NULL, NULL);
		return;
	}
	int rc = SQLITE_DONE;
	for (int t = 0; t < GW_FLEET_N_TABLES && rc == SQLITE_DONE; t++) {
		if (!gw__fleet_tables[t].by_id)
			continue;
		sqlite3_bind_text(st, 1, gw_fleet_table_names[t], -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, f->cursor[t]);
		sqlite3_bind_double(st, 3, gw_wall_now());
		rc = sqlite3_step(st);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE || sqlite3_exec(f->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		gw_log_warn("fleet: cannot save the cursors (sent again after a restart): %s",
		            sqlite3_errmsg(f->db));
		sqlite3_exec(f->db, "ROLLBACK", NULL, NULL, NULL);
	}
}

void gw__fleet_sq_max_ids(struct gw_fleet *f, int64_t *records, int64_t *events)
{
	sqlite3_stmt *st;
	*records = *events = -1;
	if (sqlite3_prepare_v2(f->db, "SELECT (SELECT coalesce(max(id), 0) FROM records),"
	                       " (SELECT coalesce(max(id), 0) FROM events)", -1, &st, NULL) != SQLITE_OK)
		return;
	if (sqlite3_step(st) == SQLITE_ROW) {
		*records = sqlite3_column_int64(st, 0);
		*events = sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
}
