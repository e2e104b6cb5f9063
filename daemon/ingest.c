/*
 * ingest: the one path every transport's lines take: parse (wire), detect
 * (engine, whose hooks queue segments and alerts), store (queue the record).
 * Order matters: a segment row and an alert are queued before the record
 * that caused them, and all of them before the next line, so the database
 * reads in the order things happened.
 */
#include "daemon.h"

#include "log.h"
#include "util.h"

#include <stdio.h>

#include <errno.h>
#include <math.h>
#include <string.h>

static const char *const transport_names[GW_NTRANSPORTS] = {
	"unix", "tcp", "udp", "http", "follow",
};

const char *gw_transport_name(enum gw_transport t)
{
	return (unsigned)t < GW_NTRANSPORTS ? transport_names[t] : "?";
}

void gw_ingest_reject(struct gw_daemon *d, enum gw_transport t, enum gw_wire_reason r)
{
	d->stats.rejected[t][r]++;
}

void gw_ingest_line(struct gw_daemon *d, enum gw_transport t, const char *line,
                    size_t len, uint64_t lineno, const char *default_run,
                    struct gw_ingest_result *res)
{
	struct gw_rec rec;
	res->seq = 0;
	res->rc = gw_wire_parse(d->wire, line, len, default_run, &rec, &res->err);
	if (res->rc == -ENODATA)
		return;
	if (res->rc < 0) {
		if (res->rc == -ENOMEM) {
			res->err.reason = GW_REJ_SYNTAX;
			snprintf(res->err.msg, sizeof(res->err.msg), "out of memory");
		}
		d->stats.rejected[t][res->err.reason]++;
		res->rc = -EINVAL;
		return;
	}
	double now = gw_wall_now();
	int64_t seg = 0;
	int rc = gw_engine_feed(d->engine, &rec, lineno, now, &seg);
	if (rc < 0) {
		res->rc = -EINVAL;
		res->err.reason = GW_REJ_BAD_RUN;
		res->err.column = 0;
		gw_strlcpy(res->err.field, "run", sizeof(res->err.field));
		snprintf(res->err.msg, sizeof(res->err.msg), "%s",
		         rc == -ENOSPC ? "bad_run: too many runs (limits.max_runs reached)"
		                       : "bad_run: out of memory for a new run");
		d->stats.rejected[t][GW_REJ_BAD_RUN]++;
		return;
	}
	uint64_t seq = rec.event ? gw_store_put_event(d->store, &rec, seg, lineno, now)
	                         : gw_store_put_record(d->store, &rec, seg, lineno, now);
	if (!seq) {
		res->rc = -EINVAL;
		res->err.reason = GW_REJ_SYNTAX;
		snprintf(res->err.msg, sizeof(res->err.msg), "out of memory queueing the line");
		d->stats.rejected[t][GW_REJ_SYNTAX]++;
		return;
	}
	if (rec.event)
		d->stats.events[t]++;
	d->stats.accepted[t]++;
	d->seq_seen = seq;
	res->seq = seq;
	res->rc = 0;
}

void gw_ingest_framed(struct gw_daemon *d, enum gw_transport t, const char *line, size_t len,
                      uint64_t lineno, enum gw_line_status st, const char *default_run,
                      struct gw_ingest_result *res)
{
	if (st == GW_LINE_TOO_LONG) {
		gw_ingest_reject(d, t, GW_REJ_TOO_LONG);
		res->rc = -EINVAL;
		res->seq = 0;
		res->err = (struct gw_wire_err){.reason = GW_REJ_TOO_LONG};
		snprintf(res->err.msg, sizeof(res->err.msg),
		         "line_too_long: longer than %zu bytes (limits.max_line_bytes)", len);
		return;
	}
	gw_ingest_line(d, t, line, len, lineno, default_run, res);
	if (res->rc == -EINVAL && st == GW_LINE_TRUNCATED) {
		char m[sizeof(res->err.msg) + 64];
		snprintf(m, sizeof(m), "truncated: the input ended inside this line (%s)", res->err.msg);
		d->stats.rejected[t][res->err.reason]--;
		gw_ingest_reject(d, t, GW_REJ_TRUNCATED);
		res->err.reason = GW_REJ_TRUNCATED;
		gw_strlcpy(res->err.msg, m, sizeof(res->err.msg));
	}
}
