/*
 * pgio: libpq driven without blocking forever (the fleet module's
 * internal header; not its face).
 *
 * Every call runs libpq in non-blocking mode and waits on its socket with
 * poll() in slices of at most 200 ms, giving up at a deadline or as soon
 * as *stop is set: a PostgreSQL that stops answering (a stopped
 * postmaster, a network that holds packets) costs the shipper a timeout,
 * never a hang, and never delays the daemon's stop by more than a slice.
 * Errors are negative errnos with libpq's message in err.
 */
#ifndef GW_FLEET_PGIO_H
#define GW_FLEET_PGIO_H

#include <libpq-fe.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct gw_pgio {
	PGconn *conn;              /* NULL: not connected */
	const atomic_bool *stop;   /* give up when set (may be NULL) */
	double timeout_s;          /* per call */
	/* called between waits (at least every 200 ms) while a call waits on
	 * PostgreSQL: the shipper keeps its backlog figures current (may be
	 * NULL) */
	void (*idle)(void *data);
	void *idle_data;
	char err[256];
};

/* Connect (keepalives on, application_name gradwatchd); the DSN's own
 * keys win.  0 or a negative errno (err: libpq's reason). */
int gw_pgio_connect(struct gw_pgio *p, const char *dsn);
void gw_pgio_close(struct gw_pgio *p);

/* Run sql (one or more statements; no parameters), all results
 * checked.  0 or a negative errno. */
int gw_pgio_exec(struct gw_pgio *p, const char *sql);

/* Run sql, one statement with parameters $1..$n (text; NULL is SQL NULL),
 * and hand back its one result (PGRES_TUPLES_OK; caller PQclear()s).  NULL
 * on failure (err says why). */
PGresult *gw_pgio_query(struct gw_pgio *p, const char *sql, int n, const char *const *params);

/* COPY ... FROM STDIN (sql) with data[0..len) in the format sql names.
 * 0 or a negative errno. */
int gw_pgio_copy(struct gw_pgio *p, const char *sql, const char *data, size_t len);

/* The shared tables (fleet/ship.c), created when missing: one script
 * for gw_pgio_exec. */
extern const char gw__fleet_pg_schema[];

/* Whether a failure left the connection unusable (drop and reconnect). */
bool gw_pgio_broken(const struct gw_pgio *p);

#endif
