/*
 * Configuration: defaults, the JSON file, validation (see config.h and
 * docs/configuration.md).  Every key the file may hold is listed in one of
 * the `known_*` tables below; anything else is reported with its path.
 */
#include "config.h"

#include "auth.h"

#include "kern.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gw_cfg_set_str(char **field, const char *value)
{
	char *n = value ? strdup(value) : NULL;
	if (value && !n)
		return -ENOMEM;
	free(*field);
	*field = n;
	return 0;
}

static char *path_join(const char *dir, const char *name)
{
	char *p = NULL;
	if (name[0] == '/' || !dir || !*dir || strcmp(dir, ".") == 0)
		return strdup(name);
	if (asprintf(&p, "%s/%s", dir, name) < 0)
		return NULL;
	return p;
}

int gw_cfg_defaults(struct gw_cfg *c)
{
	memset(c, 0, sizeof(*c));
	char *rt = NULL;
	if (gw_cfg_default_dirs(&c->state_dir, &rt) < 0)
		return -ENOMEM;
	c->db_path = path_join(c->state_dir, "gradwatch.db");
	c->socket_path = path_join(rt, "gradwatch.sock");
	free(rt);
	c->socket_mode = 0660;
	c->tcp = (struct gw_listen){true, "127.0.0.1", GW_DEFAULT_PORT};
	c->udp = (struct gw_listen){true, "127.0.0.1", GW_DEFAULT_PORT};
	c->http = (struct gw_listen){true, "127.0.0.1", GW_DEFAULT_HTTP_PORT};
	c->log_level = GW_LOG_INFO;
	c->max_line = 64 * 1024;
	c->max_body = 64 * 1024 * 1024;
	c->max_connections = 1024;
	c->max_runs = 16384;          /* ~1 GiB of detector state at ~61 KB a run */
	c->http_header_timeout_ms = 10000;
	c->http_idle_timeout_ms = 60000;
	c->http_body_timeout_ms = 30000;
	c->http_reserved_connections = 16;
	c->stream_idle_timeout_ms = 900000;
	c->stream_evict_idle_ms = 30000;
	c->idempotency_window_s = 86400;
	c->run_evict_idle_s = 600;
	c->retention_every_ms = 60000;
	c->idempotency_max_keys = 100000;
	c->commit_interval_ms = 100;
	c->commit_max_records = 20000;
	c->sync_full = true;
	c->max_pending_bytes = 256u * 1024 * 1024;
	c->tick_ms = 1000;
	c->aliases = gw_alias_new();
	gw_thresholds_default(&c->engine.th);
	c->engine.live = true;
	c->sinks = json_array();
	c->follow = json_array();
	if (!c->state_dir || !c->db_path || !c->socket_path || !c->aliases ||
	    !c->sinks || !c->follow)
		return -ENOMEM;
	return 0;
}

void gw_cfg_free(struct gw_cfg *c)
{
	free(c->file);
	free(c->state_dir);
	free(c->db_path);
	free(c->socket_path);
	free(c->kernels);
	free(c->public_url);
	gw_alias_free(c->aliases);
	for (size_t i = 0; i < c->n_overrides; i++)
		free(c->overrides[i].glob);
	free(c->overrides);
	json_decref(c->sinks);
	json_decref(c->follow);
	json_decref(c->auth);
	memset(c, 0, sizeof(*c));
}

int gw_cfg_sockaddr(const struct gw_listen *l, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(l->host, ':')) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)l->port);
		return inet_pton(AF_INET6, l->host, &a->sin6_addr) == 1 ? 0 : -EINVAL;
	}
	struct sockaddr_in *a = (struct sockaddr_in *)ss;
	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)l->port);
	return inet_pton(AF_INET, l->host, &a->sin_addr) == 1 ? 0 : -EINVAL;
}

int gw_cfg_parse_listen(const char *s, struct gw_listen *l, char *err, size_t errlen)
{
	if (!strcmp(s, "off") || !strcmp(s, "false") || !strcmp(s, "none") || !*s) {
		l->enabled = false;
		return 0;
	}
	char host[64] = "127.0.0.1";
	const char *port_s = s;
	if (s[0] == '[') {
		const char *end = strchr(s, ']');
		if (!end || end[1] != ':' || (size_t)(end - s - 1) >= sizeof(host))
			return gw_errf(err, errlen, -EINVAL, "listen address \"%s\": expected [v6-address]:port", s);
		memcpy(host, s + 1, (size_t)(end - s - 1));
		host[end - s - 1] = '\0';
		port_s = end + 2;
	} else {
		const char *colon = strrchr(s, ':');
		if (colon) {
			if ((size_t)(colon - s) >= sizeof(host))
				return gw_errf(err, errlen, -EINVAL, "listen address \"%s\": host too long", s);
			memcpy(host, s, (size_t)(colon - s));
			host[colon - s] = '\0';
			port_s = colon + 1;
		}
	}
	char *end;
	long port = strtol(port_s, &end, 10);
	if (!*port_s || *end || port < 0 || port > 65535)
		return gw_errf(err, errlen, -EINVAL, "listen address \"%s\": port must be 0..65535", s);
	unsigned char buf[16];
	if (strcmp(host, "localhost") == 0)
		strcpy(host, "127.0.0.1");
	if (inet_pton(AF_INET, host, buf) != 1 && inet_pton(AF_INET6, host, buf) != 1)
		return gw_errf(err, errlen, -EINVAL, "listen address \"%s\": \"%s\" is not a numeric IPv4 or IPv6 address", s, host);
	l->enabled = true;
	gw_strlcpy(l->host, host, sizeof(l->host));
	l->port = (int)port;
	return 0;
}

static bool is_loopback(const char *host)
{
	unsigned char b[16];
	if (inet_pton(AF_INET, host, b) == 1)
		return b[0] == 127;
	if (inet_pton(AF_INET6, host, b) == 1) {
		static const unsigned char lo[16] = {[15] = 1};
		return memcmp(b, lo, 16) == 0;
	}
	return false;
}

int gw_cfg_check_public_url(char *url, char *err, size_t errlen)
{
	size_t n = strlen(url);
	const char *host = !strncmp(url, "http://", 7) ? url + 7 : !strncmp(url, "https://", 8) ? url + 8 : NULL;
	if (!host)
		return gw_errf(err, errlen, -EINVAL, "\"%s\" must start with http:// or https://", url);
	if (n > 200)
		return gw_errf(err, errlen, -EINVAL, "longer than 200 bytes");
	for (const char *p = url; *p; p++)
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f || strchr("\"'<>\\^`{|}?#", *p))
			return gw_errf(err, errlen, -EINVAL, "\"%s\": character %d (%c) is not allowed (no spaces, quotes, query or fragment)",
			               url, (int)(p - url) + 1, (unsigned char)*p > ' ' && (unsigned char)*p < 0x7f ? *p : '?');
	if (!*host || *host == '/' || *host == ':')
		return gw_errf(err, errlen, -EINVAL, "\"%s\" has no host name", url);
	while (n > 0 && url[n - 1] == '/')
		url[--n] = '\0';
	return 0;
}

void gw_cfg_link_base(const struct gw_cfg *c, char *out, size_t cap)
{
	const struct gw_listen *l = &c->http;
	if (c->public_url)
		snprintf(out, cap, "%s", c->public_url);
	else if (l->enabled)
		snprintf(out, cap, "http://%s%s%s:%d", strchr(l->host, ':') ? "[" : "", l->host,
		         strchr(l->host, ':') ? "]" : "", l->port);
	else if (cap)
		out[0] = '\0';
}

int gw_cfg_validate(const struct gw_cfg *c, char *err, size_t errlen)
{
	const struct {
		const char *name;
		const struct gw_listen *l;
	} ls[] = {{"tcp", &c->tcp}, {"udp", &c->udp}, {"http", &c->http}};
	int rc = gw_auth_check_config(c->auth, err, errlen);
	if (rc < 0)
		return rc;
	bool tokens = json_object_size(c->auth) > 0;
	for (size_t i = 0; i < GW_ARRAY_SIZE(ls); i++) {
		if (!ls[i].l->enabled || is_loopback(ls[i].l->host))
			continue;
		if (!c->allow_remote)
			return gw_errf(err, errlen, -EINVAL,
			            "%s listens on %s, which is not a loopback address; set "
			            "\"allow_remote\": true in the config file to allow that",
			            ls[i].name, ls[i].l->host);
		if (!tokens)
			return gw_errf(err, errlen, -EINVAL,
			            "%s listens on %s, which is not a loopback address: configure "
			            "\"auth\" (token files) so that only holders of a token get in",
			            ls[i].name, ls[i].l->host);
		if (ls[i].l == &c->udp)
			return gw_errf(err, errlen, -EINVAL,
			            "udp listens on %s: UDP cannot be authenticated, so it stays on a "
			            "loopback address (remote jobs use HTTP or TCP with a token)",
			            ls[i].l->host);
	}
	if (c->max_line < 256)
		return gw_errf(err, errlen, -EINVAL, "limits.max_line_bytes must be at least 256");
	if (c->max_body < c->max_line)
		return gw_errf(err, errlen, -EINVAL, "limits.max_body_bytes must be at least max_line_bytes");
	if (!c->commit_interval_ms || !c->commit_max_records)
		return gw_errf(err, errlen, -EINVAL, "storage.commit_interval_ms and commit_max_records must be > 0");
	if (c->socket_path && strlen(c->socket_path) >= 108)
		return gw_errf(err, errlen, -EINVAL, "socket path \"%s\" is longer than a Unix socket address allows (107 bytes)",
		            c->socket_path);
	return 0;
}

/* ---- file ------------------------------------------------------------------ */

struct loader {
	struct gw_cfg *c;
	char *err;
	size_t errlen;
	const char *file;
};

static int unknown_keys(struct loader *L, json_t *obj, const char *where,
                        const char *const known[])
{
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v) {
		bool ok = false;
		for (size_t i = 0; known[i]; i++)
			ok |= strcmp(known[i], key) == 0;
		if (!ok)
			return gw_errf(L->err, L->errlen, -EINVAL, "%s: unknown key \"%s%s\"", L->file, where, key);
	}
	return 0;
}

/* An integer option in [min, max]: a zero time-out or connection limit
 * would hold or lock out clients forever, so those have min >= 1. */
static int get_uint(struct loader *L, json_t *obj, const char *key, const char *where,
                    unsigned long long min, unsigned long long max, void *out, size_t size)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (unsigned long long)json_integer_value(v) < min ||
	    (unsigned long long)json_integer_value(v) > max)
		return gw_errf(L->err, L->errlen, -EINVAL, "%s: \"%s%s\" must be an integer from %llu to %llu",
		            L->file, where, key, min, max);
	unsigned long long x = (unsigned long long)json_integer_value(v);
	if (size == sizeof(unsigned))
		*(unsigned *)out = (unsigned)x;
	else
		*(size_t *)out = (size_t)x;
	return 0;
}

static int get_str(struct loader *L, json_t *obj, const char *key, const char *where,
                   const char **out)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return 0;
	if (!json_is_string(v))
		return gw_errf(L->err, L->errlen, -EINVAL, "%s: \"%s%s\" must be a string", L->file, where, key);
	*out = json_string_value(v);
	return 1;
}

static int load_listen(struct loader *L, json_t *root, const char *key, struct gw_listen *l)
{
	json_t *v = json_object_get(root, key);
	if (!v)
		return 0;
	if (json_is_false(v) || json_is_null(v)) {
		l->enabled = false;
		return 0;
	}
	if (!json_is_string(v))
		return gw_errf(L->err, L->errlen, -EINVAL, "%s: \"%s\" must be \"host:port\" or false", L->file, key);
	char e[200];
	if (gw_cfg_parse_listen(json_string_value(v), l, e, sizeof(e)) < 0)
		return gw_errf(L->err, L->errlen, -EINVAL, "%s: \"%s\": %s", L->file, key, e);
	return 0;
}

/* The thresholds of obj over *th: each key in its range, then the whole
 * set (the thresholds that must agree); `where` is "thresholds." or
 * "runs[i].thresholds." for the messages. */
static int load_thresholds(struct loader *L, json_t *obj, const char *where,
                           struct gw_thresholds *th)
{
	const char *key;
	json_t *v;
	char e[512];
	json_object_foreach(obj, key, v) {
		if (!json_is_number(v))
			return gw_errf(L->err, L->errlen, -EINVAL, "%s: \"%s%s\" must be a number", L->file, where, key);
		int rc = gw_thresholds_set(th, key, json_number_value(v), e, sizeof(e));
		if (rc == -ENOENT)
			return gw_errf(L->err, L->errlen, -EINVAL,
			            "%s: unknown threshold \"%s%s\" (`gradwatch thresholds` lists them)",
			            L->file, where, key);
		if (rc < 0)
			return gw_errf(L->err, L->errlen, -EINVAL, "%s: %s%s", L->file, where, e);
	}
	if (gw_thresholds_check(th, e, sizeof(e)) < 0)
		return gw_errf(L->err, L->errlen, -EINVAL, "%s: %.*s: %s", L->file,
		               (int)strlen(where) - 1, where, e);
	return 0;
}

static int load_aliases(struct loader *L, json_t *obj)
{
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v) {
		int role = gw_role_parse(key);
		if (role < 0)
			return gw_errf(L->err, L->errlen, -EINVAL,
			            "%s: aliases: \"%s\" is not a role (loss, grad_norm, lr, throughput, ts)",
			            L->file, key);
		if (!json_is_array(v))
			return gw_errf(L->err, L->errlen, -EINVAL, "%s: aliases.%s must be an array of field names",
			            L->file, key);
		size_t i;
		json_t *n;
		json_array_foreach(v, i, n) {
			if (!json_is_string(n))
				return gw_errf(L->err, L->errlen, -EINVAL, "%s: aliases.%s[%zu] must be a string",
				            L->file, key, i);
			int rc = gw_alias_add(L->c->aliases, role, json_string_value(n));
			if (rc == -EEXIST)
				return gw_errf(L->err, L->errlen, -EINVAL, "%s: aliases.%s: \"%s\" is already an alias of another role",
				            L->file, key, json_string_value(n));
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

static int load_detectors(struct loader *L, json_t *obj)
{
	static const char *const known[] = {"disabled", NULL};
	int rc = unknown_keys(L, obj, "detectors.", known);
	if (rc < 0)
		return rc;
	json_t *dis = json_object_get(obj, "disabled");
	if (!dis)
		return 0;
	if (!json_is_array(dis))
		return gw_errf(L->err, L->errlen, -EINVAL, "%s: detectors.disabled must be an array", L->file);
	uint64_t mask = 0;
	size_t i;
	json_t *n;
	json_array_foreach(dis, i, n) {
		const char *name = json_string_value(n);
		int k = name ? gw_det_index(name) : -1;
		if (k < 0)
			return gw_errf(L->err, L->errlen, -EINVAL, "%s: detectors.disabled[%zu]: no detector named \"%s\"",
			            L->file, i, name ? name : "(not a string)");
		mask |= 1ull << k;
	}
	L->c->engine.disabled = mask;
	return 0;
}

static int load_runs(struct loader *L, json_t *arr)
{
	if (!json_is_array(arr))
		return gw_errf(L->err, L->errlen, -EINVAL, "%s: \"runs\" must be an array", L->file);
	static const char *const known[] = {"match", "thresholds", NULL};
	size_t n = json_array_size(arr);
	struct gw_th_override *ov = calloc(n ? n : 1, sizeof(*ov));
	if (!ov)
		return -ENOMEM;
	size_t i;
	json_t *r;
	int rc = 0;
	json_array_foreach(arr, i, r) {
		char where[48];
		snprintf(where, sizeof(where), "runs[%zu].", i);
		char th_where[64];
		snprintf(th_where, sizeof(th_where), "runs[%zu].thresholds.", i);
		if (!json_is_object(r) || (rc = unknown_keys(L, r, where, known)) < 0) {
			rc = rc < 0 ? rc : gw_errf(L->err, L->errlen, -EINVAL, "%s: runs[%zu] must be an object", L->file, i);
			break;
		}
		const char *glob = NULL;
		if (get_str(L, r, "match", where, &glob) <= 0) {
			rc = gw_errf(L->err, L->errlen, -EINVAL, "%s: runs[%zu].match (a run-name glob) is required", L->file, i);
			break;
		}
		ov[i].glob = strdup(glob);
		ov[i].th = L->c->engine.th;
		json_t *th = json_object_get(r, "thresholds");
		if (th && !json_is_object(th)) {
			rc = gw_errf(L->err, L->errlen, -EINVAL, "%s: runs[%zu].thresholds must be an object",
			             L->file, i);
			break;
		}
		if (th && (rc = load_thresholds(L, th, th_where, &ov[i].th)) < 0)
			break;
	}
	if (rc < 0) {
		for (size_t k = 0; k < n; k++)
			free(ov[k].glob);
		free(ov);
		return rc;
	}
	for (size_t k = 0; k < L->c->n_overrides; k++)
		free(L->c->overrides[k].glob);
	free(L->c->overrides);
	L->c->overrides = ov;
	L->c->n_overrides = n;
	return 0;
}

int gw_cfg_load(struct gw_cfg *c, const char *path, char *err, size_t errlen)
{
	json_error_t je;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return gw_errf(err, errlen, -EINVAL, "%s:%d:%d: %s", path, je.line, je.column, je.text);
	struct loader L = {.c = c, .err = err, .errlen = errlen, .file = path};
	int rc = 0;
	static const char *const known[] = {
		"state_dir", "database", "socket", "socket_mode", "tcp", "udp", "http",
		"allow_remote", "log_level", "kernels", "limits", "storage", "aliases",
		"thresholds", "runs", "detectors", "tick_ms", "sinks", "follow", "auth", "public_url", "retention",
		NULL,
	};
	static const char *const known_limits[] = {
		"max_line_bytes", "max_body_bytes", "max_connections", "max_runs",
		"http_header_timeout_ms", "http_idle_timeout_ms", "http_body_timeout_ms",
		"http_reserved_connections", "stream_idle_timeout_ms", "stream_evict_idle_ms",
		"idempotency_window_s", "idempotency_max_keys", "run_evict_idle_s", NULL,
	};
	static const char *const known_storage[] = {
		"commit_interval_ms", "commit_max_records", "synchronous", "max_pending_bytes", NULL,
	};
	const char *s;
	json_t *v;
	if (!json_is_object(root)) {
		rc = gw_errf(err, errlen, -EINVAL, "%s: the configuration must be a JSON object", path);
		goto out;
	}
	if ((rc = unknown_keys(&L, root, "", known)) < 0)
		goto out;
	if ((rc = get_str(&L, root, "state_dir", "", &s)) < 0)
		goto out;
	if (rc > 0) {
		gw_cfg_set_str(&c->state_dir, s);
		char *db = path_join(s, "gradwatch.db");
		free(c->db_path);
		c->db_path = db;
	}
	if ((rc = get_str(&L, root, "database", "", &s)) < 0)
		goto out;
	if (rc > 0) {
		char *db = path_join(c->state_dir, s);
		free(c->db_path);
		c->db_path = db;
	}
	v = json_object_get(root, "socket");
	if (v && (json_is_null(v) || json_is_false(v))) {
		gw_cfg_set_str(&c->socket_path, NULL);
	} else if ((rc = get_str(&L, root, "socket", "", &s)) < 0) {
		goto out;
	} else if (rc > 0) {
		gw_cfg_set_str(&c->socket_path, s);
	}
	if ((rc = get_str(&L, root, "socket_mode", "", &s)) < 0)
		goto out;
	if (rc > 0) {
		char *end;
		unsigned long m = strtoul(s, &end, 8);
		if (*end || m > 0777) {
			rc = gw_errf(err, errlen, -EINVAL, "%s: socket_mode must be an octal mode like \"0660\"", path);
			goto out;
		}
		c->socket_mode = (unsigned)m;
	}
	if ((rc = load_listen(&L, root, "tcp", &c->tcp)) < 0 ||
	    (rc = load_listen(&L, root, "udp", &c->udp)) < 0 ||
	    (rc = load_listen(&L, root, "http", &c->http)) < 0)
		goto out;
	v = json_object_get(root, "allow_remote");
	if (v) {
		if (!json_is_boolean(v)) {
			rc = gw_errf(err, errlen, -EINVAL, "%s: allow_remote must be true or false", path);
			goto out;
		}
		c->allow_remote = json_is_true(v);
	}
	if ((rc = get_str(&L, root, "public_url", "", &s)) < 0)
		goto out;
	if (rc > 0) {
		char e[256];
		gw_cfg_set_str(&c->public_url, s);
		if (gw_cfg_check_public_url(c->public_url, e, sizeof(e)) < 0) {
			rc = gw_errf(err, errlen, -EINVAL, "%s: public_url: %s", path, e);
			goto out;
		}
	}
	if ((rc = get_str(&L, root, "log_level", "", &s)) < 0)
		goto out;
	if (rc > 0 && gw_log_parse_level(s, &c->log_level) < 0) {
		rc = gw_errf(err, errlen, -EINVAL, "%s: log_level \"%s\" is not one of crit, err, warn, info, debug", path, s);
		goto out;
	}
	if ((rc = get_str(&L, root, "kernels", "", &s)) < 0)
		goto out;
	if (rc > 0)
		gw_cfg_set_str(&c->kernels, s);
	if ((rc = get_uint(&L, root, "tick_ms", "", 10, 60000, &c->tick_ms, sizeof(unsigned))) < 0)
		goto out;
	if ((v = json_object_get(root, "limits"))) {
		if (!json_is_object(v) || (rc = unknown_keys(&L, v, "limits.", known_limits)) < 0) {
			rc = rc < 0 ? rc : gw_errf(err, errlen, -EINVAL, "%s: limits must be an object", path);
			goto out;
		}
		if ((rc = get_uint(&L, v, "max_line_bytes", "limits.", 256, 1u << 30, &c->max_line, sizeof(size_t))) < 0 ||
		    (rc = get_uint(&L, v, "max_body_bytes", "limits.", 256, 1ull << 34, &c->max_body, sizeof(size_t))) < 0 ||
		    (rc = get_uint(&L, v, "max_connections", "limits.", 1, 1000000, &c->max_connections, sizeof(size_t))) < 0 ||
		    (rc = get_uint(&L, v, "max_runs", "limits.", 1, 10000000, &c->max_runs, sizeof(size_t))) < 0 ||
		    (rc = get_uint(&L, v, "http_header_timeout_ms", "limits.", 100, 86400000, &c->http_header_timeout_ms, sizeof(unsigned))) < 0 ||
		    (rc = get_uint(&L, v, "http_idle_timeout_ms", "limits.", 100, 86400000, &c->http_idle_timeout_ms, sizeof(unsigned))) < 0 ||
		    (rc = get_uint(&L, v, "http_body_timeout_ms", "limits.", 100, 86400000, &c->http_body_timeout_ms, sizeof(unsigned))) < 0 ||
		    (rc = get_uint(&L, v, "http_reserved_connections", "limits.", 0, 10000, &c->http_reserved_connections, sizeof(size_t))) < 0 ||
		    (rc = get_uint(&L, v, "stream_idle_timeout_ms", "limits.", 1000, 86400000, &c->stream_idle_timeout_ms, sizeof(unsigned))) < 0 ||
		    (rc = get_uint(&L, v, "stream_evict_idle_ms", "limits.", 1000, 86400000, &c->stream_evict_idle_ms, sizeof(unsigned))) < 0 ||
		    (rc = get_uint(&L, v, "idempotency_window_s", "limits.", 60, 30 * 86400, &c->idempotency_window_s, sizeof(unsigned))) < 0 ||
		    (rc = get_uint(&L, v, "idempotency_max_keys", "limits.", 100, 10000000, &c->idempotency_max_keys, sizeof(size_t))) < 0 ||
		    (rc = get_uint(&L, v, "run_evict_idle_s", "limits.", 1, 30 * 86400, &c->run_evict_idle_s, sizeof(unsigned))) < 0)
			goto out;
	}
	if ((v = json_object_get(root, "storage"))) {
		if (!json_is_object(v) || (rc = unknown_keys(&L, v, "storage.", known_storage)) < 0) {
			rc = rc < 0 ? rc : gw_errf(err, errlen, -EINVAL, "%s: storage must be an object", path);
			goto out;
		}
		if ((rc = get_uint(&L, v, "commit_interval_ms", "storage.", 1, 60000, &c->commit_interval_ms, sizeof(unsigned))) < 0 ||
		    (rc = get_uint(&L, v, "commit_max_records", "storage.", 1, 10000000, &c->commit_max_records, sizeof(unsigned))) < 0 ||
		    (rc = get_uint(&L, v, "max_pending_bytes", "storage.", 1u << 20, 1ull << 40, &c->max_pending_bytes, sizeof(size_t))) < 0)
			goto out;
		if ((rc = get_str(&L, v, "synchronous", "storage.", &s)) < 0)
			goto out;
		if (rc > 0) {
			if (strcmp(s, "full") && strcmp(s, "normal")) {
				rc = gw_errf(err, errlen, -EINVAL, "%s: storage.synchronous must be \"full\" or \"normal\"", path);
				goto out;
			}
			c->sync_full = strcmp(s, "full") == 0;
		}
	}
	if ((v = json_object_get(root, "aliases"))) {
		if (!json_is_object(v)) {
			rc = gw_errf(err, errlen, -EINVAL, "%s: aliases must be an object", path);
			goto out;
		}
		if ((rc = load_aliases(&L, v)) < 0)
			goto out;
	}
	if ((v = json_object_get(root, "thresholds"))) {
		if (!json_is_object(v)) {
			rc = gw_errf(err, errlen, -EINVAL, "%s: thresholds must be an object", path);
			goto out;
		}
		if ((rc = load_thresholds(&L, v, "thresholds.", &c->engine.th)) < 0)
			goto out;
	}
	/* after the global thresholds, so per-run ones start from them */
	if ((v = json_object_get(root, "runs")) && (rc = load_runs(&L, v)) < 0)
		goto out;
	if ((v = json_object_get(root, "detectors"))) {
		if (!json_is_object(v)) {
			rc = gw_errf(err, errlen, -EINVAL, "%s: detectors must be an object", path);
			goto out;
		}
		if ((rc = load_detectors(&L, v)) < 0)
			goto out;
	}
	if ((v = json_object_get(root, "sinks"))) {
		if (!json_is_array(v)) {
			rc = gw_errf(err, errlen, -EINVAL, "%s: sinks must be an array", path);
			goto out;
		}
		json_decref(c->sinks);
		c->sinks = json_incref(v);
	}
	if ((v = json_object_get(root, "retention"))) {
		static const char *const known_ret[] = {"max_age", "max_bytes", "check_every", NULL};
		json_t *x;
		if (!json_is_object(v) || (rc = unknown_keys(&L, v, "retention.", known_ret)) < 0) {
			rc = rc < 0 ? rc : gw_errf(err, errlen, -EINVAL, "%s: retention must be an object", path);
			goto out;
		}
		if ((x = json_object_get(v, "max_age")) &&
		    (gw_parse_duration(x, &c->retention_max_age_ms) < 0 || c->retention_max_age_ms < 60000)) {
			rc = gw_errf(err, errlen, -EINVAL, "%s: retention.max_age must be a duration of at "
			             "least a minute (\"30d\", \"12h\", or seconds)", path);
			goto out;
		}
		if ((x = json_object_get(v, "check_every")) &&
		    (gw_parse_duration(x, &c->retention_every_ms) < 0 || c->retention_every_ms < 1000 ||
		     c->retention_every_ms > 86400000)) {
			rc = gw_errf(err, errlen, -EINVAL, "%s: retention.check_every must be a duration from "
			             "1 s to 1 d", path);
			goto out;
		}
		size_t mb = 0;
		if ((rc = get_uint(&L, v, "max_bytes", "retention.", 1u << 20, 1ull << 50, &mb,
		                   sizeof(size_t))) < 0)
			goto out;
		c->retention_max_bytes = mb;
	}
	if ((v = json_object_get(root, "auth"))) {
		char e[256];
		if ((rc = gw_auth_check_config(v, e, sizeof(e))) < 0) {
			rc = gw_errf(err, errlen, rc, "%s: %s", path, e);
			goto out;
		}
		json_decref(c->auth);
		c->auth = json_incref(v);
	}
	if ((v = json_object_get(root, "follow"))) {
		if (!json_is_array(v)) {
			rc = gw_errf(err, errlen, -EINVAL, "%s: follow must be an array", path);
			goto out;
		}
		json_decref(c->follow);
		c->follow = json_incref(v);
	}
	gw_cfg_set_str(&c->file, path);
	rc = 0;
out:
	json_decref(root);
	return rc;
}

int gw_cfg_init_kernels(const char *name, char *err, size_t errlen)
{
	int rc = gw_kern_init(name);
	if (rc == 0)
		return 0;
	const char *asked = name ? name : getenv("GRADWATCH_KERNELS");
	char avail[128] = "";
	size_t o = 0;
	for (const struct gw_kern_ops *const *k = gw_kern_available(); *k && o < sizeof(avail); k++)
		o += (size_t)snprintf(avail + o, sizeof(avail) - o, "%s%s", o ? ", " : "", (*k)->name);
	return gw_errf(err, errlen, -EINVAL, "kernel variant \"%s\" is %s; this machine has: %s",
	            asked ? asked : "?",
	            rc == -ENOTSUP ? "not built in or not supported by this CPU" : "unknown",
	            avail);
}
