/*
 * http_server: the HTTP server (see http.h): the listener and its
 * connections' limits (limits.max_connections plus the reserve for
 * /healthz and /metrics; beyond both, a 503 written at once), the route
 * table, and the server's start, drain, stop and free.  A connection's
 * life is http.c's.
 */
#include "http_impl.h"

#include "config.h"
#include "fault.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gw_http_route(struct gw_http *h, const struct gw_http_route *r)
{
	if (!h || h->nroutes >= MAX_ROUTES)
		return -ENOSPC;
	h->routes[h->nroutes] = *r;
	/* a query route answers from the database once what came before it
	 * is in (http_answer.c) */
	if (!r->handler && r->query)
		h->routes[h->nroutes].handler = gw__http_answer_query;
	h->nroutes++;
	return 0;
}

static void on_connection(uv_stream_t *srv, int status)
{
	struct gw_http *h = srv->data;
	if (status < 0)
		return;
	struct gw_http_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->srv = h;
	uv_tcp_init(h->o.loop, &c->tcp);
	uv_timer_init(h->o.loop, &c->timer);
	c->tcp.data = c;
	c->timer.data = c;
	c->handles_open = 2;
	c->next = h->conns.next;
	c->prev = &h->conns;
	h->conns.next->prev = c;
	h->conns.next = c;
	h->nconns++;
	c->armed = -1;
	if (uv_accept(srv, (uv_stream_t *)&c->tcp) < 0) {
		gw__http_conn_close(c);
		return;
	}
	const struct gw_cfg *cfg = h->o.cfg;
	if (h->nconns > cfg->max_connections + cfg->http_reserved_connections) {
		/* refused loudly: the client reads why instead of a reset */
		static const char body[] = "{\"error\":\"too many HTTP connections; retry later\"}\n";
		char head[256];
		int n = snprintf(head, sizeof(head), "HTTP/1.1 503 Service Unavailable\r\n"
		                 "Content-Type: application/json\r\nRetry-After: 1\r\n"
		                 "Connection: close\r\nContent-Length: %zu\r\n\r\n", sizeof(body) - 1);
		gw_log_peer(GW_LOG_WARN, "http: %zu connections (limits.max_connections %zu + %zu reserved); refusing one",
		            h->nconns - 1, cfg->max_connections, cfg->http_reserved_connections);
		c->state = H_CLOSING;
		gw__http_send_raw(c, head, (size_t)n, body, sizeof(body) - 1, true, false);
		return;
	}
	c->reserve = h->nconns > cfg->max_connections;
	uv_tcp_nodelay(&c->tcp, 1);
	http_parser_init(&c->parser, HTTP_REQUEST);
	c->parser.data = c;
	c->state = H_HEADERS;
	gw__http_arm_timer(c);
	gw__http_start_reading(c);
}

int gw_http_start(const struct gw_http_opts *o, struct gw_http **out, char *err, size_t errlen)
{
	struct gw_http *h = calloc(1, sizeof(*h));
	*out = h;
	if (!h)
		return gw_errf(err, errlen, -ENOMEM, "out of memory");
	h->o = *o;
	h->conns.next = h->conns.prev = &h->conns;
	h->hold_reads = gw_fault_hold_reads();
	gw__http_parser_settings(&h->settings);
	const struct gw_listen *l = &o->cfg->http;
	if (!l->enabled)
		return 0;
	struct sockaddr_storage ss;
	int rc;
	uv_tcp_init(o->loop, &h->srv);
	h->srv.data = h;
	h->on = true;
	if ((rc = gw_cfg_sockaddr(l, &ss)) < 0 ||
	    (rc = uv_tcp_bind(&h->srv, (struct sockaddr *)&ss, 0)) < 0 ||
	    (rc = uv_listen((uv_stream_t *)&h->srv, 256, on_connection)) < 0) {
		char hint[200];
		return gw_errf(err, errlen, rc, "http %s:%d: %s%s", l->host, l->port, uv_strerror(rc),
		               gw_cfg_listen_hint(rc, "--http", hint, sizeof(hint)));
	}
	gw_log_info("listening on http://%s:%d", l->host, l->port);
	return 0;
}

void gw_http_drain(struct gw_http *h)
{
	if (!h)
		return;
	if (h->on && !uv_is_closing((uv_handle_t *)&h->srv))
		uv_close((uv_handle_t *)&h->srv, NULL);
	h->on = false;
	/* idle keep-alive connections go now; busy ones close after answering */
	struct gw_http_conn *c = h->conns.next;
	while (c != &h->conns) {
		struct gw_http_conn *next = c->next;
		if (c->state == H_IDLE || c->state == H_HEADERS)
			gw__http_conn_close(c);
		c = next;
	}
}

size_t gw_http_busy(const struct gw_http *h)
{
	size_t n = 0;
	if (!h)
		return 0;
	for (const struct gw_http_conn *c = h->conns.next; c != &h->conns; c = c->next)
		n += c->state == H_RESPOND || c->state == H_CLOSING || c->state == H_BODY;
	return n;
}

void gw_http_stop(struct gw_http *h)
{
	if (!h)
		return;
	gw_http_drain(h);
	while (h->conns.next != &h->conns)
		gw__http_conn_close(h->conns.next);
}

void gw_http_free(struct gw_http *h)
{
	free(h);
}

