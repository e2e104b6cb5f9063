/*
 * gradwatchd's parts, owned by main.c: the loop, the configuration, the
 * storage writer, the record path (ingest), the listeners, the HTTP server,
 * followed files, signals and timers.
 *
 * Threads: everything here belongs to the loop thread except the store's
 * writer thread, which talks back only through the ingest's commit_async.
 */
#ifndef GW_DAEMON_H
#define GW_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "idem.h"
#include "ingest.h"
#include "store.h"

struct gw_auth;     /* tokens, auth.c */
struct gw_server;   /* listeners, stream.c */
struct gw_http;     /* HTTP server, http.c */
struct gw_follow;   /* followed files, follow.c */

struct gw_daemon {
	uv_loop_t *loop;
	struct gw_cfg *cfg;
	struct gw_store *store;
	struct gw_ingest ingest;
	struct gw_auth *auth;             /* NULL: no tokens configured */
	struct gw_idem idem;              /* idempotency keys of POST /v1/ingest */
	double started;
	json_t *file_cfg;                 /* the file as loaded at start-up (gw_cfg_to_json,
	                                   * before flags): what a reload compares with */
	bool log_level_flag;              /* --log-level given: a reload keeps it */

	uv_signal_t sig_term, sig_int, sig_hup;
	uv_timer_t tick_timer;
	uv_timer_t watchdog_timer;
	uv_timer_t grace_timer;
	unsigned drain_ticks;

	struct gw_server *server;
	struct gw_http *http;
	struct gw_follow *follow;

	bool stopping;
	uint64_t disk_checked_ms;         /* health.c: when the free space was read */
	uint64_t disk_free, disk_size;    /* bytes free under the database then, of */
};

/* Listeners (stream.c): Unix, TCP, UDP.  Lifecycle (docs/architecture.md,
 * "Starting and stopping"): start; stop closes the listeners, the sweep
 * timer and every connection (a partial last line is parsed, else counted
 * as truncated; idempotent, also after a failed start); free once the loop
 * ran the close callbacks. */
int gw_server_start(struct gw_daemon *d, char *err, size_t errlen);
void gw_server_stop(struct gw_daemon *d);
void gw_server_free(struct gw_daemon *d);

/* Alert delivery glue (alerting.c): validate the "sinks" configuration;
 * add GET /v1/sinks and the acknowledgement routes (after the HTTP server
 * started). */
int gw_alerting_check(const struct gw_cfg *cfg, char *err, size_t errlen);
int gw_alerting_start(struct gw_daemon *d, char *err, size_t errlen);
/* POST and DELETE /v1/alerts/{id}/ack (ack.c; docs/alerts.md
 * "Acknowledging"); gw_alerting_start registers them. */
int gw_ack_start(struct gw_daemon *d, char *err, size_t errlen);

/* GET /healthz (health.c): "ok" or "degraded" with the reasons; from
 * memory and one cached statvfs, never waits.  Route data: the daemon. */
struct gw_http_conn;
struct gw_http_req;
void gw_health_healthz(struct gw_http_conn *c, const struct gw_http_req *r);

/* sd_notify (notify.c): send "state" to $NOTIFY_SOCKET if set; no-op else. */
int gw_notify(const char *state);
/* Watchdog interval from $WATCHDOG_USEC (0 if not asked for). */
uint64_t gw_notify_watchdog_usec(void);

#endif
