/*
 * config: the JSON configuration file and the command-line flags that
 * override it (docs/configuration.md).
 *
 * gw_cfg_defaults() gives a configuration that runs with no file at all:
 * under systemd the database in $STATE_DIRECTORY and the Unix socket in
 * $RUNTIME_DIRECTORY; otherwise the user's XDG directories, the database
 * in $XDG_STATE_HOME/gradwatch (~/.local/state/gradwatch) and the socket in
 * $XDG_RUNTIME_DIR/gradwatch, or beside the database when there is no
 * runtime directory (gradwatchd creates them, mode 0700); TCP, UDP and
 * HTTP on 127.0.0.1.  gw_cfg_load() reads a file over it; unknown keys are errors so
 * a typo never silently does nothing.  Flags are applied after the file.
 */
#ifndef GW_CONFIG_H
#define GW_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "engine.h"
#include "engine_opts.h"
#include "log.h"
#include "wire.h"

#define GW_DEFAULT_PORT 7470       /* TCP and UDP NDJSON */
#define GW_DEFAULT_HTTP_PORT 7471
#define GW_CFG_FILE_MAX (4 << 20)  /* a configuration file is at most 4 MiB */

struct gw_listen {
	bool enabled;
	char host[64];     /* numeric address */
	int port;
};

struct gw_cfg {
	char *file;                 /* config file read, or NULL */
	char *state_dir;
	char *db_path;
	char *socket_path;          /* NULL or "" disables the Unix socket */
	unsigned socket_mode;
	struct gw_listen tcp, udp, http;
	bool allow_remote;          /* permit non-loopback listen addresses */
	char *public_url;           /* where people reach the pages ("https://node17:7471"),
	                               for links in alerts; NULL: the http listener */
	enum gw_log_level log_level;
	char *kernels;              /* forced kernel variant, or NULL */

	size_t max_line;            /* bytes per NDJSON line */
	size_t max_body;            /* bytes per HTTP request body */
	size_t max_connections;     /* per transport (Unix, TCP, HTTP each) */
	size_t http_reserved_connections; /* more HTTP ones, for /healthz and /metrics only */
	unsigned stream_idle_timeout_ms;  /* close a stream connection silent this long */
	unsigned stream_evict_idle_ms;    /* a full transport closes one idle this long */
	unsigned stream_line_timeout_ms;  /* close one whose unfinished line is this old */
	unsigned max_segments_per_minute; /* per run (core/seg_cap.h); 0: no cap */
	size_t max_reads_in_flight;       /* HTTP reads waiting or running; more: 503 */
	size_t max_response_bytes;        /* one HTTP answer; more: 413, ask for less */
	unsigned idempotency_window_s;    /* how long an Idempotency-Key is remembered */
	size_t idempotency_max_keys;
	size_t max_runs;            /* runs whose detector state is in memory (runs.h) */
	unsigned run_evict_idle_s;  /* an idle run's state leaves memory after this */
	unsigned http_header_timeout_ms;
	unsigned http_idle_timeout_ms;
	unsigned http_body_timeout_ms;

	unsigned commit_interval_ms;
	unsigned commit_max_records;
	bool sync_full;             /* PRAGMA synchronous=FULL (else NORMAL) */
	size_t max_pending_bytes;   /* writer queue size before back-pressure */
	unsigned tick_ms;           /* wall-clock detector tick */

	/* /healthz says "degraded" beyond these (daemon/health.c) */
	unsigned health_commit_stall_s;   /* the oldest uncommitted line waited this long */
	unsigned health_undelivered_s;    /* an alert a sink failed to take waited this long */
	unsigned health_min_free_mb;      /* free space under the database (0: not checked) */

	struct gw_alias *aliases;
	struct gw_engine_opts engine;
	struct gw_th_override *overrides;
	size_t n_overrides;

	json_t *auth;               /* token files (object, auth.h), owned, or NULL */
	uint64_t retention_max_age_ms;  /* runs last seen longer ago are deleted (0: never) */
	uint64_t retention_max_bytes;   /* the oldest runs go above this (0: no limit) */
	uint64_t retention_every_ms;    /* how often retention looks (60 s) */
	json_t *sinks;              /* alert sinks (array), owned */
	json_t *follow;             /* files to follow (array), owned */
	json_t *fleet;              /* shipping to PostgreSQL (object, fleet/fleet.h), owned,
	                               or NULL */
};

/* Fill defaults (environment: STATE_DIRECTORY, RUNTIME_DIRECTORY,
 * XDG_STATE_HOME, XDG_RUNTIME_DIR, HOME).  Creates nothing.  Returns 0 or
 * -ENOMEM. */
int gw_cfg_defaults(struct gw_cfg *c);

/* Create the default directories that the configured database and socket
 * lie in (with parents, mode 0700) when missing; a directory given by hand
 * is not created.  0, or a negative errno with the reason in err. */
int gw_cfg_make_dirs(const struct gw_cfg *c, char *err, size_t errlen);

/* The directories the daemon needs, before it opens anything
 * (--check-config, and the start after gw_cfg_make_dirs): the database's
 * directory (state_dir) exists -- or is a default one the start creates
 * under a writable parent --, is a directory, is writable by this user, on
 * a writable filesystem with at least GW_CFG_MIN_FREE bytes free; the
 * socket's directory exists.  Returns 0, or a negative errno with a
 * message naming the directory and what is wrong (err).  warn (may be
 * NULL) gets a warning, or "": less free space than gw_cfg_disk_floor.
 * Only stat, access and statvfs: nothing is created (config_paths.h). */
int gw_cfg_check_dirs(const struct gw_cfg *c, char *err, size_t errlen, char *warn,
                      size_t warnlen);

/* The free space under the database below which /healthz says degraded
 * (disk_low): the smaller of health.min_free_mb and 5 % of the
 * filesystem's size; 0 when health.min_free_mb is 0. */
uint64_t gw_cfg_disk_floor(const struct gw_cfg *c, uint64_t fs_size);

/* Read a JSON config file over the current values.  On error returns a
 * negative errno and writes a message naming the file, line and key into
 * err. */
int gw_cfg_load(struct gw_cfg *c, const char *path, char *err, size_t errlen);

/* The socket address of a listen address (numeric host).  Returns 0 or
 * -EINVAL. */
struct sockaddr_storage;
int gw_cfg_sockaddr(const struct gw_listen *l, struct sockaddr_storage *ss);

/* What to do about a listener that failed to bind with rc (a negative errno):
 * address in use, a privileged port, an address this machine does not have;
 * flag is the option that sets it ("--http").  Writes " (...)" or "" into
 * hint (n bytes) and returns hint. */
const char *gw_cfg_listen_hint(int rc, const char *flag, char *hint, size_t n);

/* Parse "host:port", "[v6]:port", "port", or "off"/"false" into l. */
int gw_cfg_parse_listen(const char *s, struct gw_listen *l, char *err, size_t errlen);

/* Check a public_url: http:// or https://, a host, no query, fragment,
 * spaces or quotes; a trailing '/' is dropped.  Returns 0 or -EINVAL with
 * the reason in err. */
int gw_cfg_check_public_url(char *url, char *err, size_t errlen);

/* Where links in alerts point: public_url, else "http://HOST:PORT" of the
 * http listener into out ("" when HTTP is off). */
void gw_cfg_link_base(const struct gw_cfg *c, char *out, size_t cap);

/* Check cross-field rules (loopback unless allow_remote, limits > 0). */
int gw_cfg_validate(const struct gw_cfg *c, char *err, size_t errlen);

/* The effective configuration as a configuration file, in the file's own
 * keys (config_json.c; for --check-config): feeding it back with --config
 * gives the same configuration.  New reference, or NULL. */
json_t *gw_cfg_to_json(const struct gw_cfg *c);

/* gw_cfg_to_json() as indented text, every real with the fewest digits
 * that read back as the same double (0.005, not 0.0050000000000000001):
 * what --check-config prints, with the sinks' inline URLs redacted and
 * inline secrets "REDACTED" (so that text is safe to paste).  Returns a malloc'd string (free() it), or
 * NULL when out of memory. */
char *gw_cfg_dumps(const struct gw_cfg *c);

void gw_cfg_free(struct gw_cfg *c);

/* Choose the kernel variant (NULL: $GRADWATCH_KERNELS or the best the CPU
 * has); on failure a message naming the variants this machine has. */
int gw_cfg_init_kernels(const char *name, char *err, size_t errlen);

/* Replace a string field (frees the old value).  Returns 0 or -ENOMEM. */
int gw_cfg_set_str(char **field, const char *value);

#endif
