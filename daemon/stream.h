/*
 * stream: the stream and datagram listeners of gradwatchd: NDJSON over a
 * Unix socket (or the one systemd passed), TCP and UDP, each connection an
 * ingest source (stream.c says how connections are answered, paused and
 * closed).
 */
#ifndef GW_STREAM_H
#define GW_STREAM_H

#include <stddef.h>
#include <uv.h>

struct gw_auth;
struct gw_cfg;
struct gw_ingest;
struct gw_server;

/* What the listeners need (all borrowed, outliving the server). */
struct gw_server_opts {
	uv_loop_t *loop;
	const struct gw_cfg *cfg;     /* addresses, the socket's path and mode, limits */
	struct gw_ingest *ingest;     /* where every line goes */
	const struct gw_auth *auth;   /* tokens (NULL: auth off) */
};

/* Lifecycle (docs/architecture.md, "Starting and stopping"): start binds
 * and listens (0, or a negative errno with a message in err; *out may be
 * set on failure); stop closes the listeners, the sweep timer and every
 * connection (a partial last line is parsed, else counted as truncated;
 * idempotent, sv may be NULL); free once the loop ran the close callbacks
 * (sv may be NULL). */
int gw_server_start(const struct gw_server_opts *o, struct gw_server **out, char *err,
                    size_t errlen);
void gw_server_stop(struct gw_server *sv);
void gw_server_free(struct gw_server *sv);

#endif
