/*
 * stream_unix: the Unix socket file of the NDJSON stream server (for
 * stream.c only).
 */
#ifndef GW_STREAM_UNIX_H
#define GW_STREAM_UNIX_H

#include <stddef.h>

/* The listening Unix stream socket systemd passed (socket activation), or
 * -1. */
int gw__stream_activated_socket(void);

/* A socket file at path that nobody listens on is removed; one a live
 * process listens on (or whose backlog is full) is -EADDRINUSE with the
 * reason in err.  Never blocks. */
int gw__stream_remove_stale_socket(const char *path, char *err, size_t errlen);

/* A Unix stream socket bound at path (not listening yet): the fd, or a
 * negative errno. */
int gw__stream_bind_unix(const char *path);

#endif
