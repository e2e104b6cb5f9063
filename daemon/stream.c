/*
 * Stream and datagram listeners: NDJSON over a Unix socket, TCP and UDP.
 *
 * A stream connection feeds its bytes through a line splitter (lines.c) into
 * gw_ingest_line.  Accepted lines get no answer; a rejected line is answered
 * with one JSON line {"error": reason, "line": N, "field": ..., "message":
 * ...} as long as the client reads them (we stop writing errors when our
 * write queue to it passes 64 KiB), is counted, and logged (the first few per
 * connection).  When the store's queue is over its limit, connections stop
 * reading until it drains (back-pressure); UDP cannot wait, so datagrams are
 * then dropped and counted.  At shutdown a partial last line is parsed as
 * "truncated" if it is a complete object, else rejected.
 */
#include "daemon.h"

#include "lines.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ERR_WRITE_LIMIT (64 * 1024)
#define LOGGED_ERRORS 3

struct conn {
	union {
		uv_handle_t h;
		uv_stream_t s;
		uv_pipe_t pipe;
		uv_tcp_t tcp;
	} u;
	struct gw_daemon *d;
	enum gw_transport t;
	struct gw_lines lines;
	struct gw_paused paused;
	uint64_t id;
	uint64_t accepted, rejected;
	char peer[64];
	bool reading;
	bool closing;
	struct conn *next, *prev;
};

struct gw_server {
	uv_pipe_t unix_srv;
	uv_tcp_t tcp_srv;
	uv_udp_t udp;
	bool unix_on, tcp_on, udp_on;
	struct conn conns;      /* list head */
	size_t nconns;
	uint64_t next_id;
	char *udp_buf;
};

struct err_write {
	uv_write_t req;
	char buf[];
};

static void on_err_written(uv_write_t *req, int status)
{
	free(gw_container_of(req, struct err_write, req));
}

static void answer_error(struct conn *c, uint64_t lineno, const struct gw_wire_err *e)
{
	c->rejected++;
	if (c->rejected <= LOGGED_ERRORS)
		gw_log_warn("%s connection %" PRIu64 " (%s) line %" PRIu64 ": %s%s",
		            gw_transport_name(c->t), c->id, c->peer, lineno, e->msg,
		            c->rejected == LOGGED_ERRORS ? " (further errors of this connection are counted, not logged)" : "");
	if (c->closing || uv_stream_get_write_queue_size(&c->u.s) > ERR_WRITE_LIMIT)
		return;
	json_t *j = gw_ingest_err_json(lineno, e);
	if (!j)
		return;
	/* stream clients get the reason under "error" */
	json_object_set(j, "error", json_object_get(j, "reason"));
	json_object_del(j, "reason");
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (!s)
		return;
	size_t n = strlen(s);
	struct err_write *w = malloc(sizeof(*w) + n + 1);
	if (w) {
		memcpy(w->buf, s, n);
		w->buf[n] = '\n';
		uv_buf_t b = uv_buf_init(w->buf, (unsigned)n + 1);
		if (uv_write(&w->req, &c->u.s, &b, 1, on_err_written) < 0)
			free(w);
	}
	free(s);
}

static int on_line(void *data, const char *line, size_t len, uint64_t lineno,
                   enum gw_line_status st)
{
	struct conn *c = data;
	struct gw_ingest_result res;
	gw_ingest_framed(c->d, c->t, line, len, lineno, st, NULL, false, &res);
	if (res.rc == 0)
		c->accepted++;
	else if (res.rc == -EINVAL)
		answer_error(c, lineno, &res.err);
	return 0;
}

static void on_close_conn(uv_handle_t *h)
{
	struct conn *c = gw_container_of(h, struct conn, u.h);
	gw_lines_free(&c->lines);
	free(c);
}

static void conn_close(struct conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	gw_daemon_unpause(c->d, &c->paused);
	/* a last line without its newline is still a line */
	gw_lines_finish(&c->lines, on_line, c);
	c->prev->next = c->next;
	c->next->prev = c->prev;
	c->d->server->nconns--;
	gw_log_debug("%s connection %" PRIu64 " (%s) closed: %" PRIu64 " lines accepted, %" PRIu64 " rejected",
	             gw_transport_name(c->t), c->id, c->peer, c->accepted, c->rejected);
	uv_close(&c->u.h, on_close_conn);
}

static void conn_pause(struct conn *c);

static void feed(struct conn *c, const char *p, size_t n)
{
	int rc = gw_lines_feed(&c->lines, p, n, on_line, c);
	if (rc == -ENOMEM) {
		gw_log_err("%s connection %" PRIu64 ": out of memory, closing", gw_transport_name(c->t), c->id);
		conn_close(c);
		return;
	}
	if (gw_store_congested(c->d->store))
		conn_pause(c);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = gw_container_of(s, struct conn, u.s);
	if (nread < 0) {
		if (nread != UV_EOF)
			gw_log_debug("%s connection %" PRIu64 ": %s", gw_transport_name(c->t), c->id,
			             uv_strerror((int)nread));
		conn_close(c);
		return;
	}
	c->d->stats.bytes[c->t] += (uint64_t)nread;
	feed(c, buf->base, (size_t)nread);
}

static void conn_resume(struct gw_paused *p)
{
	struct conn *c = gw_container_of(p, struct conn, paused);
	if (c->closing || c->reading)
		return;
	c->reading = true;
	uv_read_start(&c->u.s, gw_daemon_alloc_slab, on_read);
}

static void conn_pause(struct conn *c)
{
	if (!c->reading)
		return;
	uv_read_stop(&c->u.s);
	c->reading = false;
	c->paused.resume = conn_resume;
	gw_daemon_pause(c->d, &c->paused);
}

static void on_connection(uv_stream_t *srv, int status)
{
	struct gw_daemon *d = srv->data;
	struct gw_server *sv = d->server;
	if (status < 0) {
		gw_log_warn("accept: %s", uv_strerror(status));
		return;
	}
	bool is_unix = srv == (uv_stream_t *)&sv->unix_srv;
	struct conn *c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->d = d;
	c->t = is_unix ? GW_TR_UNIX : GW_TR_TCP;
	c->id = ++sv->next_id;
	gw_lines_init(&c->lines, d->cfg->max_line);
	if (is_unix)
		uv_pipe_init(d->loop, &c->u.pipe, 0);
	else
		uv_tcp_init(d->loop, &c->u.tcp);
	if (uv_accept(srv, &c->u.s) < 0) {
		uv_close(&c->u.h, on_close_conn);
		return;
	}
	c->next = sv->conns.next;
	c->prev = &sv->conns;
	sv->conns.next->prev = c;
	sv->conns.next = c;
	sv->nconns++;
	d->stats.connections++;
	if (sv->nconns > d->cfg->max_connections) {
		gw_log_warn("too many connections (limits.max_connections = %zu); refusing one",
		            d->cfg->max_connections);
		conn_close(c);
		return;
	}
	if (is_unix) {
		snprintf(c->peer, sizeof(c->peer), "unix");
	} else {
		struct sockaddr_storage ss;
		int len = sizeof(ss);
		char host[48] = "?";
		if (uv_tcp_getpeername(&c->u.tcp, (struct sockaddr *)&ss, &len) == 0) {
			if (ss.ss_family == AF_INET6)
				uv_ip6_name((struct sockaddr_in6 *)&ss, host, sizeof(host));
			else
				uv_ip4_name((struct sockaddr_in *)&ss, host, sizeof(host));
		}
		snprintf(c->peer, sizeof(c->peer), "%s", host);
		uv_tcp_nodelay(&c->u.tcp, 1);
	}
	c->reading = true;
	uv_read_start(&c->u.s, gw_daemon_alloc_slab, on_read);
}

/* ---- UDP ------------------------------------------------------------------------ */

struct dgram_ctx {
	struct gw_daemon *d;
	uint64_t rejected;
};

static int on_dgram_line(void *data, const char *line, size_t len, uint64_t lineno,
                         enum gw_line_status st)
{
	struct dgram_ctx *x = data;
	struct gw_ingest_result res;
	gw_ingest_framed(x->d, GW_TR_UDP, line, len, lineno, st, NULL, true, &res);
	if (res.rc == -EINVAL && x->rejected++ == 0)
		gw_log_debug("udp datagram line %" PRIu64 ": %s", lineno, res.err.msg);
	return 0;
}

static void on_udp_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	struct gw_daemon *d = h->data;
	buf->base = d->server->udp_buf;
	buf->len = 65536;
}

static void on_udp(uv_udp_t *u, ssize_t nread, const uv_buf_t *buf,
                   const struct sockaddr *addr, unsigned flags)
{
	struct gw_daemon *d = u->data;
	if (nread <= 0 || !addr)
		return;
	if (flags & UV_UDP_PARTIAL) {
		gw_ingest_reject(d, GW_TR_UDP, GW_REJ_TOO_LONG);
		return;
	}
	if (gw_store_congested(d->store)) {
		d->stats.udp_dropped++;
		return;
	}
	d->stats.bytes[GW_TR_UDP] += (uint64_t)nread;
	/* every datagram is a whole number of lines; the last needs no newline */
	struct gw_lines l;
	gw_lines_init(&l, d->cfg->max_line);
	struct dgram_ctx x = {.d = d};
	gw_lines_feed(&l, buf->base, (size_t)nread, on_dgram_line, &x);
	gw_lines_finish(&l, on_dgram_line, &x);
	gw_lines_free(&l);
}

/* ---- start / stop ------------------------------------------------------------------- */

static int addr_of(const struct gw_listen *l, struct sockaddr_storage *ss)
{
	if (strchr(l->host, ':'))
		return uv_ip6_addr(l->host, l->port, (struct sockaddr_in6 *)ss);
	return uv_ip4_addr(l->host, l->port, (struct sockaddr_in *)ss);
}

int gw_server_start(struct gw_daemon *d, char *err, size_t errlen)
{
	struct gw_server *sv = calloc(1, sizeof(*sv));
	if (!sv)
		return -ENOMEM;
	d->server = sv;
	sv->conns.next = sv->conns.prev = &sv->conns;
	struct gw_cfg *c = d->cfg;
	int rc;
	if (c->socket_path && *c->socket_path) {
		uv_pipe_init(d->loop, &sv->unix_srv, 0);
		sv->unix_srv.data = d;
		sv->unix_on = true;
		/* a stale socket file from a killed daemon: remove it if nobody listens */
		struct stat st;
		if (lstat(c->socket_path, &st) == 0 && S_ISSOCK(st.st_mode))
			unlink(c->socket_path);
		if ((rc = uv_pipe_bind(&sv->unix_srv, c->socket_path)) < 0 ||
		    (rc = uv_listen((uv_stream_t *)&sv->unix_srv, 256, on_connection)) < 0) {
			snprintf(err, errlen, "unix socket %s: %s", c->socket_path, uv_strerror(rc));
			return rc;
		}
		chmod(c->socket_path, c->socket_mode);
		gw_log_info("listening on unix:%s (NDJSON)", c->socket_path);
	}
	struct sockaddr_storage ss;
	if (c->tcp.enabled) {
		uv_tcp_init(d->loop, &sv->tcp_srv);
		sv->tcp_srv.data = d;
		sv->tcp_on = true;
		if ((rc = addr_of(&c->tcp, &ss)) < 0 ||
		    (rc = uv_tcp_bind(&sv->tcp_srv, (struct sockaddr *)&ss, 0)) < 0 ||
		    (rc = uv_listen((uv_stream_t *)&sv->tcp_srv, 256, on_connection)) < 0) {
			snprintf(err, errlen, "tcp %s:%d: %s", c->tcp.host, c->tcp.port, uv_strerror(rc));
			return rc;
		}
		gw_log_info("listening on tcp:%s:%d (NDJSON)", c->tcp.host, c->tcp.port);
	}
	if (c->udp.enabled) {
		sv->udp_buf = malloc(65536);
		if (!sv->udp_buf)
			return -ENOMEM;
		uv_udp_init(d->loop, &sv->udp);
		sv->udp.data = d;
		sv->udp_on = true;
		if ((rc = addr_of(&c->udp, &ss)) < 0 ||
		    (rc = uv_udp_bind(&sv->udp, (struct sockaddr *)&ss, 0)) < 0 ||
		    (rc = uv_udp_recv_start(&sv->udp, on_udp_alloc, on_udp)) < 0) {
			snprintf(err, errlen, "udp %s:%d: %s", c->udp.host, c->udp.port, uv_strerror(rc));
			return rc;
		}
		int size = 4 << 20;
		uv_recv_buffer_size((uv_handle_t *)&sv->udp, &size);
		gw_log_info("listening on udp:%s:%d (NDJSON datagrams)", c->udp.host, c->udp.port);
	}
	return 0;
}

static void on_close_free_buf(uv_handle_t *h)
{
	struct gw_daemon *d = h->data;
	free(d->server->udp_buf);
	d->server->udp_buf = NULL;
}

void gw_server_stop(struct gw_daemon *d)
{
	struct gw_server *sv = d->server;
	if (!sv)
		return;
	if (sv->unix_on && !uv_is_closing((uv_handle_t *)&sv->unix_srv)) {
		uv_close((uv_handle_t *)&sv->unix_srv, NULL);
		if (d->cfg->socket_path)
			unlink(d->cfg->socket_path);
	}
	if (sv->tcp_on && !uv_is_closing((uv_handle_t *)&sv->tcp_srv))
		uv_close((uv_handle_t *)&sv->tcp_srv, NULL);
	if (sv->udp_on && !uv_is_closing((uv_handle_t *)&sv->udp))
		uv_close((uv_handle_t *)&sv->udp, on_close_free_buf);
	while (sv->conns.next != &sv->conns)
		conn_close(sv->conns.next);
}

void gw_server_free(struct gw_daemon *d)
{
	free(d->server);
	d->server = NULL;
}
