/*
 * http_parse: the parser's callbacks for a connection (see http_impl.h):
 * the URL and the headers kept (Authorization, Idempotency-Key, Expect,
 * the codings), the refusals before the body (a URL or header too long,
 * whitespace in a header name, a header twice, no route, over
 * limits.max_connections, no or a wrong token, a body coding the daemon
 * does not apply, a bad Idempotency-Key, a Content-Length over
 * limits.max_body_bytes), finding the route (a 405 lists the path's
 * methods in Allow), and the body, streamed to its route or kept.
 */
#include "http_impl.h"
#include "http_url.h"

#include "config.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---- routing ------------------------------------------------------------------------ */

/* Add a route's method to c->allow (once; HEAD after GET). */
static void allow_add(struct gw_http_conn *c, const char *method)
{
	size_t n = strlen(c->allow), ml = strlen(method);
	for (const char *p = c->allow; (p = strstr(p, method)) != NULL; p += ml)
		if ((p == c->allow || p[-1] == ' ') && (p[ml] == ',' || p[ml] == '\0'))
			return;
	snprintf(c->allow + n, sizeof(c->allow) - n, "%s%s%s", n ? ", " : "", method,
	         strcmp(method, "GET") == 0 ? ", HEAD" : "");
}

/* Find the route of the request in c->url; fills c->route and c->req.
 * HEAD takes the GET routes (c->head: the answer has no body).
 * Returns 0, or the status to answer (400 bad path with c->arg_why, 404,
 * 405 with c->allow). */
static int find_route(struct gw_http_conn *c)
{
	const char *method = http_method_str((enum http_method)c->parser.method);
	const char *url = c->url;
	c->head = c->parser.method == HTTP_HEAD;
	c->allow[0] = '\0';
	const char *q = strchr(url, '?');
	size_t plen = q ? (size_t)(q - url) : c->url_len;
	bool path_found = false;
	c->req = (struct gw_http_req){
		.method = method,
		.path = url,
		.path_len = plen,
		.query = q ? q + 1 : "",
		.query_len = q ? c->url_len - plen - 1 : 0,
		.body = "",
		.db_path = c->srv->o.cfg->db_path,
	};
	for (size_t i = 0; i < c->srv->nroutes; i++) {
		const struct gw_http_route *r = &c->srv->routes[i];
		size_t rl = strlen(r->path);
		c->arg[0] = '\0';
		if (!r->prefix) {
			if (plen != rl || memcmp(url, r->path, rl) != 0)
				continue;
		} else {
			/* prefix + one percent-encoded run name (no raw '/'), then
			 * the route's suffix if it has one */
			if (plen <= rl || memcmp(url, r->path, rl) != 0)
				continue;
			const char *a = url + rl;
			size_t al = plen - rl;
			size_t sl = r->suffix ? strlen(r->suffix) : 0;
			if (sl && (al <= sl || memcmp(a + al - sl, r->suffix, sl) != 0))
				continue;
			al -= sl;
			if (memchr(a, '/', al))
				continue;
			/* the argument is a run name (or an id): the same rule as
			 * in the wire format */
			c->arg_name = r->arg_name ? r->arg_name : "run name";
			int an = gw_http_pct_decode(a, al, c->arg, sizeof(c->arg), false);
			if (an < 0) {
				snprintf(c->arg_why, sizeof(c->arg_why), "bad percent-encoding (a %%XX "
				         "that is not two hex digits, or %%00) or longer than %d bytes",
				         GW_WIRE_RUN_MAX);
				return 400;
			}
			if (gw_wire_check_run(c->arg, (size_t)an, c->arg_why, sizeof(c->arg_why)) < 0)
				return 400;
		}
		path_found = true;
		allow_add(c, r->method);
		if (strcmp(method, r->method) != 0 && !(c->head && strcmp(r->method, "GET") == 0))
			continue;
		c->route = r;
		c->req.arg = c->arg[0] ? c->arg : NULL;
		c->req.data = r->data;
		return 0;
	}
	return path_found ? 405 : 404;
}

/* The request has no route: answer (and close, its body is not read). */
static void route_error(struct gw_http_conn *c, int status)
{
	const struct gw_http_req *r = &c->req;
	if (status == 400)
		gw__http_respond_fatal(c, 400, "bad %s in the path (percent-encoded UTF-8 of 1 to %d bytes "
		              "without control characters): %s", c->arg_name, GW_WIRE_RUN_MAX,
		              c->arg_why);
	else if (status == 405)
		gw__http_respond_fatal(c, 405, "method %s not allowed on %.*s", r->method, (int)r->path_len, r->path);
	else
		gw__http_respond_fatal(c, 404, "no such endpoint: %.*s", (int)r->path_len, r->path);
}

/* ---- the callbacks --------------------------------------------------------------- */

static int cb_message_begin(http_parser *p)
{
	struct gw_http_conn *c = p->data;
	c->state = H_HEADERS;
	c->url_len = 0;
	c->url_too_long = false;
	c->hfield_len = 0;
	c->expect_continue = false;
	c->authz_len = c->idem_len = 0;
	c->idem_seen = false;
	c->authz[0] = c->idem[0] = '\0';
	c->inm_len = 0;
	c->inm[0] = c->etag[0] = '\0';
	c->coding[0] = '\0';
	c->cenc_len = c->tenc_len = 0;
	c->dup_header = NULL;
	c->header_too_long = false;
	c->ws_header = false;
	c->ws_name[0] = '\0';
	c->rejected_early = false;
	c->head = false;
	c->route = NULL;
	c->body_over = false;
	gw_buf_free(&c->body);
	return 0;
}

static int cb_url(http_parser *p, const char *at, size_t len)
{
	struct gw_http_conn *c = p->data;
	if (c->url_len + len > URL_MAX) {
		c->url_too_long = true;
		return 0;
	}
	memcpy(c->url + c->url_len, at, len);
	c->url_len += len;
	c->url[c->url_len] = '\0';
	return 0;
}

static int cb_header_field(http_parser *p, const char *at, size_t len)
{
	struct gw_http_conn *c = p->data;
	if (c->hfield_len == SIZE_MAX)
		c->hfield_len = 0;
	c->hvalue_new = true;
	/* http-parser takes spaces in a name ("Content-Length : 5" as the
	 * length); RFC 9112 5.1 says refuse it with 400 (a proxy in front may
	 * have read the header otherwise) */
	if (!c->ws_header && (memchr(at, ' ', len) || memchr(at, '\t', len)))
		c->ws_header = true;
	if (c->hfield_len + len < sizeof(c->hfield)) {
		memcpy(c->hfield + c->hfield_len, at, len);
		c->hfield_len += len;
		c->hfield[c->hfield_len] = '\0';
	} else {
		/* a long name in pieces is none of ours: its first piece alone
		 * ("Authorization" of "Authorization-Something-Long") must not
		 * match */
		c->hfield[0] = '\0';
		c->hfield_len = sizeof(c->hfield);
	}
	c->hwant = strcasecmp(c->hfield, "expect") == 0 ? H_EXPECT
	         : strcasecmp(c->hfield, "authorization") == 0 ? H_AUTH
	         : strcasecmp(c->hfield, "idempotency-key") == 0 ? H_IDEM
	         : strcasecmp(c->hfield, "content-encoding") == 0 ||
	           strcasecmp(c->hfield, "transfer-encoding") == 0 ? H_CODING
	         : strcasecmp(c->hfield, "if-none-match") == 0 ? H_INM : H_OTHER;
	return 0;
}

/* The codings of a Content-Encoding or Transfer-Encoding value (its
 * headers joined by commas): remember the first one the body would need
 * and the daemon does not apply (anything but identity, and chunked for
 * Transfer-Encoding, which the parser handles). */
static void note_coding(struct gw_http_conn *c, const char *at, size_t len, bool te)
{
	for (size_t i = 0; i < len && !c->coding[0];) {
		while (i < len && (at[i] == ' ' || at[i] == '\t' || at[i] == ','))
			i++;
		size_t b = i;
		while (i < len && at[i] != ',' && at[i] != ' ' && at[i] != '\t' && at[i] != ';')
			i++;
		size_t n = i - b;
		while (i < len && at[i] != ',')   /* parameters */
			i++;
		if (!n || (n == 8 && !strncasecmp(at + b, "identity", 8)) ||
		    (te && n == 7 && !strncasecmp(at + b, "chunked", 7)))
			continue;
		snprintf(c->coding, sizeof(c->coding), "%.*s", (int)GW_MIN(n, sizeof(c->coding) - 1),
		         at + b);
		c->coding_hdr = te ? "Transfer-Encoding" : "Content-Encoding";
	}
}

/* Collect a coding header's value (it may come in pieces); one too long
 * for the buffer is a coding we do not apply either. */
static void keep_coding(struct gw_http_conn *c, const char *at, size_t len)
{
	bool te = c->hfield[0] == 't' || c->hfield[0] == 'T';
	char *buf = te ? c->tenc : c->cenc;
	size_t *n = te ? &c->tenc_len : &c->cenc_len;
	size_t cap = te ? sizeof(c->tenc) : sizeof(c->cenc);
	if (c->hvalue_new && *n && *n + 1 < cap)
		buf[(*n)++] = ',';
	c->hvalue_new = false;
	if (*n + len >= cap) {
		gw_strlcpy(c->coding, "(a value too long to read)", sizeof(c->coding));
		c->coding_hdr = te ? "Transfer-Encoding" : "Content-Encoding";
		return;
	}
	memcpy(buf + *n, at, len);
	*n += len;
}

/* Collect If-None-Match (it may come in pieces, or twice: joined by
 * commas, as RFC 9110 5.3 allows); a value too long for the buffer is
 * dropped whole: the request is then answered in full, never wrongly 304. */
static void keep_inm(struct gw_http_conn *c, const char *at, size_t len)
{
	if (c->inm_len == SIZE_MAX)
		return;
	if (c->hvalue_new && c->inm_len && c->inm_len + 1 < sizeof(c->inm))
		c->inm[c->inm_len++] = ',';
	if (c->inm_len + len >= sizeof(c->inm)) {
		c->inm_len = SIZE_MAX;
		c->inm[0] = '\0';
		return;
	}
	memcpy(c->inm + c->inm_len, at, len);
	c->inm_len += len;
	c->inm[c->inm_len] = '\0';
}

/* Append a header value (it may come in pieces) to a kept header. */
static void keep(struct gw_http_conn *c, char *buf, size_t cap, size_t *len, const char *at,
                 size_t n)
{
	if (*len + n >= cap) {
		c->header_too_long = true;
		return;
	}
	memcpy(buf + *len, at, n);
	*len += n;
	buf[*len] = '\0';
}

static int cb_header_value(http_parser *p, const char *at, size_t len)
{
	struct gw_http_conn *c = p->data;
	if (c->ws_header && !c->ws_name[0])
		gw_strlcpy(c->ws_name, c->hfield, sizeof(c->ws_name));
	if (c->hwant == H_EXPECT && len >= 12 && strncasecmp(at, "100-continue", 12) == 0)
		c->expect_continue = true;
	else if ((c->hwant == H_AUTH || c->hwant == H_IDEM) && c->hvalue_new &&
	         (c->hwant == H_AUTH ? c->authz_len > 0 : c->idem_seen))
		c->dup_header = c->hwant == H_AUTH ? "Authorization" : "Idempotency-Key";
	else if (c->hwant == H_AUTH)
		keep(c, c->authz, sizeof(c->authz), &c->authz_len, at, len);
	else if (c->hwant == H_IDEM) {
		c->idem_seen = true;
		keep(c, c->idem, sizeof(c->idem), &c->idem_len, at, len);
	} else if (c->hwant == H_CODING) {
		keep_coding(c, at, len);
	} else if (c->hwant == H_INM) {
		keep_inm(c, at, len);
	}
	c->hvalue_new = false;
	c->hfield_len = SIZE_MAX; /* next field starts fresh */
	return 0;
}

/* The caller's token for the route's scope: fills c->req.token, or answers
 * 401/403 and returns -1. */
static int authorize(struct gw_http_conn *c)
{
	const char *tok = NULL;
	size_t len = 0;
	if (c->authz_len > 7 && strncasecmp(c->authz, "Bearer ", 7) == 0) {
		tok = c->authz + 7;
		len = c->authz_len - 7;
		while (len && (*tok == ' '))
			tok++, len--;
	}
	int status;
	c->req.token = gw_auth_check(c->srv->o.auth, tok, len, c->route->scope, &status);
	if (c->req.token)
		return 0;
	if (status == 401 && tok && len)
		gw__http_respond_fatal(c, 401, "the bearer token is not a known token (it is compared whole, "
		              "with nothing after it)");
	else if (status == 401)
		gw__http_respond_fatal(c, 401, "a bearer token is required (Authorization: Bearer TOKEN)");
	else
		gw__http_respond_fatal(c, 403, "this token may not %s", c->route->scope == GW_SCOPE_INGEST
		                                              ? "write" : "read");
	return -1;
}

/* Valid Idempotency-Key: 1 to IDEM_MAX printable ASCII characters. */
static bool idem_ok(const char *k, size_t n)
{
	if (!n || n > IDEM_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (k[i] < 0x21 || k[i] > 0x7e)
			return false;
	return true;
}

/* Refuse the request before its body: answer, then read and drop the body
 * the client may still send, and close. */
static int refuse_early(struct gw_http_conn *c)
{
	c->rejected_early = c->draining = true;
	return -1;
}

static int cb_headers_complete(http_parser *p)
{
	struct gw_http_conn *c = p->data;
	const struct gw_cfg *cfg = c->srv->o.cfg;
	c->keep_alive = http_should_keep_alive(p);
	c->head = p->method == HTTP_HEAD;   /* every answer to it, refusals too, has no body */
	if (c->url_too_long) {
		gw__http_respond_fatal(c, 431, "the URL is longer than %d bytes", URL_MAX);
		return refuse_early(c);
	}
	if (c->header_too_long) {
		gw__http_respond_fatal(c, 431, "the Authorization or Idempotency-Key header is too long");
		return refuse_early(c);
	}
	if (c->ws_header) {
		gw__http_respond_fatal(c, 400, "whitespace in a header name or before its colon%s%s%s "
		              "(RFC 9112 5.1)", c->ws_name[0] ? " ('" : "", c->ws_name,
		              c->ws_name[0] ? "')" : "");
		return refuse_early(c);
	}
	if (c->dup_header) {
		gw__http_respond_fatal(c, 400, "the %s header appears twice (it is read once)", c->dup_header);
		return refuse_early(c);
	}
	int st = find_route(c);
	if (st) {
		route_error(c, st);
		return refuse_early(c);
	}
	if (c->reserve && !(strcmp(c->route->method, "GET") == 0 &&
	                    ((c->req.path_len == 8 && !memcmp(c->req.path, "/healthz", 8)) ||
	                     (c->req.path_len == 8 && !memcmp(c->req.path, "/metrics", 8))))) {
		gw__http_respond_fatal(c, 503, "too many HTTP connections (limits.max_connections = %zu); "
		              "retry later", c->srv->o.cfg->max_connections);
		return refuse_early(c);
	}
	if (authorize(c) < 0)
		return refuse_early(c);
	note_coding(c, c->tenc, c->tenc_len, true);
	note_coding(c, c->cenc, c->cenc_len, false);
	if (c->coding[0]) {
		/* read as it is, a compressed body is only malformed lines */
		bool te = c->coding_hdr[0] == 'T';
		gw__http_respond_fatal(c, te ? 501 : 415, "%s %s is not supported: send the body as it is%s",
		              c->coding_hdr, c->coding, te ? " (chunked is fine)" : " (identity)");
		return refuse_early(c);
	}
	if (c->idem_seen && !idem_ok(c->idem, c->idem_len)) {
		gw__http_respond_fatal(c, 400, "Idempotency-Key is 1 to %d printable ASCII characters", IDEM_MAX);
		return refuse_early(c);
	}
	c->req.idempotency_key = c->idem_len ? c->idem : NULL;
	/* a body read to its end (streamed, or dropped past body_max) is
	 * refused before it when Content-Length says it is too large */
	if ((c->route->body || c->route->body_max) && p->content_length != ULLONG_MAX &&
	    p->content_length > cfg->max_body) {
		gw__http_respond_fatal(c, 413, "the body has %llu bytes; limits.max_body_bytes is %zu",
		              (unsigned long long)p->content_length, cfg->max_body);
		return refuse_early(c);
	}
	if (c->route->body) {
		/* begin refuses by answering: then the body is not read and
		 * the connection closes after that answer */
		bool keep = c->keep_alive;
		c->keep_alive = false;
		c->streaming = true;
		if (c->route->body->begin(c, &c->req) < 0) {
			gw__http_end_stream(c, false);
			return refuse_early(c);
		}
		c->keep_alive = keep;
	}
	if (c->expect_continue) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		gw__http_send_raw(c, cont, sizeof(cont) - 1, NULL, 0, false, false);
	}
	c->state = H_BODY;
	return 0;
}

static int cb_body(http_parser *p, const char *at, size_t len)
{
	struct gw_http_conn *c = p->data;
	if (c->streaming)
		return c->route->body->data(c, at, len) < 0 ? -1 : 0;
	if (c->body_over)
		return 0;
	if (c->route->body_max && c->body.len + len > c->route->body_max) {
		c->body_over = true;   /* read to its end and dropped; the handler answers */
		return 0;
	}
	if (c->body.len + len > BODY_KEEP) {
		gw__http_respond_fatal(c, 413, "the body is larger than %d bytes", BODY_KEEP);
		return refuse_early(c);
	}
	return gw_buf_add(&c->body, at, len) < 0 ? -1 : 0;
}

static int cb_message_complete(http_parser *p)
{
	struct gw_http_conn *c = p->data;
	c->state = H_RESPOND;
	c->armed = -1;
	uv_timer_stop(&c->timer);
	http_parser_pause(p, 1);
	return 0;
}

void gw__http_parser_settings(http_parser_settings *s)
{
	*s = (http_parser_settings){
		.on_message_begin = cb_message_begin,
		.on_url = cb_url,
		.on_header_field = cb_header_field,
		.on_header_value = cb_header_value,
		.on_headers_complete = cb_headers_complete,
		.on_body = cb_body,
		.on_message_complete = cb_message_complete,
	};
}
