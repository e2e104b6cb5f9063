/*
 * Alerts as the engine reports them (see engine.h): the names of kinds and
 * severities, the stable alert id, and the one JSON form of an alert
 * (schema "gradwatch.alert.v2", docs/alert-schema.md) that replay's JSON
 * lines, the report, the HTTP API, the CLI and the webhook sinks all print:
 *
 *   gw_alert_to_json     the fields one event carries by itself;
 *   gw_alert_event_json  plus what follows from the events before it
 *                        (version, state, opened_*, resolved_*), given the
 *                        alert's last firing object: the alert outbox keeps
 *                        those durably, replay and the report in memory
 *                        (gw_alert_track).
 *
 * That is the verdict's side of the alert, built from what the engine
 * says and nothing stored, which replay needs without a database; the
 * stored row (building it, reading it back into this form) is alerts/
 * alert_row.c's.
 *
 * step and line are where the event was raised, except on a resolve, which
 * keeps the step and line where the alert opened; ts is always the
 * timestamp of the record that opened it.  Wall-clock times (raised_at,
 * opened_at, resolved_at) exist only live, never in replay.
 */
#include "engine.h"
#include "hash.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char *const kind_names[] = {"open", "update", "resolve"};

const char *gw_alert_kind_name(enum gw_alert_kind k)
{
	return (unsigned)k < 3 ? kind_names[k] : "?";
}

const char *gw_severity_name(enum gw_severity s)
{
	switch (s) {
	case GW_SEV_INFO: return "info";
	case GW_SEV_WARNING: return "warning";
	case GW_SEV_CRITICAL: return "critical";
	}
	return "?";
}

int gw_severity_parse(const char *s)
{
	if (strcmp(s, "info") == 0)
		return GW_SEV_INFO;
	if (strcmp(s, "warning") == 0)
		return GW_SEV_WARNING;
	if (strcmp(s, "critical") == 0)
		return GW_SEV_CRITICAL;
	return -1;
}

/* 64-bit FNV-1a over run and detector (each with its NUL) and the bytes of
 * seg and incident, as 16 hex digits. */
void gw_alert_make_id(char id[24], const char *run, int64_t seg,
                      const char *detector, uint32_t incident)
{
	uint64_t h = GW_FNV64_INIT;
	h = gw_fnv1a64_add(h, run, strlen(run) + 1);
	h = gw_fnv1a64_add(h, &seg, sizeof(seg));
	h = gw_fnv1a64_add(h, detector, strlen(detector) + 1);
	h = gw_fnv1a64_add(h, &incident, sizeof(incident));
	snprintf(id, 24, "gw-%016llx", (unsigned long long)h);
}

static json_t *gw_alert_to_json(const struct gw_alert *a)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:s, s:s, s:s, s:s, s:s}",
	                      "schema", GW_ALERT_SCHEMA,
	                      "id", a->id,
	                      "kind", gw_alert_kind_name(a->kind),
	                      "run", a->run,
	                      "segment", (json_int_t)a->seg,
	                      "step", (json_int_t)a->step,
	                      "line", (json_int_t)a->line,
	                      "detector", a->detector,
	                      "severity", gw_severity_name(a->severity),
	                      "summary", a->summary ? a->summary : "",
	                      "cause", a->cause ? a->cause : "",
	                      "action", a->action ? a->action : "");
	if (!o)
		return NULL;
	json_object_set_new(o, "evidence",
	                    a->evidence ? json_deep_copy(a->evidence) : json_object());
	if (isfinite(a->ts))
		json_object_set_new(o, "ts", gw_json_num(a->ts));
	if (isfinite(a->wall))
		json_object_set_new(o, "raised_at", gw_json_num(a->wall));
	return o;
}

/* Copy key from one object to another, or drop it there when from lacks it. */
static void carry(json_t *to, const json_t *from, const char *key)
{
	json_t *v = json_object_get(from, key);
	if (v)
		json_object_set(to, key, v);
	else
		json_object_del(to, key);
}

json_t *gw_alert_event_json(const struct gw_alert *a, int64_t version, const json_t *firing)
{
	json_t *o = gw_alert_to_json(a);
	if (!o)
		return NULL;
	json_object_set_new(o, "version", json_integer(version));
	json_object_set_new(o, "state", json_string(a->kind == GW_ALERT_RESOLVE ? "resolved" : "open"));
	if (a->kind == GW_ALERT_OPEN || !firing) {
		if (isfinite(a->wall))
			json_object_set_new(o, "opened_at", gw_json_num(a->wall));
		json_object_set_new(o, "opened_step", json_integer(a->step));
		json_object_set_new(o, "opened_line", json_integer((json_int_t)a->line));
	} else {
		static const char *const opened[] = {"opened_at", "opened_step", "opened_line", "ts"};
		for (size_t i = 0; i < ARRAY_SIZE(opened); i++)
			carry(o, firing, opened[i]);
	}
	if (a->kind == GW_ALERT_RESOLVE) {
		if (isfinite(a->wall))
			json_object_set_new(o, "resolved_at", gw_json_num(a->wall));
		json_object_set_new(o, "resolved_step", json_integer(a->step));
		static const char *const text[] = {"summary", "cause", "action"};
		for (size_t i = 0; firing && i < ARRAY_SIZE(text); i++) {
			const char *s = json_string_value(json_object_get(o, text[i]));
			if (!s || !*s)
				json_object_set(o, text[i], json_object_get(firing, text[i]));
		}
		if (firing && !json_object_size(json_object_get(o, "evidence")))
			json_object_set(o, "evidence", json_object_get(firing, "evidence"));
		if (firing) {
			json_object_set(o, "step", json_object_get(firing, "opened_step"));
			json_object_set(o, "line", json_object_get(firing, "opened_line"));
		}
	}
	return o;
}

json_t *gw_alert_track(json_t *seen, const struct gw_alert *a)
{
	json_t *firing = json_object_get(seen, a->id);
	json_int_t version = firing ? json_integer_value(json_object_get(firing, "version")) + 1 : 1;
	json_t *o = gw_alert_event_json(a, version, firing);
	if (!o)
		return NULL;
	if (a->kind == GW_ALERT_RESOLVE)
		json_object_del(seen, a->id);
	else
		json_object_set(seen, a->id, o);
	return o;
}
