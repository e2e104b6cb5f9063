/*
 * Start-up reads for alert delivery (see store.h, "alert delivery outbox").
 *
 * The daemon calls these once, before the event loop runs and before the
 * writer has anything of this run queued, so a synchronous read on its own
 * read-only connection is fine here.  The outbox (alerts/outbox.c) rebuilds
 * from them what it must still send and which version each alert is at.
 */
#include "store.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>

static int open_ro(const char *path, sqlite3 **db, char *err, size_t errlen)
{
	int rc = sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "cannot open %s: %s", path,
		         *db ? sqlite3_errmsg(*db) : sqlite3_errstr(rc));
		sqlite3_close(*db);
		*db = NULL;
		return rc == SQLITE_CANTOPEN ? -ENOENT : -EIO;
	}
	sqlite3_busy_timeout(*db, 5000);
	return 0;
}

static const char *text(sqlite3_stmt *st, int k)
{
	return (const char *)sqlite3_column_text(st, k);
}

/* Run sql and hand each row to row(); the connection is closed after. */
static int each_row(const char *path, const char *sql,
                    void (*row)(sqlite3_stmt *st, void *ctx), void *ctx,
                    char *err, size_t errlen)
{
	sqlite3 *db = NULL;
	int rc = open_ro(path, &db, err, errlen);
	if (rc < 0)
		return rc;
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(db));
		sqlite3_close(db);
		return -EIO;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		row(st, ctx);
	int out = 0;
	if (rc != SQLITE_DONE) {
		snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(db));
		out = -EIO;
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	return out;
}

struct outbox_ctx {
	void (*fn)(void *data, const char *sink, const char *alert_id, int64_t version,
	           const char *kind, const char *run, double created, const char *alert_json,
	           int64_t attempts);
	void *data;
};

static void outbox_row(sqlite3_stmt *st, void *ctx)
{
	struct outbox_ctx *c = ctx;
	c->fn(c->data, text(st, 0), text(st, 1), sqlite3_column_int64(st, 2), text(st, 3),
	      text(st, 4), sqlite3_column_double(st, 5), text(st, 6), sqlite3_column_int64(st, 7));
}

int gw_store_read_outbox(const char *path,
                         void (*fn)(void *data, const char *sink, const char *alert_id,
                                    int64_t version, const char *kind, const char *run,
                                    double created, const char *alert_json, int64_t attempts),
                         void *data, char *err, size_t errlen)
{
	struct outbox_ctx c = {fn, data};
	return each_row(path,
	                "SELECT d.sink, o.alert_id, o.version, o.kind, o.run, o.created, o.alert, "
	                "d.attempts FROM deliveries d JOIN outbox o "
	                "ON o.alert_id = d.alert_id AND o.version = d.version "
	                "WHERE d.state = 'pending' ORDER BY o.seq",
	                outbox_row, &c, err, errlen);
}

struct versions_ctx {
	void (*fn)(void *data, const char *alert_id, int64_t version, bool open,
	           const char *alert_json);
	void *data;
};

static void versions_row(sqlite3_stmt *st, void *ctx)
{
	struct versions_ctx *c = ctx;
	c->fn(c->data, text(st, 0), sqlite3_column_int64(st, 1), sqlite3_column_int(st, 2) != 0,
	      text(st, 3));
}

int gw_store_read_alert_versions(const char *path,
                                 void (*fn)(void *data, const char *alert_id, int64_t version,
                                            bool open, const char *alert_json),
                                 void *data, char *err, size_t errlen)
{
	struct versions_ctx c = {fn, data};
	return each_row(path,
	                "SELECT a.id, a.version, a.state = 'open', "
	                "CASE WHEN a.state = 'open' THEN (SELECT o.alert FROM outbox o "
	                "  WHERE o.alert_id = a.id AND o.kind != 'resolve' "
	                "  ORDER BY o.version DESC LIMIT 1) END "
	                "FROM alerts a JOIN runs r ON r.id = a.run_id "
	                "WHERE a.state = 'open' OR a.seg = r.last_seg",
	                versions_row, &c, err, errlen);
}
