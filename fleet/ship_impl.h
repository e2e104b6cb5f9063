/*
 * ship_impl: what the shipper's two halves share (the fleet module's
 * internal header, not its face): the tables shipped, the shipper's state,
 * and the SQLite side (ship_sq.c: reading committed rows into COPY's
 * binary format, the backlog, the durable cursors) that the thread
 * (ship.c: PostgreSQL, the loop) drives.
 */
#ifndef GW_FLEET_SHIP_IMPL_H
#define GW_FLEET_SHIP_IMPL_H

#include "fleet.h"
#include "pgio.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct gw__fleet_table {
	const char *select;        /* SQLite: ?1 the cursor or change time, ?2 the limit */
	const char *copy;          /* COPY into the temporary table */
	const char *merge;         /* from it into the shared one */
	bool by_id;                /* records, events: column 0 is the local id (the cursor) */
	const char *direct;        /* by_id: COPY straight into the shared table */
	const char *types;         /* the shared table's columns: t text, B bigint, i int,
	                              f float8 (node first) */
};

/* runs, segments, records, events, alerts (enum gw_fleet_table order) */
extern const struct gw__fleet_table gw__fleet_tables[GW_FLEET_N_TABLES];

/* a growing byte buffer for one table's COPY data */
struct gw__fleet_buf {
	char *p;
	size_t len, cap;
};

struct gw_fleet {
	struct gw_fleet_cfg cfg;   /* dsn owned (a copy) */
	char *db_path;
	pthread_t thread;
	bool started;
	pthread_mutex_t mu;        /* guards st and the wake-up */
	pthread_cond_t cv;
	atomic_bool stop;
	struct gw_fleet_stats st;

	/* the thread's own */
	sqlite3 *db;
	sqlite3_stmt *sel[GW_FLEET_N_TABLES];
	struct gw_pgio pg;
	bool pg_ready;             /* schema and temporary tables there, cursors in step */
	bool upsert_only;          /* a direct COPY met a row already there: the
	                              temporary tables and ON CONFLICT for every
	                              table, until the next connection */
	int64_t cursor[GW_FLEET_N_TABLES]; /* by_id tables: the last id in PostgreSQL */
	double changed_since;      /* the others: changes at or after this wall time */
	struct gw__fleet_buf buf[GW_FLEET_N_TABLES];
	size_t rows[GW_FLEET_N_TABLES];
	int64_t last[GW_FLEET_N_TABLES];   /* by_id: the last id read */
	uint64_t crash_after, commits;
	double backlog_at;         /* wall time of the last backlog refresh */
};

/* ship_sq.c.  Open the shipper's own SQLite connection, prepare the
 * reads, load the durable cursors: 0 or a negative errno (err). */
int gw__fleet_sq_open(struct gw_fleet *f, char *err, size_t errlen);
/* Read the rows to ship into f->buf, f->rows, f->last (one snapshot):
 * 0 or a negative errno (f->pg.err says why). */
int gw__fleet_sq_read(struct gw_fleet *f);
/* The committed records and events not shipped, the oldest one's age. */
void gw__fleet_sq_backlog(struct gw_fleet *f, uint64_t *backlog, double *lag);
/* The highest record and event ids in the file (0: none; -1: unreadable). */
void gw__fleet_sq_max_ids(struct gw_fleet *f, int64_t *records, int64_t *events);
/* Save f->cursor in SQLite (logged, not fatal, when it cannot). */
void gw__fleet_sq_save_cursors(struct gw_fleet *f);

#endif
