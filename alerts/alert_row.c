/*
 * alert_row: the alert's row (see alert_row.h).  Each event of an alert is
 * one statement of the store's own (GW_STORE_ALERT_OPEN, _UPDATE,
 * _RESOLVE, _ACK, _UNACK) with typed values; the evidence is kept as its
 * JSON text.  Reading open alerts back is one query on the alerts table
 * joined with the runs (the run's name, not its id); decoding a row fills
 * in what the alert object says that the row keeps under other names
 * (opened_* from the first event's step and line, raised_at from updated,
 * resolved_* on a resolve) and leaves out what is not known, as an event
 * does.
 */
#include "alert_row.h"

#include "store.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t gw_alert_row_put(struct gw_store *st, const struct gw_alert *a)
{
	double wall = isnan(a->wall) ? gw_wall_now() : a->wall;
	char *ev = a->evidence ? json_dumps(a->evidence, JSON_COMPACT | JSON_REAL_PRECISION(12))
	                       : strdup("{}");
	if (!ev)
		return 0;
	const struct gw_sv id = gw_sv_text(a->id), summary = gw_sv_text(a->summary ? a->summary : ""),
	                   cause = gw_sv_text(a->cause), action = gw_sv_text(a->action),
	                   evidence = gw_sv_text(ev), sev = gw_sv_text(gw_severity_name(a->severity));
	uint64_t seq;
	if (a->kind == GW_ALERT_OPEN) {
		const struct gw_sv v[] = {
			id, gw_sv_run(a->run, strlen(a->run)), gw_sv_int(a->seg), gw_sv_int(a->step),
			gw_sv_int((int64_t)a->line), gw_sv_text(a->detector), sev, summary, cause, action,
			evidence, gw_sv_real(a->ts), gw_sv_real(wall),
		};
		seq = gw_store_put(st, NULL, GW_STORE_ALERT_OPEN, v, GW_ARRAY_SIZE(v));
	} else if (a->kind == GW_ALERT_UPDATE) {
		const struct gw_sv v[] = {
			id, sev, summary, cause, action, evidence, gw_sv_real(wall), gw_sv_int(a->step),
			gw_sv_int((int64_t)a->line),
		};
		seq = gw_store_put(st, NULL, GW_STORE_ALERT_UPDATE, v, GW_ARRAY_SIZE(v));
	} else {
		const struct gw_sv v[] = {id, gw_sv_real(wall), gw_sv_int(a->step),
		                          gw_sv_text(a->summary && *a->summary ? a->summary : NULL)};
		seq = gw_store_put(st, NULL, GW_STORE_ALERT_RESOLVE, v, GW_ARRAY_SIZE(v));
	}
	free(ev);
	return seq;
}

uint64_t gw_alert_row_ack(struct gw_store *st, const char *id, bool ack, double at,
                          const char *by, const char *note)
{
	const struct gw_sv none = {.t = GW_SV_NULL};
	const struct gw_sv v[] = {
		gw_sv_text(id), gw_sv_real(at), by ? gw_sv_text(by) : none,
		note ? gw_sv_text(note) : none,
	};
	return gw_store_put(st, NULL, ack ? GW_STORE_ALERT_ACK : GW_STORE_ALERT_UNACK, v,
	                    ack ? 4 : 2);
}

struct open_ctx {
	void (*fn)(void *ctx, const struct gw_alert *a);
	void *ctx;
};

static void open_row(void *data, sqlite3_stmt *row)
{
	struct open_ctx *c = data;
	const char *id = (const char *)sqlite3_column_text(row, 0);
	const char *run = (const char *)sqlite3_column_text(row, 1);
	const char *det = (const char *)sqlite3_column_text(row, 5);
	const char *sev = (const char *)sqlite3_column_text(row, 6);
	if (!id || !run || !det || strlen(id) >= sizeof(((struct gw_alert *)0)->id))
		return;
	int severity = sev ? gw_severity_parse(sev) : -1;
	struct gw_alert a = {
		.kind = GW_ALERT_RESOLVE,
		.run = run,
		.seg = sqlite3_column_int64(row, 2),
		.step = sqlite3_column_int64(row, 3),
		.line = (uint64_t)sqlite3_column_int64(row, 4),
		.detector = det,
		.severity = severity < 0 ? GW_SEV_WARNING : (enum gw_severity)severity,
		.ts = NAN,
		.wall = NAN,
	};
	gw_strlcpy(a.id, id, sizeof(a.id));
	c->fn(c->ctx, &a);
}

int gw_alert_rows_open(const char *db_path, const char *const *det, size_t n,
                       void (*fn)(void *ctx, const struct gw_alert *a), void *ctx, char *err,
                       size_t errlen)
{
	if (!n)
		return 0;
	/* the names as ?2, ?3, ...: bound, never pasted into the SQL */
	char sql[512];
	size_t o = (size_t)snprintf(sql, sizeof(sql),
	                            "SELECT a.id, r.name, a.seg, a.step, a.line, a.detector, "
	                            "a.severity FROM alerts a JOIN runs r ON r.id = a.run_id "
	                            "WHERE a.state = ?1 AND a.detector IN (");
	struct gw_sv binds[17] = {gw_sv_text("open")};
	if (n > GW_ARRAY_SIZE(binds) - 1)
		return gw_errf(err, errlen, -E2BIG, "too many detectors (%zu)", n);
	for (size_t i = 0; i < n && o + 8 < sizeof(sql); i++) {
		o += (size_t)snprintf(sql + o, sizeof(sql) - o, "%s?%zu", i ? ", " : "", i + 2);
		binds[i + 1] = gw_sv_text(det[i]);
	}
	snprintf(sql + o, sizeof(sql) - o, ")");
	struct open_ctx c = {fn, ctx};
	return gw_store_read_each(db_path, sql, binds, n + 1, open_row, &c, err, errlen);
}

json_t *gw_alert_row_json(const json_t *row)
{
	json_t *o = json_deep_copy(row);
	if (!o)
		return NULL;
	const char *state = json_string_value(json_object_get(o, "state"));
	json_int_t version = json_integer_value(json_object_get(o, "version"));
	bool resolved = state && strcmp(state, "resolved") == 0;
	json_object_set_new(o, "schema", json_string(GW_ALERT_SCHEMA));
	/* the latest event's kind; rows from before the kind column derive it */
	if (!json_is_string(json_object_get(o, "kind")))
		json_object_set_new(o, "kind", json_string(resolved ? "resolve" : version > 1 ? "update" : "open"));
	json_object_set(o, "opened_step", json_object_get(o, "step"));
	json_object_set(o, "opened_line", json_object_get(o, "line"));
	if (resolved) {
		json_object_set(o, "resolved_step", json_object_get(o, "last_step"));
		json_object_set(o, "resolved_at", json_object_get(o, "resolved"));
	} else if (version > 1) {
		/* an update: where it was raised */
		if (json_is_integer(json_object_get(o, "last_step")))
			json_object_set(o, "step", json_object_get(o, "last_step"));
		if (json_is_integer(json_object_get(o, "last_line")))
			json_object_set(o, "line", json_object_get(o, "last_line"));
	}
	json_object_set(o, "opened_at", json_object_get(o, "created"));
	json_object_set(o, "raised_at", json_object_get(o, "updated"));
	if (!json_is_object(json_object_get(o, "evidence")))
		json_object_set_new(o, "evidence", json_object());
	static const char *const text[] = {"cause", "action", "summary"};
	for (size_t i = 0; i < GW_ARRAY_SIZE(text); i++)
		if (!json_is_string(json_object_get(o, text[i])))
			json_object_set_new(o, text[i], json_string(""));
	/* what is not known is left out, as in an event */
	static const char *const drop[] = {"created", "updated", "resolved", "last_step", "last_line"};
	for (size_t i = 0; i < GW_ARRAY_SIZE(drop); i++)
		json_object_del(o, drop[i]);
	static const char *const optional[] = {"ts", "raised_at", "opened_at", "resolved_at", "line",
	                                       "opened_line", "acked_at", "acked_by", "ack_note"};
	for (size_t i = 0; i < GW_ARRAY_SIZE(optional); i++)
		if (json_is_null(json_object_get(o, optional[i])))
			json_object_del(o, optional[i]);
	return o;
}
