/*
 * config_load: reading a JSON configuration file over the current values
 * (gw_cfg_load, config.h; docs/configuration.md).  Every key the file may
 * hold is listed in one of the `known_*` tables below; anything else is
 * reported with its path, as is a value of the wrong type or out of its
 * range (the range is in the message).  Thresholds are checked against
 * their table (detectors/thresholds.h), sinks and tokens by their owners.
 */
#include "config.h"
#include "config_paths.h"

#include "auth.h"
#include "registry.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct loader {
	struct gw_cfg *c;
	char *err;
	size_t errlen;
	const char *file;
};

/* Edit distance between a and b (insert, delete, substitute), capped at 9:
 * only small distances matter for a "did you mean". */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 63 || lb > 63)
		return 9;
	size_t row[64];
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb] < 9 ? row[lb] : 9;
}

/* An unknown key is an error that names the key and, when one known key is
 * within two edits of it, that key ("max_conections": did you mean
 * "max_connections"?), else every key the object takes. */
static int unknown_keys(struct loader *L, json_t *obj, const char *where,
                        const char *const known[])
{
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v) {
		bool ok = false;
		size_t best = 3, bi = 0;
		for (size_t i = 0; known[i]; i++) {
			ok |= strcmp(known[i], key) == 0;
			size_t d = distance(known[i], key);
			if (d < best)
				best = d, bi = i;
		}
		if (ok)
			continue;
		if (best < 3)
			return gw_errf(L->err, L->errlen, -EINVAL, "%s: unknown key \"%s%s\" (did you mean \"%s%s\"?)",
			               L->file, where, key, where, known[bi]);
		char list[512] = "";
		size_t n = 0;
		for (size_t i = 0; known[i] && n < sizeof(list); i++)
			n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "", known[i]);
		int wl = (int)strlen(where);
		if (wl && where[wl - 1] == '.')
			wl--;
		return gw_errf(L->err, L->errlen, -EINVAL, "%s: unknown key \"%s%s\"; %.*s%s takes: %s",
		               L->file, where, key, wl, where, wl ? "" : "the file", list);
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
			if (!*json_string_value(n))
				return gw_errf(L->err, L->errlen, -EINVAL, "%s: aliases.%s[%zu] is empty (a "
				            "field name has at least one character)", L->file, key, i);
			int rc = gw_alias_add(L->c->aliases, role, json_string_value(n));
			if (rc == -EEXIST)
				return gw_errf(L->err, L->errlen, -EINVAL, "%s: aliases.%s: \"%s\" is already an alias of another role",
				            L->file, key, json_string_value(n));
			if (rc < 0)
				return gw_errf(L->err, L->errlen, rc, "%s: aliases.%s[%zu]: %s", L->file,
				            key, i, strerror(-rc));
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
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return gw_errf(err, errlen, -EISDIR, "%s is a directory, not a configuration file", path);
	/* only a regular file: a named pipe would wait for a writer, a device
	 * such as /dev/zero never ends (gw_read_file opens without blocking) */
	char *text = NULL;
	size_t tlen = 0;
	int frc = gw_read_file(path, GW_CFG_FILE_MAX, &text, &tlen);
	if (frc == -EINVAL)
		return gw_errf(err, errlen, -EINVAL, "%s is not a regular file (a named pipe, a device, "
		               "a socket?): a configuration is a JSON file", path);
	if (frc == -EFBIG)
		return gw_errf(err, errlen, -EINVAL, "%s is larger than %d MiB: not a configuration file",
		               path, GW_CFG_FILE_MAX >> 20);
	if (frc < 0)
		return gw_errf(err, errlen, -EINVAL, "cannot read the configuration: unable to open %s: %s", path,
		               strerror(-frc));
	if (tlen == 0) {
		free(text);
		return gw_errf(err, errlen, -EINVAL, "%s is empty: a configuration is a JSON object "
		               "(\"{}\" for the defaults; docs/configuration.md)", path);
	}
	json_t *root = json_loadb(text, tlen, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (!root)
		return gw_errf(err, errlen, -EINVAL, "%s:%d:%d: %s", path, je.line, je.column, je.text);
	struct loader L = {.c = c, .err = err, .errlen = errlen, .file = path};
	int rc = 0;
	static const char *const known[] = {
		"state_dir", "database", "socket", "socket_mode", "tcp", "udp", "http",
		"allow_remote", "log_level", "kernels", "limits", "storage", "aliases",
		"thresholds", "runs", "detectors", "tick_ms", "sinks", "follow", "auth", "public_url", "retention",
		"health", "fleet", NULL,
	};
	static const char *const known_limits[] = {
		"max_line_bytes", "max_body_bytes", "max_connections", "max_runs",
		"http_header_timeout_ms", "http_idle_timeout_ms", "http_body_timeout_ms",
		"http_reserved_connections", "stream_idle_timeout_ms", "stream_evict_idle_ms",
		"stream_line_timeout_ms", "max_segments_per_minute", "max_reads_in_flight",
		"max_response_bytes",
		"idempotency_window_s", "idempotency_max_keys", "run_evict_idle_s", NULL,
	};
	static const char *const known_health[] = {
		"commit_stall_s", "undelivered_s", "min_free_mb", NULL,
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
		char *db = gw_cfg_paths_join(s, "gradwatch.db");
		free(c->db_path);
		c->db_path = db;
	}
	if ((rc = get_str(&L, root, "database", "", &s)) < 0)
		goto out;
	if (rc > 0) {
		char *db = gw_cfg_paths_join(c->state_dir, s);
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
		    (rc = get_uint(&L, v, "stream_line_timeout_ms", "limits.", 1000, 86400000, &c->stream_line_timeout_ms, sizeof(unsigned))) < 0 ||
		    (rc = get_uint(&L, v, "max_segments_per_minute", "limits.", 0, 1000000, &c->max_segments_per_minute, sizeof(unsigned))) < 0 ||
		    (rc = get_uint(&L, v, "max_reads_in_flight", "limits.", 1, 100000, &c->max_reads_in_flight, sizeof(size_t))) < 0 ||
		    (rc = get_uint(&L, v, "max_response_bytes", "limits.", 65536, (uint64_t)1 << 34, &c->max_response_bytes, sizeof(size_t))) < 0 ||
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
	if ((v = json_object_get(root, "health"))) {
		if (!json_is_object(v) || (rc = unknown_keys(&L, v, "health.", known_health)) < 0) {
			rc = rc < 0 ? rc : gw_errf(err, errlen, -EINVAL, "%s: health must be an object", path);
			goto out;
		}
		if ((rc = get_uint(&L, v, "commit_stall_s", "health.", 1, 86400, &c->health_commit_stall_s, sizeof(unsigned))) < 0 ||
		    (rc = get_uint(&L, v, "undelivered_s", "health.", 1, 30 * 86400, &c->health_undelivered_s, sizeof(unsigned))) < 0 ||
		    (rc = get_uint(&L, v, "min_free_mb", "health.", 0, 1u << 30, &c->health_min_free_mb, sizeof(unsigned))) < 0)
			goto out;
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
	if ((v = json_object_get(root, "fleet"))) {
		/* its keys are checked by its owner (fleet/fleet.h) at start and
		 * by --check-config */
		if (!json_is_object(v)) {
			rc = gw_errf(err, errlen, -EINVAL, "%s: fleet must be an object", path);
			goto out;
		}
		json_decref(c->fleet);
		c->fleet = json_incref(v);
	}
	gw_cfg_set_str(&c->file, path);
	rc = 0;
out:
	json_decref(root);
	return rc;
}
