/*
 * Configuration: defaults, listen addresses, validation, the kernel choice
 * (see config.h and docs/configuration.md).  The file is read by
 * config_load.c, written back by config_json.c; the default directories
 * are config_paths.c's.
 */
#include "config.h"
#include "config_paths.h"

#include "auth.h"

#include "kern.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
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

/* The configuration's paths, as config_paths.c takes them. */
static struct gw_cfg_paths paths_of(const struct gw_cfg *c)
{
	return (struct gw_cfg_paths){.state_dir = c->state_dir, .db_path = c->db_path,
	                             .socket_path = c->socket_path,
	                             .min_free_mb = c->health_min_free_mb};
}

int gw_cfg_make_dirs(const struct gw_cfg *c, char *err, size_t errlen)
{
	const struct gw_cfg_paths p = paths_of(c);
	return gw_cfg_paths_make(&p, err, errlen);
}

int gw_cfg_check_dirs(const struct gw_cfg *c, char *err, size_t errlen, char *warn,
                      size_t warnlen)
{
	const struct gw_cfg_paths p = paths_of(c);
	return gw_cfg_paths_check(&p, err, errlen, warn, warnlen);
}

uint64_t gw_cfg_disk_floor(const struct gw_cfg *c, uint64_t fs_size)
{
	return gw_cfg_paths_floor(c->health_min_free_mb, fs_size);
}

int gw_cfg_defaults(struct gw_cfg *c)
{
	memset(c, 0, sizeof(*c));
	char *rt = NULL;
	if (gw_cfg_paths_default(&c->state_dir, &rt) < 0)
		return -ENOMEM;
	c->db_path = gw_cfg_paths_join(c->state_dir, "gradwatch.db");
	c->socket_path = gw_cfg_paths_join(rt, "gradwatch.sock");
	free(rt);
	c->socket_mode = 0660;
	c->tcp = (struct gw_listen){true, "127.0.0.1", GW_DEFAULT_PORT};
	c->udp = (struct gw_listen){true, "127.0.0.1", GW_DEFAULT_PORT};
	c->http = (struct gw_listen){true, "127.0.0.1", GW_DEFAULT_HTTP_PORT};
	c->log_level = GW_LOG_INFO;
	c->max_line = 64 * 1024;
	c->max_body = 64 * 1024 * 1024;
	c->max_connections = 1024;
	c->max_runs = 16384;          /* ~1 GiB of detector state at ~63 KB a run */
	c->http_header_timeout_ms = 10000;
	c->http_idle_timeout_ms = 60000;
	c->http_body_timeout_ms = 30000;
	c->http_reserved_connections = 16;
	c->stream_idle_timeout_ms = 900000;
	c->stream_evict_idle_ms = 30000;
	c->stream_line_timeout_ms = 60000;
	c->max_segments_per_minute = 60;
	c->max_reads_in_flight = 16;
	c->max_response_bytes = 64u << 20;
	c->idempotency_window_s = 86400;
	c->run_evict_idle_s = 600;
	c->retention_every_ms = 60000;
	c->idempotency_max_keys = 100000;
	c->commit_interval_ms = 100;
	c->commit_max_records = 20000;
	c->sync_full = true;
	c->max_pending_bytes = 256u * 1024 * 1024;
	c->tick_ms = 1000;
	c->health_commit_stall_s = 60;
	c->health_undelivered_s = 900;
	c->health_min_free_mb = 32;
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
	json_decref(c->fleet);
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

const char *gw_cfg_listen_hint(int rc, const char *flag, char *hint, size_t n)
{
	if (rc == -EADDRINUSE)
		snprintf(hint, n, " (another program, perhaps another gradwatchd, listens there: "
		         "choose another address with %s ADDR:PORT or in the config file, or turn it off "
		         "with %s off)", flag, flag);
	else if (rc == -EACCES)
		snprintf(hint, n, " (ports below 1024 need root or CAP_NET_BIND_SERVICE: "
		         "choose another with %s ADDR:PORT)", flag);
	else if (rc == -EADDRNOTAVAIL)
		snprintf(hint, n, " (no interface of this machine has that address: "
		         "choose another with %s ADDR:PORT)", flag);
	else if (n)
		hint[0] = '\0';
	return hint;
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
	if (port_s == s && (!*port_s || *end))   /* no ':' and not a bare port: "127.0.0.1" */
		return gw_errf(err, errlen, -EINVAL, "listen address \"%s\": expected \"host:port\" "
		               "(\"%.64s:PORT\"), \"[v6-address]:port\", a port, or \"off\"", s, s);
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
