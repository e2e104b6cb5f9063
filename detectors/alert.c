/*
 * Alerts as the engine reports them (see engine.h): the names of kinds and
 * severities, the stable alert id, and the JSON form shared by replay
 * output, storage, the HTTP API and the webhook sinks
 * (docs/wire-format.md, "Alerts").
 */
#include "engine.h"
#include "hash.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

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

json_t *gw_alert_to_json(const struct gw_alert *a)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:s, s:s, s:s, s:s, s:s}",
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
		json_object_set_new(o, "ts", json_real(a->ts));
	if (isfinite(a->wall))
		json_object_set_new(o, "raised_at", json_real(a->wall));
	return o;
}
