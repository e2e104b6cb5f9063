/*
 * The JSON form of an alert, shared by replay output, storage, the HTTP API
 * and the webhook sinks (docs/wire-format.md, "Alerts").
 */
#include "engine.h"

#include <math.h>

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
