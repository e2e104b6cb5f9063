/*
 * Stream and datagram listeners: NDJSON over a Unix socket, TCP and UDP.
 *
 * A stream connection is an ingest source (ingest.h): its bytes go through
 * the line splitter into the record path.  Accepted lines get no answer; a
 * rejected line is answered
 * with one JSON line {"error": reason, "line": N, "field": ..., "message":
 * ...} as long as the client reads them (we stop writing errors when our
 * write queue to it passes 64 KiB), is counted, and logged (the first few per
 * connection, within the log's budget for peers: gw_log_peer).  When the
 * store's queue is over its limit, connections stop
 * reading until it drains (back-pressure); UDP cannot wait, so datagrams are
 * then dropped and counted.  At shutdown a partial last line is parsed as
 * "truncated" if it is a complete object, else rejected.
 */
#include "stream.h"
#include "stream_unix.h"

#include "auth.h"
#include "config.h"
#include "ingest.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
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
	struct gw_server *sv;
	enum gw_transport t;
	struct gw_ingest_src src;
	struct gw_paused paused;
	uint64_t id;
	char peer[64];
	/* TCP with tokens configured: the first line {"auth": TOKEN} */
	bool need_auth;
	char auth[GW_AUTH_TOKEN_MAX + 64];
	size_t auth_len;
	bool reading;
	bool closing;
	uint64_t active_ms;     /* monotonic ms of the last completed line (or the accept) */
	bool partial;           /* an unfinished line is pending ... */
	uint64_t line_ms;       /* ... begun at this monotonic ms */
	struct conn *next, *prev;   /* its transport's list, most recently active first */
};

struct gw_server {
	struct gw_server_opts o;
	uv_pipe_t unix_srv;
	uv_tcp_t tcp_srv;
	uv_udp_t udp;
	bool unix_on, tcp_on, udp_on;
	bool unix_bound;        /* we made the socket file: remove it at stop */
	dev_t unix_dev;         /* ... that file, and only while it is still ours */
	ino_t unix_ino;
	bool unix_activated;    /* systemd made it: leave it */
	struct conn conns[2];   /* per stream transport (unix, tcp): list heads */
	size_t nconns[2];
	uv_timer_t sweep;       /* closes connections idle too long */
	bool sweep_on;
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

static void answer_error(struct gw_ingest_src *src, uint64_t lineno, const struct gw_wire_err *e)
{
	struct conn *c = src->data;
	if (src->rejected <= LOGGED_ERRORS)
		gw_log_peer(GW_LOG_WARN, "%s connection %" PRIu64 " (%s) line %" PRIu64 ": %s%s",
		            gw_transport_name(c->t), c->id, c->peer, lineno, e->msg,
		            src->rejected == LOGGED_ERRORS ? " (further errors of this connection are counted, not logged)" : "");
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

static void on_close_conn(uv_handle_t *h)
{
	struct conn *c = gw_container_of(h, struct conn, u.h);
	gw_ingest_src_deinit(&c->src);
	free(c);
}

static void conn_close(struct conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	gw_ingest_unpause(c->sv->o.ingest, &c->paused);
	/* a last line without its newline is still a line */
	gw_ingest_src_finish(&c->src);
	c->prev->next = c->next;
	c->next->prev = c->prev;
	c->sv->nconns[c->t == GW_TR_TCP]--;
	gw_log_debug("%s connection %" PRIu64 " (%s) closed: %" PRIu64 " lines accepted, %" PRIu64 " rejected",
	             gw_transport_name(c->t), c->id, c->peer, c->src.accepted, c->src.rejected);
	uv_close(&c->u.h, on_close_conn);
}

static void conn_pause(struct conn *c);
static bool make_room(struct gw_server *sv, int k);

static void feed(struct conn *c, const char *p, size_t n)
{
	int rc = gw_ingest_src_feed(&c->src, p, n);
	if (rc == -ENOMEM) {
		gw_log_err("%s connection %" PRIu64 ": out of memory, closing", gw_transport_name(c->t), c->id);
		conn_close(c);
		return;
	}
	if (gw_ingest_congested(c->sv->o.ingest))
		conn_pause(c);
}

static void link_front(struct conn *head, struct conn *c)
{
	c->next = head->next;
	c->prev = head;
	head->next->prev = c;
	head->next = c;
}

/* A line completed: the connection moves to the front of its list.  Bytes
 * alone are not activity: a peer trickling a byte every few seconds
 * without ever ending a line (slowloris) must look as idle as a silent
 * one, or 1,024 of them hold a transport full for good. */
static void touch(struct conn *c, uint64_t now)
{
	c->active_ms = now;
	if (c->prev == &c->sv->conns[c->t == GW_TR_TCP])
		return;
	c->prev->next = c->next;
	c->next->prev = c->prev;
	link_front(&c->sv->conns[c->t == GW_TR_TCP], c);
}

/* Answer one JSON error line and close (a refused connection hears why). */
static void refuse(struct conn *c, const char *reason, const char *msg)
{
	json_t *j = json_pack("{s:s, s:s}", "error", reason, "message", msg);
	char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	size_t n = t ? strlen(t) : 0;
	struct err_write *w = t ? malloc(sizeof(*w) + n + 1) : NULL;
	if (w) {
		memcpy(w->buf, t, n);
		w->buf[n] = '\n';
		uv_buf_t b = uv_buf_init(w->buf, (unsigned)n + 1);
		if (uv_write(&w->req, &c->u.s, &b, 1, on_err_written) < 0)
			free(w);
	}
	free(t);
	gw_log_peer(GW_LOG_WARN, "%s connection %" PRIu64 " (%s) refused: %s",
	            gw_transport_name(c->t), c->id, c->peer, msg);
	conn_close(c);
}

/* Before its first line, a connection that needs a token sends it.  Returns
 * the bytes of p consumed, or -1 when the connection was refused. */
static ssize_t read_auth(struct conn *c, const char *p, size_t n)
{
	const char *nl = memchr(p, '\n', n);
	size_t take = nl ? (size_t)(nl - p) + 1 : n;
	if (c->auth_len + take > sizeof(c->auth)) {
		refuse(c, "unauthorized", "unauthorized: the first line must be {\"auth\": TOKEN}");
		return -1;
	}
	memcpy(c->auth + c->auth_len, p, take);
	c->auth_len += take;
	if (!nl)
		return (ssize_t)take;
	char why[128];
	const struct gw_token *t = gw_auth_line(c->sv->o.auth, c->auth, c->auth_len - 1, why, sizeof(why));
	if (!t) {
		gw_ingest_count_reject(c->sv->o.ingest, c->t, GW_REJ_UNAUTHORIZED);
		refuse(c, "unauthorized", why);
		return -1;
	}
	c->src.token = t;
	c->need_auth = false;
	c->src.lines.lineno = 1;   /* the auth line is line 1 */
	return (ssize_t)take;
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
	const char *p = buf->base;
	size_t n = (size_t)nread;
	uint64_t now = gw_mono_ms();
	if (n && memchr(p, '\n', n))
		touch(c, now);
	bool open_line = n ? p[n - 1] != '\n' : c->partial;
	if (open_line && (!c->partial || memchr(p, '\n', n)))
		c->line_ms = now;   /* a new unfinished line begins in this chunk */
	c->partial = open_line;
	if (c->need_auth) {
		ssize_t k = read_auth(c, p, n);
		if (k < 0)
			return;
		p += k;
		n -= (size_t)k;
	}
	if (n)
		feed(c, p, n);
}

static void conn_resume(struct gw_paused *p)
{
	struct conn *c = gw_container_of(p, struct conn, paused);
	if (c->closing || c->reading)
		return;
	c->reading = true;
	uv_read_start(&c->u.s, gw_ingest_alloc_slab, on_read);
}

static void conn_pause(struct conn *c)
{
	if (!c->reading)
		return;
	uv_read_stop(&c->u.s);
	c->reading = false;
	c->paused.resume = conn_resume;
	gw_ingest_pause(c->sv->o.ingest, &c->paused);
}

static void on_connection(uv_stream_t *srv, int status)
{
	struct gw_server *sv = srv->data;
	const struct gw_server_opts *o = &sv->o;
	if (status < 0) {
		gw_log_peer(GW_LOG_WARN, "accept: %s", uv_strerror(status));
		return;
	}
	bool is_unix = srv == (uv_stream_t *)&sv->unix_srv;
	struct conn *c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->sv = sv;
	c->t = is_unix ? GW_TR_UNIX : GW_TR_TCP;
	c->id = ++sv->next_id;
	c->need_auth = !is_unix && gw_auth_enabled(o->auth);
	gw_ingest_src_init(&c->src, o->ingest, c->t, 0);
	c->src.on_reject = answer_error;
	c->src.data = c;
	if (is_unix)
		uv_pipe_init(o->loop, &c->u.pipe, 0);
	else
		uv_tcp_init(o->loop, &c->u.tcp);
	if (uv_accept(srv, &c->u.s) < 0) {
		uv_close(&c->u.h, on_close_conn);
		return;
	}
	int k = c->t == GW_TR_TCP;
	c->active_ms = gw_mono_ms();
	link_front(&sv->conns[k], c);
	sv->nconns[k]++;
	gw_ingest_count_connection(o->ingest);
	if (sv->nconns[k] > o->cfg->max_connections && !make_room(sv, k)) {
		snprintf(c->peer, sizeof(c->peer), "%s", is_unix ? "unix" : "tcp");
		char msg[160];
		snprintf(msg, sizeof(msg), "too many %s connections (limits.max_connections = %zu), "
		         "none idle long enough to close; try again later",
		         gw_transport_name(c->t), o->cfg->max_connections);
		refuse(c, "too_many_connections", msg);
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
	uv_read_start(&c->u.s, gw_ingest_alloc_slab, on_read);
}

/* ---- idle connections ------------------------------------------------------------ */

/* Transport k is full: close its least recently active connection if it
 * has been idle for limits.stream_evict_idle_ms, so that a flood of idle
 * connections cannot lock out a job that has something to send.  Returns
 * whether there is room now. */
static bool make_room(struct gw_server *sv, int k)
{
	struct conn *old = sv->conns[k].prev;
	if (old == &sv->conns[k] || old->closing)
		return false;
	if (gw_mono_ms() - old->active_ms < sv->o.cfg->stream_evict_idle_ms)
		return false;
	refuse(old, "idle_evicted", "closed after being idle while the transport was full; "
	                            "reconnect to send more");
	return true;
}

/* Every second: close connections idle longer than limits.stream_idle_timeout_ms
 * (oldest first; the lists are ordered by activity), and those whose
 * unfinished line began more than limits.stream_line_timeout_ms ago (but
 * for a connection paused by back-pressure: it is not read, so its line
 * cannot end). */
static void on_sweep(uv_timer_t *t)
{
	struct gw_server *sv = t->data;
	uint64_t now = gw_mono_ms();
	for (int k = 0; k < 2; k++) {
		for (struct conn *c = sv->conns[k].next, *nx; c != &sv->conns[k]; c = nx) {
			nx = c->next;
			if (c->partial && c->reading && !c->closing &&
			    now - c->line_ms >= sv->o.cfg->stream_line_timeout_ms)
				refuse(c, "line_timeout", "closed: a line was begun more than "
				       "limits.stream_line_timeout_ms ago and not finished");
		}
		struct conn *c;
		while ((c = sv->conns[k].prev) != &sv->conns[k] && !c->closing) {
			if (now - c->active_ms < sv->o.cfg->stream_idle_timeout_ms)
				break;
			refuse(c, "idle_timeout", "closed after limits.stream_idle_timeout_ms without data; "
			                          "reconnect to send more");
		}
	}
}

/* ---- UDP ------------------------------------------------------------------------ */

static void dgram_reject(struct gw_ingest_src *s, uint64_t lineno, const struct gw_wire_err *e)
{
	if (s->rejected == 1)
		gw_log_debug("udp datagram line %" PRIu64 ": %s", lineno, e->msg);
}

static void on_udp_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	struct gw_server *sv = h->data;
	buf->base = sv->udp_buf;
	buf->len = 65536;
}

static void on_udp(uv_udp_t *u, ssize_t nread, const uv_buf_t *buf,
                   const struct sockaddr *addr, unsigned flags)
{
	struct gw_server *sv = u->data;
	const struct gw_server_opts *o = &sv->o;
	if (nread <= 0 || !addr)
		return;
	if (flags & UV_UDP_PARTIAL) {
		gw_ingest_count_reject(o->ingest, GW_TR_UDP, GW_REJ_TOO_LONG);
		return;
	}
	if (gw_ingest_congested(o->ingest)) {
		gw_ingest_count_udp_dropped(o->ingest);
		return;
	}
	/* every datagram is a whole number of lines; the last needs no newline */
	struct gw_ingest_src src;
	gw_ingest_src_init(&src, o->ingest, GW_TR_UDP, 0);
	src.eof_ends_line = true;
	src.on_reject = dgram_reject;
	const char *p = buf->base;
	size_t n = (size_t)nread;
	if (gw_auth_enabled(o->auth)) {
		/* with tokens configured, each datagram starts with its auth line */
		const char *nl = memchr(p, '\n', n);
		char why[128];
		src.token = nl ? gw_auth_line(o->auth, p, (size_t)(nl - p), why, sizeof(why)) : NULL;
		if (!src.token) {
			gw_ingest_count_reject(o->ingest, GW_TR_UDP, GW_REJ_UNAUTHORIZED);
			gw_ingest_src_deinit(&src);
			return;
		}
		src.lines.lineno = 1;
		n -= (size_t)(nl + 1 - p);
		p = nl + 1;
	}
	gw_ingest_src_feed(&src, p, n);
	gw_ingest_src_finish(&src);
	gw_ingest_src_deinit(&src);
}

/* ---- start / stop ------------------------------------------------------------------- */

int gw_server_start(const struct gw_server_opts *o, struct gw_server **out, char *err,
                    size_t errlen)
{
	struct gw_server *sv = *out = calloc(1, sizeof(*sv));
	if (!sv)
		return gw_errf(err, errlen, -ENOMEM, "out of memory");
	sv->o = *o;
	uv_loop_t *loop = o->loop;
	for (int k = 0; k < 2; k++)
		sv->conns[k].next = sv->conns[k].prev = &sv->conns[k];
	uv_timer_init(loop, &sv->sweep);
	sv->sweep.data = sv;
	sv->sweep_on = true;
	if (o->cfg->stream_idle_timeout_ms)
		uv_timer_start(&sv->sweep, on_sweep, 1000, 1000);
	const struct gw_cfg *c = o->cfg;
	int rc;
	int fd = gw__stream_activated_socket();
	if (fd >= 0) {
		/* systemd made the socket (gradwatchd@.socket: its group and mode) */
		uv_pipe_init(loop, &sv->unix_srv, 0);
		sv->unix_srv.data = sv;
		sv->unix_on = true;
		sv->unix_activated = true;
		if ((rc = uv_pipe_open(&sv->unix_srv, fd)) < 0 ||
		    (rc = uv_listen((uv_stream_t *)&sv->unix_srv, 256, on_connection)) < 0)
			return gw_errf(err, errlen, rc, "the unix socket systemd passed: %s", uv_strerror(rc));
		gw_log_info("listening on the unix socket systemd passed (NDJSON)");
	} else if (c->socket_path && *c->socket_path) {
		uv_pipe_init(loop, &sv->unix_srv, 0);
		sv->unix_srv.data = sv;
		sv->unix_on = true;
		if ((rc = gw__stream_remove_stale_socket(c->socket_path, err, errlen)) < 0)
			return rc;
		int ufd = gw__stream_bind_unix(c->socket_path);
		if ((rc = ufd) < 0 || (rc = uv_pipe_open(&sv->unix_srv, ufd)) < 0 ||
		    (rc = uv_listen((uv_stream_t *)&sv->unix_srv, 256, on_connection)) < 0) {
			if (ufd >= 0 && uv_fileno((uv_handle_t *)&sv->unix_srv, &(uv_os_fd_t){0}) < 0)
				close(ufd);   /* not the handle's yet */
			snprintf(err, errlen, "unix socket %s: %s", c->socket_path, uv_strerror(rc));
			return rc;
		}
		struct stat st;
		if (lstat(c->socket_path, &st) == 0) {
			sv->unix_bound = true;
			sv->unix_dev = st.st_dev;
			sv->unix_ino = st.st_ino;
		}
		chmod(c->socket_path, c->socket_mode);
		gw_log_info("listening on unix:%s (NDJSON)", c->socket_path);
	}
	struct sockaddr_storage ss;
	if (c->tcp.enabled) {
		uv_tcp_init(loop, &sv->tcp_srv);
		sv->tcp_srv.data = sv;
		sv->tcp_on = true;
		if ((rc = gw_cfg_sockaddr(&c->tcp, &ss)) < 0 ||
		    (rc = uv_tcp_bind(&sv->tcp_srv, (struct sockaddr *)&ss, 0)) < 0 ||
		    (rc = uv_listen((uv_stream_t *)&sv->tcp_srv, 256, on_connection)) < 0) {
			char hint[200];
			snprintf(err, errlen, "tcp %s:%d: %s%s", c->tcp.host, c->tcp.port, uv_strerror(rc),
			         gw_cfg_listen_hint(rc, "--tcp", hint, sizeof(hint)));
			return rc;
		}
		gw_log_info("listening on tcp:%s:%d (NDJSON)", c->tcp.host, c->tcp.port);
	}
	if (c->udp.enabled) {
		sv->udp_buf = malloc(65536);
		if (!sv->udp_buf)
			return gw_errf(err, errlen, -ENOMEM, "out of memory");
		uv_udp_init(loop, &sv->udp);
		sv->udp.data = sv;
		sv->udp_on = true;
		if ((rc = gw_cfg_sockaddr(&c->udp, &ss)) < 0 ||
		    (rc = uv_udp_bind(&sv->udp, (struct sockaddr *)&ss, 0)) < 0 ||
		    (rc = uv_udp_recv_start(&sv->udp, on_udp_alloc, on_udp)) < 0) {
			char hint[200];
			snprintf(err, errlen, "udp %s:%d: %s%s", c->udp.host, c->udp.port, uv_strerror(rc),
			         gw_cfg_listen_hint(rc, "--udp", hint, sizeof(hint)));
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
	struct gw_server *sv = h->data;
	free(sv->udp_buf);
	sv->udp_buf = NULL;
}

void gw_server_stop(struct gw_server *sv)
{
	if (!sv)
		return;
	if (sv->unix_on && !uv_is_closing((uv_handle_t *)&sv->unix_srv)) {
		uv_close((uv_handle_t *)&sv->unix_srv, NULL);
		/* only the file we made: if it was removed and another daemon
		 * bound the path since, the path is that one's now */
		struct stat st;
		if (sv->unix_bound && lstat(sv->o.cfg->socket_path, &st) == 0 &&
		    st.st_dev == sv->unix_dev && st.st_ino == sv->unix_ino)
			unlink(sv->o.cfg->socket_path);
		else if (sv->unix_bound)
			gw_log_info("unix:%s is no longer the socket this daemon made; leaving it",
			            sv->o.cfg->socket_path);
	}
	if (sv->tcp_on && !uv_is_closing((uv_handle_t *)&sv->tcp_srv))
		uv_close((uv_handle_t *)&sv->tcp_srv, NULL);
	if (sv->udp_on && !uv_is_closing((uv_handle_t *)&sv->udp))
		uv_close((uv_handle_t *)&sv->udp, on_close_free_buf);
	if (sv->sweep_on && !uv_is_closing((uv_handle_t *)&sv->sweep))
		uv_close((uv_handle_t *)&sv->sweep, NULL);
	for (int k = 0; k < 2; k++)
		while (sv->conns[k].next != &sv->conns[k])
			conn_close(sv->conns[k].next);
}

void gw_server_free(struct gw_server *sv)
{
	free(sv);
}
