/*
 * The effective configuration as a configuration file (gradwatchd
 * --check-config): the same keys and nesting the file takes
 * (docs/configuration.md), every value filled in from the parsed
 * configuration, defaults and flags included, so that the output fed back
 * with --config gives the same configuration.  Paths are written as they
 * resolve: the database relative to state_dir when it lies in it, else
 * absolute.  Aliases are the file's own (the built-in ones always apply and
 * are not repeated); sinks, follow, auth and fleet are written as given, but
 * the printed text (gw_cfg_dumps) never holds a secret: an inline sink URL
 * or fleet DSN is redacted as in the log, an inline signing secret is
 * "REDACTED" (the _env and _file forms name where the secret is, not the
 * secret).
 */
#include "config.h"
#include "registry.h"

#include "detector.h"
#include "registry.h"

#include "thresholds.h"
#include "log.h"
#include "util.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static json_t *listen_json(const struct gw_listen *l)
{
	char s[96];
	if (!l->enabled)
		return json_false();
	snprintf(s, sizeof(s), strchr(l->host, ':') ? "[%s]:%d" : "%s:%d", l->host, l->port);
	return json_string(s);
}

static json_t *thresholds_json(const struct gw_thresholds *th)
{
	json_t *o = json_object();
	for (const struct gw_threshold_info *i = gw_threshold_list(); i->name; i++)
		json_object_set_new(o, i->name, gw_json_num(*(const double *)((const char *)th + i->offset)));
	return o;
}

/* A path as it resolves from here: absolute, or under the working
 * directory. */
static json_t *abs_path(const char *p)
{
	char cwd[PATH_MAX], *s = NULL;
	if (p[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return json_string(p);
	if (strcmp(p, ".") == 0)
		return json_string(cwd);
	if (asprintf(&s, "%s/%s", cwd, strncmp(p, "./", 2) ? p : p + 2) < 0)
		return json_string(p);
	json_t *j = json_string(s);
	free(s);
	return j;
}

static json_t *database_json(const struct gw_cfg *c)
{
	size_t n = strlen(c->state_dir);
	/* relative to state_dir, as the loader reads it */
	if (strcmp(c->state_dir, ".") && !strncmp(c->db_path, c->state_dir, n) && c->db_path[n] == '/' &&
	    c->db_path[n + 1])
		return json_string(c->db_path + n + 1);
	return abs_path(c->db_path);
}

/* A duration in milliseconds as the loader reads it back, in the largest
 * unit that divides it ("90d", "90s", "250ms"). */
static json_t *duration_json(uint64_t ms)
{
	static const struct {
		uint64_t ms;
		const char *unit;
	} units[] = {{86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}, {1, "ms"}};
	char buf[32];
	size_t i = 0;
	while (ms && ms % units[i].ms)
		i++;
	snprintf(buf, sizeof(buf), "%" PRIu64 "%s", ms / units[i].ms, ms ? units[i].unit : "s");
	return json_string(buf);
}

/* retention: how often it looks, and its limits when set (off is left out;
 * the loader has no word for it). */
static json_t *retention_json(const struct gw_cfg *c)
{
	json_t *r = json_pack("{s:o}", "check_every", duration_json(c->retention_every_ms));
	if (r && c->retention_max_age_ms)
		json_object_set_new(r, "max_age", duration_json(c->retention_max_age_ms));
	if (r && c->retention_max_bytes)
		json_object_set_new(r, "max_bytes", json_integer((json_int_t)c->retention_max_bytes));
	return r;
}

/* The file's own aliases, or an empty object. */
static json_t *file_aliases(const struct gw_cfg *c)
{
	char *text = NULL;
	size_t len = 0;
	json_t *root = c->file && gw_read_file(c->file, GW_CFG_FILE_MAX, &text, &len) == 0
	               ? json_loadb(text, len, 0, NULL) : NULL;
	free(text);
	json_t *a = json_object_get(root, "aliases");
	json_t *out = json_is_object(a) ? json_incref(a) : json_object();
	json_decref(root);
	return out;
}

json_t *gw_cfg_to_json(const struct gw_cfg *c)
{
	const char *levels[] = {[GW_LOG_CRIT] = "crit", [GW_LOG_ERR] = "err", [GW_LOG_WARN] = "warn",
	                        [GW_LOG_INFO] = "info", [GW_LOG_DEBUG] = "debug"};
	char mode[8];
	snprintf(mode, sizeof(mode), "%04o", c->socket_mode);
	json_t *dis = json_array();
	for (size_t k = 0; gw_det_registry[k]; k++)
		if ((c->engine.disabled >> k) & 1u)
			json_array_append_new(dis, json_string(gw_det_registry[k]->name));
	json_t *runs = json_array();
	for (size_t i = 0; i < c->n_overrides; i++)
		json_array_append_new(runs, json_pack("{s:s, s:o}", "match", c->overrides[i].glob,
		                                      "thresholds", thresholds_json(&c->overrides[i].th)));
	json_t *o = json_pack(
		"{s:o, s:o, s:o, s:s, s:o, s:o, s:o, s:b, s:s, s:I,"
		" s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I},"
		" s:{s:I, s:I, s:s, s:I},"
		" s:o, s:o, s:o, s:{s:o}, s:O, s:O}",
		"state_dir", abs_path(c->state_dir),
		"database", database_json(c),
		"socket", c->socket_path && *c->socket_path ? abs_path(c->socket_path) : json_false(),
		"socket_mode", mode,
		"tcp", listen_json(&c->tcp), "udp", listen_json(&c->udp), "http", listen_json(&c->http),
		"allow_remote", c->allow_remote,
		"log_level", (unsigned)c->log_level < sizeof(levels) / sizeof(levels[0]) &&
		             levels[c->log_level] ? levels[c->log_level] : "info",
		"tick_ms", (json_int_t)c->tick_ms,
		"limits",
		"max_line_bytes", (json_int_t)c->max_line,
		"max_body_bytes", (json_int_t)c->max_body,
		"max_connections", (json_int_t)c->max_connections,
		"max_runs", (json_int_t)c->max_runs,
		"http_header_timeout_ms", (json_int_t)c->http_header_timeout_ms,
		"http_idle_timeout_ms", (json_int_t)c->http_idle_timeout_ms,
		"http_body_timeout_ms", (json_int_t)c->http_body_timeout_ms,
		"http_reserved_connections", (json_int_t)c->http_reserved_connections,
		"stream_idle_timeout_ms", (json_int_t)c->stream_idle_timeout_ms,
		"stream_evict_idle_ms", (json_int_t)c->stream_evict_idle_ms,
		"idempotency_window_s", (json_int_t)c->idempotency_window_s,
		"idempotency_max_keys", (json_int_t)c->idempotency_max_keys,
		"run_evict_idle_s", (json_int_t)c->run_evict_idle_s,
		"storage",
		"commit_interval_ms", (json_int_t)c->commit_interval_ms,
		"commit_max_records", (json_int_t)c->commit_max_records,
		"synchronous", c->sync_full ? "full" : "normal",
		"max_pending_bytes", (json_int_t)c->max_pending_bytes,
		"aliases", file_aliases(c),
		"thresholds", thresholds_json(&c->engine.th),
		"runs", runs,
		"detectors", "disabled", dis,
		"sinks", c->sinks,
		"follow", c->follow);
	if (!o)
		return NULL;
	json_object_set_new(json_object_get(o, "limits"), "stream_line_timeout_ms",
	                    json_integer((json_int_t)c->stream_line_timeout_ms));
	json_object_set_new(json_object_get(o, "limits"), "max_segments_per_minute",
	                    json_integer((json_int_t)c->max_segments_per_minute));
	json_object_set_new(json_object_get(o, "limits"), "max_reads_in_flight",
	                    json_integer((json_int_t)c->max_reads_in_flight));
	json_object_set_new(json_object_get(o, "limits"), "max_response_bytes",
	                    json_integer((json_int_t)c->max_response_bytes));
	json_object_set_new(o, "retention", retention_json(c));
	json_object_set_new(o, "health", json_pack("{s:I, s:I, s:I}",
	                    "commit_stall_s", (json_int_t)c->health_commit_stall_s,
	                    "undelivered_s", (json_int_t)c->health_undelivered_s,
	                    "min_free_mb", (json_int_t)c->health_min_free_mb));
	if (c->public_url)
		json_object_set_new(o, "public_url", json_string(c->public_url));
	if (c->kernels)
		json_object_set_new(o, "kernels", json_string(c->kernels));
	if (c->auth)
		json_object_set(o, "auth", c->auth);
	if (c->fleet)
		json_object_set(o, "fleet", c->fleet);
	return o;
}

/* The fewest significant digits (1 to 17) with which every real in j reads
 * back as the same double: --check-config prints 0.005, not
 * 0.0050000000000000001, and still round-trips. */
static int real_digits(const json_t *j)
{
	int best = 1;
	if (json_is_real(j)) {
		double v = json_real_value(j);
		char buf[40];
		for (best = 1; best < 17; best++) {
			snprintf(buf, sizeof(buf), "%.*g", best, v);
			if (strtod(buf, NULL) == v)
				break;
		}
	} else if (json_is_object(j)) {
		const char *k;
		json_t *v;
		json_object_foreach((json_t *)j, k, v) {
			int d = real_digits(v);
			best = d > best ? d : best;
		}
	} else if (json_is_array(j)) {
		size_t i;
		json_t *v;
		json_array_foreach(j, i, v) {
			int d = real_digits(v);
			best = d > best ? d : best;
		}
	}
	return best;
}

/* The sinks of j with their inline secrets replaced: a url as the log
 * shows it (gw_log_redact_url, url_path_public honoured), a secret as
 * "REDACTED".  Output on a terminal or in a ticket must not carry a
 * webhook token. */
static void redact_sinks(json_t *j)
{
	json_t *sinks = json_object_get(j, "sinks");
	if (!json_is_array(sinks))
		return;
	json_t *copy = json_deep_copy(sinks);
	size_t i;
	json_t *s;
	json_array_foreach(copy, i, s) {
		const char *url = json_string_value(json_object_get(s, "url"));
		if (url) {
			char red[512];
			gw_log_redact_url(url, json_is_true(json_object_get(s, "url_path_public")), red,
			                  sizeof(red));
			json_object_set_new(s, "url", json_string(red));
		}
		if (json_object_get(s, "secret"))
			json_object_set_new(s, "secret", json_string("REDACTED"));
	}
	json_object_set_new(j, "sinks", copy);
}

/* The fleet's inline DSN likewise: a postgresql:// URL as the log shows a
 * URL (no user, password or query), a key=value DSN as "REDACTED" (it may
 * hold password=...). */
static void redact_fleet(json_t *j)
{
	json_t *fl = json_object_get(j, "fleet");
	const char *dsn = json_string_value(json_object_get(fl, "postgresql"));
	if (!dsn)
		return;
	char red[512];
	if (strstr(dsn, "://"))
		gw_log_redact_url(dsn, false, red, sizeof(red));
	else
		snprintf(red, sizeof(red), "REDACTED");
	json_t *copy = json_deep_copy(fl);
	json_object_set_new(copy, "postgresql", json_string(red));
	json_object_set_new(j, "fleet", copy);
}

char *gw_cfg_dumps(const struct gw_cfg *c)
{
	json_t *j = gw_cfg_to_json(c);
	if (j) {
		redact_sinks(j);
		redact_fleet(j);
	}
	char *s = j ? json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(real_digits(j))) : NULL;
	json_decref(j);
	return s;
}
