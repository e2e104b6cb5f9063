/*
 * gradwatchd's shared state: the loop, the configuration, the storage
 * writer, the detector engine, the listeners and the ingest counters.
 *
 * Threads: everything here belongs to the loop thread except the store's
 * writer thread, which talks back only through `commit_async`.
 */
#ifndef GW_DAEMON_H
#define GW_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "engine.h"
#include "lines.h"
#include "store.h"
#include "wire.h"

enum gw_transport {
	GW_TR_UNIX,
	GW_TR_TCP,
	GW_TR_UDP,
	GW_TR_HTTP,
	GW_TR_FOLLOW,
	GW_NTRANSPORTS,
};

const char *gw_transport_name(enum gw_transport t);

struct gw_ingest_stats {
	uint64_t accepted[GW_NTRANSPORTS];
	uint64_t rejected[GW_NTRANSPORTS][GW_REJ_NREASONS];
	uint64_t events[GW_NTRANSPORTS];
	uint64_t alerts[GW_DET_MAX][3];   /* opened, by detector and severity */
	uint64_t segments;
	uint64_t connections;
	uint64_t udp_dropped;             /* datagrams refused under back-pressure */
	uint64_t bytes[GW_NTRANSPORTS];
};

/* Someone waiting for the store to commit up to `seq` (an HTTP response). */
struct gw_commit_waiter {
	uint64_t seq;
	void (*fn)(struct gw_commit_waiter *w);
	struct gw_commit_waiter *next;
};

/* A stream connection paused for back-pressure. */
struct gw_paused {
	void (*resume)(struct gw_paused *p);
	struct gw_paused *next, *prev;
	bool linked;
};

struct gw_server;   /* listeners, stream.c */
struct gw_outbox;   /* alert delivery, alerts/outbox.h */
struct gw_http;     /* HTTP server, http.c */
struct gw_follow;   /* followed files, follow.c */

struct gw_daemon {
	uv_loop_t *loop;
	struct gw_cfg *cfg;
	struct gw_store *store;
	struct gw_engine *engine;
	struct gw_wire *wire;
	double started;

	uv_async_t commit_async;
	uv_signal_t sig_term, sig_int, sig_hup;
	uv_timer_t tick_timer;
	uv_timer_t watchdog_timer;
	uint64_t watchdog_usec;

	struct gw_server *server;
	struct gw_http *http;
	struct gw_outbox *outbox;         /* NULL when no sinks are configured */
	struct gw_follow *follow;

	struct gw_commit_waiter *waiters;
	struct gw_paused paused;          /* list head */
	uint64_t seq_seen;                /* store sequence of the last line ingested */

	struct gw_ingest_stats stats;
	bool stopping;
};

/* Result of ingesting one line. */
struct gw_ingest_result {
	int rc;                    /* 0 accepted (record or event), -EINVAL rejected, -ENODATA blank */
	struct gw_wire_err err;
	uint64_t seq;              /* store sequence of the line's last item */
};

/* Parse, detect, store one line (loop thread).  `default_run` may be NULL. */
void gw_ingest_line(struct gw_daemon *d, enum gw_transport t, const char *line,
                    size_t len, uint64_t lineno, const char *default_run,
                    struct gw_ingest_result *res);

/* The same for a line as the line splitter hands it over: an over-long
 * line is rejected and counted; a last line cut off by the peer is counted
 * as truncated, unless `eof_ends_line` (the end of an HTTP body or of a
 * datagram is a legitimate end of line). */
void gw_ingest_framed(struct gw_daemon *d, enum gw_transport t, const char *line, size_t len,
                      uint64_t lineno, enum gw_line_status st, const char *default_run,
                      bool eof_ends_line, struct gw_ingest_result *res);

/* A rejected line as the JSON error object clients get:
 * {line, reason, message, field?, column?} (new reference). */
json_t *gw_ingest_err_json(uint64_t lineno, const struct gw_wire_err *e);

/* uv_alloc_cb for stream reads (one shared slab; see ingest.c). */
void gw_daemon_alloc_slab(uv_handle_t *h, size_t hint, uv_buf_t *buf);

/* Count a line the framing rejected (too long, truncated). */
void gw_ingest_reject(struct gw_daemon *d, enum gw_transport t, enum gw_wire_reason r);

/* Call w->fn once the store has committed w->seq (maybe right away). */
void gw_daemon_wait_commit(struct gw_daemon *d, struct gw_commit_waiter *w);
void gw_daemon_cancel_wait(struct gw_daemon *d, struct gw_commit_waiter *w);

/* Park a connection until the store's queue drains. */
void gw_daemon_pause(struct gw_daemon *d, struct gw_paused *p);
void gw_daemon_unpause(struct gw_daemon *d, struct gw_paused *p);

/* Listeners (stream.c): Unix, TCP, UDP. */
int gw_server_start(struct gw_daemon *d, char *err, size_t errlen);
/* Stop accepting; close connections (a partial last line is parsed, else
 * counted as truncated). */
void gw_server_stop(struct gw_daemon *d);
void gw_server_free(struct gw_daemon *d);

/* HTTP API (http.c). */
int gw_http_start(struct gw_daemon *d, char *err, size_t errlen);
void gw_http_stop(struct gw_daemon *d);

/* Alert delivery (alerting.c): validate the "sinks" configuration; open
 * the outbox (reads the database: before the loop runs); add GET /v1/sinks
 * (after gw_http_start). */
int gw_alerting_check(const struct gw_cfg *cfg, char *err, size_t errlen);
int gw_alerting_start(struct gw_daemon *d, char *err, size_t errlen);
int gw_alerting_routes(struct gw_daemon *d);

/* sd_notify (notify.c): send "state" to $NOTIFY_SOCKET if set; no-op else. */
int gw_notify(const char *state);
/* Watchdog interval from $WATCHDOG_USEC (0 if not asked for). */
uint64_t gw_notify_watchdog_usec(void);

#endif
