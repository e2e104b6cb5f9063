/*
 * alertmanager: POST {url}/api/v2/alerts (docs/alerts.md, "alertmanager").
 *
 * One gradwatch alert is one Alertmanager alert whose identity (label set)
 * is alertname ("Gradwatch" + the detector in CamelCase), run, detector,
 * severity and alert_id (so two incidents of one run and detector stay two
 * alerts).  Annotations: summary, description (what to check, then the
 * evidence as JSON), cause.  startsAt is when the incident opened.
 *
 * Resend convention (as Prometheus does it): while an alert is open the
 * outbox re-posts it every resend interval (the sink's repeat_interval,
 * default 1m) with endsAt = now + 4 x that interval, so Alertmanager keeps
 * it firing while gradwatchd is alive and lets it expire on its own a few
 * intervals after gradwatchd stops talking.  A resolve posts endsAt = now.
 * When an update raises the severity, the label set changes: the old set is
 * ended in the same request.
 *
 * Acknowledged alerts (docs/alerts.md "Acknowledging") keep being resent:
 * an alert that stopped being posted would expire and show as resolved in
 * Alertmanager, which it is not.  They carry an "acknowledged" annotation
 * (who, when, the note) instead; silencing is Alertmanager's own business.
 */
#include "sink.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *str_of(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

static double num_of(const json_t *o, const char *k, double dflt)
{
	const json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : dflt;
}

/* "optimizer_reset" -> "GradwatchOptimizerReset" */
static void alertname(const char *det, char *out, size_t cap)
{
	size_t n = (size_t)snprintf(out, cap, "Gradwatch");
	bool up = true;
	for (const char *p = det; *p && n + 1 < cap; p++) {
		if (!isalnum((unsigned char)*p)) {
			up = true;
			continue;
		}
		out[n++] = up ? (char)toupper((unsigned char)*p) : *p;
		up = false;
	}
	out[n] = '\0';
}

static json_t *am_alert(const struct gw_sink_msg *m, const json_t *a, bool ended)
{
	char name[96], starts[32], ends[32];
	alertname(str_of(a, "detector"), name, sizeof(name));
	double opened = num_of(a, "opened_at", num_of(a, "raised_at", m->now));
	gw_sink_rfc3339(opened, starts);
	gw_sink_rfc3339(ended ? m->now : m->now + 4.0 * m->resend_s, ends);
	char *ev = json_dumps(json_object_get(a, "evidence"),
	                      JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(6));
	char *desc = NULL;
	if (asprintf(&desc, "%s%sEvidence: %s", str_of(a, "action"),
	             *str_of(a, "action") ? "\n" : "", ev ? ev : "{}") < 0)
		desc = NULL;
	free(ev);
	json_t *o = desc ? json_pack("{s:{s:s, s:s, s:s, s:s, s:s}, s:{s:s, s:s, s:s}, s:s, s:s}",
	                             "labels",
	                             "alertname", name,
	                             "run", str_of(a, "run"),
	                             "detector", str_of(a, "detector"),
	                             "severity", str_of(a, "severity"),
	                             "alert_id", str_of(a, "id"),
	                             "annotations",
	                             "summary", str_of(a, "summary"),
	                             "description", desc,
	                             "cause", str_of(a, "cause"),
	                             "startsAt", starts,
	                             "endsAt", ends)
	                 : NULL;
	free(desc);
	const json_t *acked = json_object_get(a, "acked_at");
	if (o && json_is_number(acked)) {
		char at[32], *text = NULL;
		gw_sink_rfc3339(json_number_value(acked), at);
		const char *by = str_of(a, "acked_by"), *note = str_of(a, "ack_note");
		if (asprintf(&text, "acknowledged%s%s at %s%s%s", *by ? " by " : "", by, at,
		             *note ? ": " : "", note) >= 0) {
			json_object_set_new(json_object_get(o, "annotations"), "acknowledged",
			                    json_string(text));
			free(text);
		}
	}
	char url[1200];
	if (o && gw__sink_alert_url(m, a, url, sizeof(url)) == 0) {
		/* the alert's page: the run's charts at the alert's step, with its
		 * evidence, cause and what to check */
		json_object_set_new(o, "generatorURL", json_string(url));
		json_object_set_new(json_object_get(o, "annotations"), "runbook_url", json_string(url));
	}
	return o;
}

static int am_format(const struct gw_sink_cfg *s, const struct gw_sink_msg *m, char **body,
                     size_t *len)
{
	bool resolve = strcmp(m->event, "resolve") == 0;
	json_t *arr = json_array();
	if (m->previous)
		json_array_append_new(arr, am_alert(m, m->previous, true));
	json_array_append_new(arr, am_alert(m, m->alert, resolve));
	(void)s;
	if (json_array_size(arr) != (m->previous ? 2u : 1u)) {
		json_decref(arr);
		arr = NULL;
	}
	return gw__sink_dump(arr, 0, body, len);
}

const struct gw_sink_type gw_sink_alertmanager = {
	.name = "alertmanager",
	.path_suffix = "/api/v2/alerts",
	.format = am_format,
	.default_group_wait_ms = 0,
	.default_repeat_ms = 60000,
};
