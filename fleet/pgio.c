/*
 * pgio: libpq without blocking forever (see pgio.h).  The connection is
 * made with PQconnectStartParams/PQconnectPoll and used in non-blocking
 * mode: send, flush while the socket takes it, consume input while libpq
 * is busy, each wait a poll() of at most SLICE_MS.
 */
#include "pgio.h"

#include "clock.h"
#include "util.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#define SLICE_MS 200

static double mono_s(void)
{
	return (double)gw_mono_ms() / 1000.0;
}

static int fail(struct gw_pgio *p, int rc, const char *what)
{
	const char *m = p->conn ? PQerrorMessage(p->conn) : "";
	snprintf(p->err, sizeof(p->err), "%s%s%.*s", what, *m ? ": " : "",
	         (int)strcspn(m, "\n"), m);
	return rc;
}

/* Wait until the socket is readable (or writable too, when write), the
 * deadline passes (-ETIMEDOUT) or stop is set (-ECANCELED). */
static int wait_sock(struct gw_pgio *p, bool read, bool write, double deadline)
{
	for (;;) {
		if (p->stop && atomic_load(p->stop))
			return fail(p, -ECANCELED, "stopping");
		double left = deadline - mono_s();
		if (left <= 0)
			return fail(p, -ETIMEDOUT, "PostgreSQL did not answer in time");
		struct pollfd pfd = {.fd = PQsocket(p->conn),
		                     .events = (short)((read ? POLLIN : 0) | (write ? POLLOUT : 0))};
		if (pfd.fd < 0)
			return fail(p, -EPIPE, "no connection");
		int ms = left * 1000 < SLICE_MS ? (int)(left * 1000) + 1 : SLICE_MS;
		int n = poll(&pfd, 1, ms);
		if (n > 0)
			return 0;
		if (p->idle)
			p->idle(p->idle_data);
		if (n < 0 && errno != EINTR)
			return fail(p, -errno, "poll");
	}
}

int gw_pgio_connect(struct gw_pgio *p, const char *dsn)
{
	/* ours first: the DSN (expanded from "dbname") overrides them */
	const char *const keys[] = {"application_name", "connect_timeout", "keepalives",
	                            "keepalives_idle", "keepalives_interval", "keepalives_count",
	                            "dbname", NULL};
	const char *const vals[] = {"gradwatchd", "10", "1", "10", "5", "3", dsn, NULL};
	double deadline = mono_s() + p->timeout_s;
	p->conn = PQconnectStartParams(keys, vals, 1);
	if (!p->conn)
		return fail(p, -ENOMEM, "cannot connect to PostgreSQL");
	if (PQstatus(p->conn) == CONNECTION_BAD) {
		int rc = fail(p, -ECONNREFUSED, "cannot connect to PostgreSQL");
		gw_pgio_close(p);
		return rc;
	}
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;
	while (st != PGRES_POLLING_OK) {
		int rc = 0;
		if (st == PGRES_POLLING_FAILED)
			rc = fail(p, -ECONNREFUSED, "cannot connect to PostgreSQL");
		else
			rc = wait_sock(p, st == PGRES_POLLING_READING, st == PGRES_POLLING_WRITING,
			               deadline);
		if (rc < 0) {
			gw_pgio_close(p);
			return rc;
		}
		st = PQconnectPoll(p->conn);
	}
	if (PQsetnonblocking(p->conn, 1) != 0) {
		int rc = fail(p, -EIO, "cannot make the connection non-blocking");
		gw_pgio_close(p);
		return rc;
	}
	return 0;
}

void gw_pgio_close(struct gw_pgio *p)
{
	if (p->conn)
		PQfinish(p->conn);
	p->conn = NULL;
}

bool gw_pgio_broken(const struct gw_pgio *p)
{
	return !p->conn || PQstatus(p->conn) != CONNECTION_OK;
}

static int flush(struct gw_pgio *p, double deadline)
{
	int r;
	while ((r = PQflush(p->conn)) == 1) {
		int rc = wait_sock(p, true, true, deadline);
		if (rc < 0)
			return rc;
		if (PQconsumeInput(p->conn) == 0)
			return fail(p, -EIO, "PostgreSQL connection lost");
	}
	return r == 0 ? 0 : fail(p, -EIO, "PostgreSQL connection lost");
}

/* The next result (NULL: none left), waiting for it; *rc < 0 on failure. */
static PGresult *next_result(struct gw_pgio *p, double deadline, int *rc)
{
	*rc = 0;
	for (;;) {
		if (PQconsumeInput(p->conn) == 0) {
			*rc = fail(p, -EIO, "PostgreSQL connection lost");
			return NULL;
		}
		if (!PQisBusy(p->conn))
			return PQgetResult(p->conn);
		if ((*rc = wait_sock(p, true, false, deadline)) < 0)
			return NULL;
	}
}

/* Collect every result of the query sent; the last TUPLES_OK one is kept
 * in *keep when keep is given. */
static int drain(struct gw_pgio *p, double deadline, PGresult **keep)
{
	int rc = 0, got;
	PGresult *r;
	while ((r = next_result(p, deadline, &got))) {
		ExecStatusType st = PQresultStatus(r);
		if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && rc == 0) {
			const char *m = PQresultErrorMessage(r);
			snprintf(p->err, sizeof(p->err), "%.*s", (int)strcspn(m, "\n"), m);
			rc = -EIO;
		}
		if (keep && st == PGRES_TUPLES_OK) {
			if (*keep)
				PQclear(*keep);
			*keep = r;
		} else {
			PQclear(r);
		}
	}
	return got < 0 ? got : rc;
}

int gw_pgio_exec(struct gw_pgio *p, const char *sql)
{
	double deadline = mono_s() + p->timeout_s;
	if (!p->conn)
		return fail(p, -ENOTCONN, "not connected");
	if (!PQsendQuery(p->conn, sql))
		return fail(p, -EIO, "cannot send a query");
	int rc = flush(p, deadline);
	return rc < 0 ? rc : drain(p, deadline, NULL);
}

PGresult *gw_pgio_query(struct gw_pgio *p, const char *sql, int n, const char *const *params)
{
	double deadline = mono_s() + p->timeout_s;
	PGresult *res = NULL;
	if (!p->conn || !PQsendQueryParams(p->conn, sql, n, NULL, params, NULL, NULL, 0)) {
		fail(p, -EIO, "cannot send a query");
		return NULL;
	}
	int rc = flush(p, deadline);
	if (rc == 0)
		rc = drain(p, deadline, &res);
	if (rc < 0 || !res) {
		if (res)
			PQclear(res);
		if (rc == 0)
			snprintf(p->err, sizeof(p->err), "the query returned no rows");
		return NULL;
	}
	return res;
}

int gw_pgio_copy(struct gw_pgio *p, const char *sql, const char *data, size_t len)
{
	double deadline = mono_s() + p->timeout_s;
	if (!p->conn || !PQsendQuery(p->conn, sql))
		return fail(p, -EIO, "cannot send COPY");
	int rc = flush(p, deadline);
	if (rc < 0)
		return rc;
	PGresult *r = next_result(p, deadline, &rc);
	if (!r)
		return rc < 0 ? rc : fail(p, -EIO, "COPY did not start");
	ExecStatusType st = PQresultStatus(r);
	if (st != PGRES_COPY_IN) {
		const char *m = PQresultErrorMessage(r);
		snprintf(p->err, sizeof(p->err), "COPY: %.*s", (int)strcspn(m, "\n"), m);
		PQclear(r);
		drain(p, deadline, NULL);
		return -EIO;
	}
	PQclear(r);
	/* in pieces of 256 KiB: libpq buffers what the socket does not take */
	for (size_t off = 0; off < len;) {
		size_t n = len - off < (256u << 10) ? len - off : (256u << 10);
		int put = PQputCopyData(p->conn, data + off, (int)n);
		if (put < 0)
			return fail(p, -EIO, "COPY data");
		if (put == 0) {
			if ((rc = wait_sock(p, false, true, deadline)) < 0)
				return rc;
			continue;
		}
		off += n;
		if ((rc = flush(p, deadline)) < 0)
			return rc;
	}
	int end;
	while ((end = PQputCopyEnd(p->conn, NULL)) == 0)
		if ((rc = wait_sock(p, false, true, deadline)) < 0)
			return rc;
	if (end < 0)
		return fail(p, -EIO, "COPY end");
	if ((rc = flush(p, deadline)) < 0)
		return rc;
	return drain(p, deadline, NULL);
}
