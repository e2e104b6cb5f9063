/*
 * severity: how serious a verdict or an alert is, and its name in the
 * alert schema ("info", "warning", "critical"; docs/alert-schema.md).
 * Shared by the detectors (detector.h) and the engine's face (engine.h);
 * the names are alert.c's.
 */
#ifndef GW_SEVERITY_H
#define GW_SEVERITY_H

enum gw_severity {
	GW_SEV_INFO,
	GW_SEV_WARNING,
	GW_SEV_CRITICAL,
};

const char *gw_severity_name(enum gw_severity s);
int gw_severity_parse(const char *s); /* -1 if unknown */

#endif
