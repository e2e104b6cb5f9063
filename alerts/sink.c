/*
 * The "sinks" configuration: parsing, validation, secrets, filters (see
 * sink.h and docs/alerts.md).  Also the small helpers the formatters share:
 * HMAC-SHA256 through OpenSSL's libcrypto and RFC 3339 timestamps.
 *
 * Secrets (a URL that carries a token, a signing key) come from the config
 * file ("url", "secret"), an environment variable ("url_env",
 * "secret_env") or a file ("url_file", "secret_file"; a relative path is
 * looked up in $CREDENTIALS_DIRECTORY when systemd set it, so
 * LoadCredential= works as is).  Exactly one source per secret.  A file's
 * trailing newline and spaces are dropped.
 */
#include "sink.h"

#include "detector.h"
#include "log.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const struct gw_sink_type *const types[] = {
	&gw_sink_slack, &gw_sink_webhook, &gw_sink_alertmanager,
};

/* "N/s", "N/min", "N/h" (or "N/10s": any duration after the slash). */
static int parse_rate(const char *s, unsigned *count, uint64_t *per_ms)
{
	char *end;
	long n = strtol(s, &end, 10);
	if (end == s || n < 1 || n > 1000000 || *end != '/')
		return -EINVAL;
	const char *per = end + 1;
	char buf[32];
	if (isalpha((unsigned char)*per)) {
		snprintf(buf, sizeof(buf), "1%s", per);
		per = buf;
	}
	json_t *j = json_string(per);
	int rc = j ? gw_parse_duration(j, per_ms) : -ENOMEM;
	json_decref(j);
	if (rc < 0 || *per_ms == 0)
		return -EINVAL;
	*count = (unsigned)n;
	return 0;
}

static int load_globs(const json_t *o, const char *key, const char *where, char ***out,
                      size_t *n, char *err, size_t errlen)
{
	const json_t *v = json_object_get(o, key);
	*out = NULL;
	*n = 0;
	if (!v)
		return 0;
	if (json_is_string(v)) {
		*out = calloc(1, sizeof(char *));
		if (!*out || !((*out)[0] = strdup(json_string_value(v))))
			return -ENOMEM;
		*n = 1;
		return 0;
	}
	if (!json_is_array(v) || !json_array_size(v))
		return gw_errf(err, errlen, -EINVAL, "%s: \"%s\" must be a glob or a non-empty array of globs",
		            where, key);
	*out = calloc(json_array_size(v), sizeof(char *));
	if (!*out)
		return -ENOMEM;
	size_t i;
	const json_t *g;
	json_array_foreach(v, i, g) {
		if (!json_is_string(g))
			return gw_errf(err, errlen, -EINVAL, "%s: \"%s\"[%zu] must be a string", where, key, i);
		if (!((*out)[i] = strdup(json_string_value(g))))
			return -ENOMEM;
		(*n)++;
	}
	return 0;
}

static int get_duration(const json_t *o, const char *key, const char *where, uint64_t *ms,
                        char *err, size_t errlen)
{
	const json_t *v = json_object_get(o, key);
	if (v && gw_parse_duration(v, ms) < 0)
		return gw_errf(err, errlen, -EINVAL, "%s: \"%s\" must be a duration: seconds, or a string like "
		            "\"500ms\", \"10s\", \"5m\", \"4h\"", where, key);
	return 0;
}

static int get_ms(const json_t *o, const char *key, const char *where, unsigned *ms,
                  char *err, size_t errlen)
{
	const json_t *v = json_object_get(o, key);
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 3600000)
		return gw_errf(err, errlen, -EINVAL, "%s: \"%s\" must be an integer from 1 to 3600000", where, key);
	*ms = (unsigned)json_integer_value(v);
	return 0;
}

static void sink_free(struct gw_sink_cfg *s)
{
	free(s->url);
	if (s->secret)
		memset(s->secret, 0, s->secret_len);
	free(s->secret);
	for (size_t i = 0; i < s->n_detectors; i++)
		free(s->detectors[i]);
	free(s->detectors);
	for (size_t i = 0; i < s->n_runs; i++)
		free(s->runs[i]);
	free(s->runs);
	free(s->ca_file);
}

void gw_sink_free_all(struct gw_sink_cfg *s, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		sink_free(&s[i]);
	free(s);
}

/* One sink from one "sinks" entry.  peer is -1, or which of an
 * Alertmanager cluster's "urls" this sink posts to (its URL is then
 * peer_url, and its name gets ".<peer + 1>" appended). */
static int parse_one(const json_t *o, size_t idx, int peer, const char *peer_url,
                     struct gw_sink_cfg *s, char *err, size_t errlen)
{
	static const char *const known[] = {
		"type", "name", "url", "url_env", "url_file", "secret", "secret_env",
		"secret_file", "min_severity", "detectors", "runs", "connect_timeout_ms",
		"timeout_ms", "group_wait", "repeat_interval", "rate_limit", "max_in_flight",
		"retry_initial", "retry_max", "give_up_after", "tls_verify", "ca_file", "url_path_public",
		"urls", NULL,
	};
	char where[96];
	snprintf(where, sizeof(where), "sinks[%zu]", idx);
	if (!json_is_object(o))
		return gw_errf(err, errlen, -EINVAL, "%s must be an object", where);
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)o, key, v) {
		bool ok = false;
		for (size_t k = 0; known[k]; k++)
			ok |= strcmp(known[k], key) == 0;
		if (!ok)
			return gw_errf(err, errlen, -EINVAL, "%s: unknown key \"%s\"", where, key);
	}
	const char *type = json_string_value(json_object_get(o, "type"));
	for (size_t k = 0; type && k < GW_ARRAY_SIZE(types); k++)
		if (strcmp(types[k]->name, type) == 0)
			s->type = types[k];
	if (!s->type)
		return gw_errf(err, errlen, -EINVAL, "%s: \"type\" must be \"slack\", \"webhook\" or \"alertmanager\"",
		            where);
	v = json_object_get(o, "name");
	if (v) {
		const char *n = json_string_value(v);
		size_t len = n ? strlen(n) : 0;
		bool good = len > 0 && len < GW_SINK_NAME_MAX;
		for (size_t k = 0; good && k < len; k++)
			good = isalnum((unsigned char)n[k]) || strchr("-_.", n[k]);
		if (!good)
			return gw_errf(err, errlen, -EINVAL, "%s: \"name\" must be 1-%d letters, digits, '-', '_' or '.'",
			            where, GW_SINK_NAME_MAX - 1);
		gw_strlcpy(s->name, n, sizeof(s->name));
	} else {
		snprintf(s->name, sizeof(s->name), "%s-%zu", s->type->name, idx);
	}
	if (peer >= 0) {
		char base[GW_SINK_NAME_MAX];
		gw_strlcpy(base, s->name, sizeof(base));
		if (snprintf(s->name, sizeof(s->name), "%s.%d", base, peer + 1) >= (int)sizeof(s->name))
			return gw_errf(err, errlen, -EINVAL, "%s: \"name\" is too long for a peer suffix (at "
			            "most %d characters with \"urls\")", where, GW_SINK_NAME_MAX - 5);
	}
	snprintf(where, sizeof(where), "sinks[%zu] (\"%s\")", idx, s->name);

	/* defaults, then the keys */
	s->min_severity = GW_SEV_INFO;
	s->connect_timeout_ms = 5000;
	s->timeout_ms = 10000;
	s->group_wait_ms = s->type->default_group_wait_ms;
	s->repeat_ms = s->type->default_repeat_ms;
	s->rate_count = s->type->default_rate_count;
	s->rate_per_ms = s->type->default_rate_per_ms;
	s->max_in_flight = 4;
	s->retry_initial_ms = 1000;
	s->retry_max_ms = 300000;
	s->give_up_ms = 86400000;
	s->tls_verify = true;

	int rc;
	char *url = NULL;
	if (peer_url && !(url = strdup(peer_url)))
		return -ENOMEM;
	if (!peer_url && (rc = gw_secret_load(o, "url", where, &url, NULL, err, errlen)) < 0)
		return rc;
	if (!url)
		return gw_errf(err, errlen, -EINVAL, "%s: one of \"url\", \"url_env\" or \"url_file\" is required",
		            where);
	if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) {
		free(url);
		return gw_errf(err, errlen, -EINVAL, "%s: the URL must start with http:// or https://", where);
	}
	const char *suffix = s->type->path_suffix;
	size_t ulen = strlen(url);
	while (suffix && ulen > 8 && url[ulen - 1] == '/')
		url[--ulen] = '\0';
	if (suffix && (ulen < strlen(suffix) || strcmp(url + ulen - strlen(suffix), suffix))) {
		if (asprintf(&s->url, "%s%s", url, suffix) < 0)
			s->url = NULL;
		free(url);
		if (!s->url)
			return -ENOMEM;
	} else {
		s->url = url;
	}
	v = json_object_get(o, "url_path_public");
	if (v && !json_is_boolean(v))
		return gw_errf(err, errlen, -EINVAL, "%s: \"url_path_public\" must be true or false", where);
	gw_log_redact_url(s->url, json_is_true(v), s->url_log, sizeof(s->url_log));

	if ((rc = gw_secret_load(o, "secret", where, &s->secret, &s->secret_len, err, errlen)) < 0)
		return rc;
	if (s->secret && !s->type->may_sign)
		return gw_errf(err, errlen, -EINVAL, "%s: only webhook sinks take a signing secret", where);

	if ((v = json_object_get(o, "min_severity"))) {
		int sev = json_is_string(v) ? gw_severity_parse(json_string_value(v)) : -1;
		if (sev < 0)
			return gw_errf(err, errlen, -EINVAL, "%s: \"min_severity\" must be \"info\", \"warning\" or "
			            "\"critical\"", where);
		s->min_severity = sev;
	}
	if ((rc = load_globs(o, "detectors", where, &s->detectors, &s->n_detectors, err, errlen)) < 0 ||
	    (rc = load_globs(o, "runs", where, &s->runs, &s->n_runs, err, errlen)) < 0)
		return rc;
	if ((rc = get_ms(o, "connect_timeout_ms", where, &s->connect_timeout_ms, err, errlen)) < 0 ||
	    (rc = get_ms(o, "timeout_ms", where, &s->timeout_ms, err, errlen)) < 0 ||
	    (rc = get_duration(o, "group_wait", where, &s->group_wait_ms, err, errlen)) < 0 ||
	    (rc = get_duration(o, "repeat_interval", where, &s->repeat_ms, err, errlen)) < 0 ||
	    (rc = get_duration(o, "retry_initial", where, &s->retry_initial_ms, err, errlen)) < 0 ||
	    (rc = get_duration(o, "retry_max", where, &s->retry_max_ms, err, errlen)) < 0 ||
	    (rc = get_duration(o, "give_up_after", where, &s->give_up_ms, err, errlen)) < 0)
		return rc;
	if (!s->retry_initial_ms || s->retry_max_ms < s->retry_initial_ms)
		return gw_errf(err, errlen, -EINVAL, "%s: need 0 < retry_initial <= retry_max", where);
	if (s->type == &gw_sink_alertmanager && s->repeat_ms < 1000)
		return gw_errf(err, errlen, -EINVAL, "%s: \"repeat_interval\" (Alertmanager's resend interval) "
		            "must be at least 1s", where);
	if ((v = json_object_get(o, "rate_limit"))) {
		if (json_is_null(v) || (json_is_string(v) && !strcmp(json_string_value(v), "off"))) {
			s->rate_count = 0;
			s->rate_per_ms = 0;
		} else if (!json_is_string(v) ||
		           parse_rate(json_string_value(v), &s->rate_count, &s->rate_per_ms) < 0) {
			return gw_errf(err, errlen, -EINVAL, "%s: \"rate_limit\" must be like \"20/min\", \"1/s\" or "
			            "\"off\"", where);
		}
	}
	if ((v = json_object_get(o, "max_in_flight"))) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 64)
			return gw_errf(err, errlen, -EINVAL, "%s: \"max_in_flight\" must be 1 to 64", where);
		s->max_in_flight = (unsigned)json_integer_value(v);
	}
	if ((v = json_object_get(o, "tls_verify"))) {
		if (!json_is_boolean(v))
			return gw_errf(err, errlen, -EINVAL, "%s: \"tls_verify\" must be true or false", where);
		s->tls_verify = json_is_true(v);
	}
	if ((v = json_object_get(o, "ca_file"))) {
		if (!json_is_string(v))
			return gw_errf(err, errlen, -EINVAL, "%s: \"ca_file\" must be a path", where);
		if (!(s->ca_file = strdup(json_string_value(v))))
			return -ENOMEM;
	}
	return 0;
}

/* How many sinks entry o makes: the length of its "urls" (an Alertmanager
 * cluster: one sink per peer, each sent every alert, as Prometheus does),
 * else 1.  A bad "urls" is an error naming the entry and the element. */
static int count_peers(const json_t *o, size_t idx, char *err, size_t errlen)
{
	const json_t *u = json_object_get(o, "urls");
	if (!u)
		return 1;
	const char *type = json_string_value(json_object_get(o, "type"));
	if (!type || strcmp(type, "alertmanager"))
		return gw_errf(err, errlen, -EINVAL, "sinks[%zu]: only alertmanager sinks take \"urls\" "
		            "(the peers of an Alertmanager cluster)", idx);
	if (json_object_get(o, "url") || json_object_get(o, "url_env") || json_object_get(o, "url_file"))
		return gw_errf(err, errlen, -EINVAL, "sinks[%zu]: give \"urls\" or \"url\", not both", idx);
	if (!json_is_array(u) || !json_array_size(u) || json_array_size(u) > 16)
		return gw_errf(err, errlen, -EINVAL, "sinks[%zu]: \"urls\" must be an array of 1 to 16 URLs",
		            idx);
	for (size_t k = 0; k < json_array_size(u); k++) {
		const char *a = json_string_value(json_array_get(u, k));
		if (!a || !*a)
			return gw_errf(err, errlen, -EINVAL, "sinks[%zu]: \"urls\"[%zu] must be a non-empty string",
			            idx, k);
		for (size_t j = 0; j < k; j++)
			if (!strcmp(a, json_string_value(json_array_get(u, j))))
				return gw_errf(err, errlen, -EINVAL, "sinks[%zu]: \"urls\"[%zu] repeats \"urls\"[%zu]",
				            idx, k, j);
	}
	return (int)json_array_size(u);
}

int gw_sink_parse(const json_t *sinks, struct gw_sink_cfg **out, size_t *n, char *err,
                  size_t errlen)
{
	*out = NULL;
	*n = 0;
	if (!sinks || !json_array_size(sinks))
		return 0;
	if (!json_is_array(sinks))
		return gw_errf(err, errlen, -EINVAL, "sinks must be an array");
	size_t cnt = 0;
	for (size_t i = 0; i < json_array_size(sinks); i++) {
		int np = count_peers(json_array_get(sinks, i), i, err, errlen);
		if (np < 0)
			return np;
		cnt += (size_t)np;
	}
	struct gw_sink_cfg *s = calloc(cnt, sizeof(*s));
	if (!s)
		return -ENOMEM;
	int rc = 0;
	size_t at = 0;
	for (size_t i = 0; i < json_array_size(sinks) && rc == 0; i++) {
		const json_t *o = json_array_get(sinks, i), *u = json_object_get(o, "urls");
		size_t np = u ? json_array_size(u) : 1;
		for (size_t p = 0; p < np && rc == 0; p++, at++) {
			rc = parse_one(o, i, u ? (int)p : -1,
			               u ? json_string_value(json_array_get(u, p)) : NULL, &s[at], err,
			               errlen);
			for (size_t k = 0; rc == 0 && k < at; k++)
				if (strcmp(s[k].name, s[at].name) == 0)
					rc = gw_errf(err, errlen, -EINVAL, "sinks[%zu]: the name \"%s\" is already "
					          "used", i, s[at].name);
		}
	}
	if (rc < 0) {
		if (rc == -ENOMEM)
			snprintf(err, errlen, "sinks: out of memory");
		gw_sink_free_all(s, cnt);
		return rc;
	}
	*out = s;
	*n = cnt;
	return 0;
}

static bool any_glob(char *const *globs, size_t n, const char *s)
{
	if (!n)
		return true;
	for (size_t i = 0; i < n; i++)
		if (gw_glob_match(globs[i], s))
			return true;
	return false;
}

bool gw_sink_matches(const struct gw_sink_cfg *s, const char *run, const char *detector,
                     int severity)
{
	return severity >= s->min_severity && any_glob(s->detectors, s->n_detectors, detector) &&
	       any_glob(s->runs, s->n_runs, run);
}

int gw_sink_hmac_sha256_hex(const void *key, size_t key_len, const void *body, size_t len,
                            char hex[65])
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int mac_len = 0;
	if (!HMAC(EVP_sha256(), key, (int)key_len, body, len, mac, &mac_len) || mac_len != 32)
		return -EIO;
	static const char digits[] = "0123456789abcdef";
	for (unsigned i = 0; i < 32; i++) {
		hex[2 * i] = digits[mac[i] >> 4];
		hex[2 * i + 1] = digits[mac[i] & 15];
	}
	hex[64] = '\0';
	return 0;
}

void gw_sink_rfc3339(double t, char buf[32])
{
	if (!isfinite(t) || t < 0)
		t = 0;
	time_t sec = (time_t)t;
	int ms = (int)((t - (double)sec) * 1000.0);
	struct tm tm;
	gmtime_r(&sec, &tm);
	size_t n = strftime(buf, 24, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, 32 - n, ".%03dZ", ms < 0 ? 0 : ms > 999 ? 999 : ms);
}

/* %-encode s for a URL path segment (unreserved characters kept). */
static size_t path_escape(const char *s, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p && n + 4 < cap; p++) {
		if (isalnum(*p) || strchr("-._~", *p)) {
			out[n++] = (char)*p;
		} else {
			out[n++] = '%';
			out[n++] = hex[*p >> 4];
			out[n++] = hex[*p & 15];
		}
	}
	out[n] = '\0';
	return n;
}

static int page_link(const struct gw_sink_msg *m, const char *kind, const char *arg, char *out,
                size_t cap)
{
	out[0] = '\0';
	if (!m->api_base || !*m->api_base || !arg)
		return -ENOENT;
	int n = snprintf(out, cap, "%s/%s/", m->api_base, kind);
	if (n < 0 || (size_t)n >= cap)
		return -ENOSPC;
	path_escape(arg, out + n, cap - (size_t)n);
	return 0;
}

int gw__sink_alert_url(const struct gw_sink_msg *m, const json_t *alert, char *out, size_t cap)
{
	return page_link(m, "alerts", json_string_value(json_object_get(alert, "id")), out, cap);
}

int gw__sink_run_url(const struct gw_sink_msg *m, const json_t *alert, char *out, size_t cap)
{
	return page_link(m, "runs", json_string_value(json_object_get(alert, "run")), out, cap);
}

const char *gw__sink_host(void)
{
	static char host[256];
	static bool done;
	if (!done) {
		if (gethostname(host, sizeof(host)) != 0)
			host[0] = '\0';
		host[sizeof(host) - 1] = '\0';
		done = true;
	}
	return host;
}

int gw__sink_dump(json_t *root, size_t flags, char **body, size_t *len)
{
	*body = root ? json_dumps(root, JSON_COMPACT | flags) : NULL;
	json_decref(root);
	if (!*body)
		return -ENOMEM;
	*len = strlen(*body);
	return 0;
}
