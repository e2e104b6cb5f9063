/*
 * Fuzz target: gradwatchd's HTTP request path, end to end: http.c's
 * parser, limits and routing, bearer tokens (auth.c), and the routes of
 * api.c, metrics.c and web.c -- ingest through the record path into a real store
 * (idempotency keys too), the reads on the thread pool (chart data with
 * its query parameters), the pages, and the resume gate with arbitrary
 * bodies and percent-encoded run names.
 *
 * The target runs the daemon's core in process, as main() wires it: a
 * libuv loop, a store on a temporary directory (its writer thread, commits
 * every millisecond), the ingest (engine, wire parser), the HTTP server on
 * a loopback port with tokens configured.  Each input is sent as the raw
 * bytes of one client connection (requests may be pipelined); the client
 * then half-closes and reads until the server closes, while the loop runs.
 * What must hold (a broken invariant traps):
 *
 *   - no crash, leak or undefined behaviour (the sanitizers), no hang: the
 *     server answers and closes within a deadline;
 *   - every response is well-formed HTTP/1.1 with a Content-Length, and a
 *     JSON body (Content-Type application/json) parses; the answer to a
 *     HEAD request (found by reading the input with the same parser) has
 *     no body;
 *   - an ingest answer lists as many errors as it rejected lines (up to
 *     20): none goes missing;
 *   - no 500: an internal error on some input is a bug (501 answers a
 *     transfer coding the daemon does not apply, 503 and 507 are the
 *     storage's).
 *
 * GW_FUZZ_HTTP_SHOW=1 prints the responses (to see what a crash input got).
 * State (the database, the runs) carries over from input to input, as in a
 * daemon; runs are capped (limits.max_runs) so memory stays bounded.
 * Seeds: fuzz/corpus/http/ (tokens: see TOKENS below); dictionary:
 * fuzz/http.dict.
 *
 * fuzz-libs: -luv -lhttp_parser -lsqlite3 -lcurl -lcrypto -lpthread
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <http_parser.h>
#include <uv.h>

#include "ack.h"
#include "alerting.h"
#include "api.h"
#include "auth.h"
#include "config.h"
#include "fuzz.h"
#include "health.h"
#include "http.h"
#include "idem.h"
#include "ingest.h"
#include "log.h"
#include "metrics.h"
#include "outbox.h"
#include "outbox_db.h"
#include "store.h"
#include "util.h"
#include "web.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define DEADLINE_MS 15000       /* an answer later than this is a hang */
#define RESPONSE_MAX (4 << 20)  /* bytes of responses kept per input */
#define REPORTED_ERRORS 20      /* rejected lines an ingest answer lists (api.c) */

/* The tokens of the seeds: Authorization: Bearer <one of these>. */
#define TOKENS \
	"fuzz-ingest-token-0123456789\n" \
	"fuzz-team-a-token-0123456789 team-a-*\n"
#define READ_TOKENS "fuzz-read-token-0123456789\n"

static struct gw_cfg cfg;
static uv_loop_t loop;
/* the parts of the daemon the HTTP path reaches, wired as main.c does */
static struct {
	struct gw_auth *auth;
	struct gw_store *store;
	struct gw_outbox *outbox;
	struct gw_ingest *ingest;
	struct gw_idem idem;
	struct gw_http *http;
	struct gw_api_opts api;
	struct gw_health_opts health;
	struct gw_metrics_opts metrics;
	struct gw_ack_opts ack;
} d;

/* A loopback port nobody uses right now. */
static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		abort();
	close(fd);
	return ntohs(a.sin_port);
}

/* libFuzzer ignores LLVMFuzzerInitialize's result: fail loudly instead */
static int init_failed(const char *what, const char *err)
{
	fprintf(stderr, "fuzz_http: %s: %s\n", what, err);
	abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char err[512] = "";
	signal(SIGPIPE, SIG_IGN);
	gw_log_init(GW_LOG_CRIT, false);
	const char *dir = fuzz_tmpdir("http");
	fuzz_put_file("ingest.tokens", TOKENS);
	fuzz_put_file("read.tokens", READ_TOKENS);
	fuzz_track("gw.db");
	fuzz_track("gw.db-wal");
	fuzz_track("gw.db-shm");
	if (gw_cfg_defaults(&cfg) < 0 || gw_cfg_init_kernels(NULL, err, sizeof(err)) < 0)
		return init_failed("configuration", err);
	char db[600];
	snprintf(db, sizeof(db), "%s/gw.db", dir);
	gw_cfg_set_str(&cfg.db_path, db);
	gw_cfg_set_str(&cfg.socket_path, NULL);
	cfg.tcp.enabled = cfg.udp.enabled = false;
	cfg.commit_interval_ms = 1;
	cfg.sync_full = false;
	cfg.max_runs = 256;
	cfg.max_line = 4096;
	cfg.max_body = 32768;     /* so the 413 paths are in reach */
	cfg.auth = json_pack("{s:s, s:s}", "ingest_tokens_file", "ingest.tokens",
	                     "read_tokens_file", "read.tokens");
	setenv("CREDENTIALS_DIRECTORY", dir, 1);
	if (!cfg.auth || gw_cfg_validate(&cfg, err, sizeof(err)) < 0 ||
	    gw_auth_load(cfg.auth, &d.auth, err, sizeof(err)) < 0)
		return init_failed("configuration", err);
	uv_loop_init(&loop);
	static const struct gw_store_schema *const schemas[] = {&gw_outbox_schema, &gw_idem_schema};
	struct gw_store_opts so = {
		.path = cfg.db_path, .sync_full = false, .commit_interval_ms = 1,
		.commit_max_records = cfg.commit_max_records, .max_pending_bytes = cfg.max_pending_bytes,
		.schemas = schemas, .n_schemas = GW_ARRAY_SIZE(schemas),
	};
	if (gw_store_open(&so, &d.store, err, sizeof(err)) < 0 ||
	    gw_alerting_outbox(&loop, &cfg, d.store, &d.outbox, err, sizeof(err)) < 0 ||
	    gw_ingest_start(&(struct gw_ingest_opts){.loop = &loop, .cfg = &cfg, .store = d.store,
	                                            .outbox = d.outbox},
	                    &d.ingest, err, sizeof(err)) < 0 ||
	    gw_idem_init(&d.idem, cfg.db_path, cfg.idempotency_window_s, cfg.idempotency_max_keys,
	                 err, sizeof(err)) < 0)
		return init_failed("storage", err);
	struct gw_http_opts ho = {
		.loop = &loop, .cfg = &cfg, .ingest = d.ingest, .auth = d.auth,
	};
	int rc = -1;
	for (int attempt = 0; attempt < 20 && rc < 0; attempt++) {
		if (d.http) {
			/* a failed start may leave its listener open: stop, let the
			 * loop close it, then free */
			gw_http_stop(d.http);
			uv_run(&loop, UV_RUN_NOWAIT);
			gw_http_free(d.http);
		}
		d.http = NULL;
		cfg.http.port = free_port();
		rc = gw_http_start(&ho, &d.http, err, sizeof(err));
	}
	double started = gw_wall_now();
	d.api = (struct gw_api_opts){.cfg = &cfg, .ingest = d.ingest, .store = d.store,
	                             .idem = &d.idem};
	d.health = (struct gw_health_opts){.cfg = &cfg, .ingest = d.ingest, .store = d.store,
	                                   .outbox = d.outbox, .started = started};
	d.metrics = (struct gw_metrics_opts){.cfg = &cfg, .ingest = d.ingest, .store = d.store,
	                                     .outbox = d.outbox, .started = started};
	d.ack = (struct gw_ack_opts){.ingest = d.ingest, .outbox = d.outbox};
	if (rc < 0 || gw_api_start(d.http, &d.api, err, sizeof(err)) < 0 ||
	    gw_health_start(d.http, &d.health, err, sizeof(err)) < 0 ||
	    gw_metrics_start(d.http, &d.metrics, err, sizeof(err)) < 0 ||
	    gw_web_start(d.http, err, sizeof(err)) < 0 ||
	    gw_ack_start(d.http, &d.ack, err, sizeof(err)) < 0)
		return init_failed("http", err);
	return 0;
}

/* ---- one client connection ---------------------------------------------------------- */

struct client {
	uv_tcp_t tcp;
	uv_connect_t conn;
	uv_write_t wr;
	uv_shutdown_t sd;
	uv_timer_t deadline;
	uv_buf_t in;
	char *resp;
	size_t resp_len;
	int open_handles;
	bool done, timed_out;
};

static void on_client_closed(uv_handle_t *h)
{
	struct client *c = h->data;
	if (--c->open_handles == 0)
		c->done = true;
}

static void client_close(struct client *c)
{
	uv_timer_stop(&c->deadline);
	if (!uv_is_closing((uv_handle_t *)&c->tcp))
		uv_close((uv_handle_t *)&c->tcp, on_client_closed);
	if (!uv_is_closing((uv_handle_t *)&c->deadline))
		uv_close((uv_handle_t *)&c->deadline, on_client_closed);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	static char slab[65536];
	buf->base = slab;
	buf->len = sizeof(slab);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct client *c = s->data;
	if (n < 0) {
		client_close(c);
		return;
	}
	size_t keep = GW_MIN((size_t)n, RESPONSE_MAX - c->resp_len);
	if (keep) {
		memcpy(c->resp + c->resp_len, buf->base, keep);
		c->resp_len += keep;
	}
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
}

static void on_written(uv_write_t *req, int status)
{
	struct client *c = req->data;
	/* the request is all there: half-close, keep reading the answers (a
	 * failed write means the server closed first, which it may) */
	if (status == 0 && uv_shutdown(&c->sd, (uv_stream_t *)&c->tcp, on_shutdown) < 0)
		client_close(c);
}

static void on_connect(uv_connect_t *req, int status)
{
	struct client *c = req->data;
	if (status < 0)
		abort();    /* our own server on loopback: must accept */
	uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
	c->wr.data = c;
	if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, &c->in, 1, on_written) < 0)
		client_close(c);
}

static void on_deadline(uv_timer_t *t)
{
	struct client *c = t->data;
	c->timed_out = true;
	client_close(c);
}

/* ---- what came back ---------------------------------------------------------------------- */

static const char *find(const char *p, const char *end, const char *what)
{
	size_t n = strlen(what);
	for (; p + n <= end; p++)
		if (memcmp(p, what, n) == 0)
			return p;
	return NULL;
}

/* Which of the input's requests are HEAD (bit k: the k-th request), as the
 * server's parser reads them; the server answers them in that order. */
struct methods {
	uint64_t head;
	unsigned n;
};

static int cb_methods_begin(http_parser *p)
{
	return 0;
}

static int cb_methods_headers(http_parser *p)
{
	struct methods *m = p->data;
	if (m->n < 64 && p->method == HTTP_HEAD)
		m->head |= 1ull << m->n;
	m->n++;
	return 0;
}

static uint64_t head_requests(const uint8_t *data, size_t size)
{
	static http_parser_settings settings = {
		.on_message_begin = cb_methods_begin,
		.on_headers_complete = cb_methods_headers,
	};
	struct methods m = {0};
	http_parser p;
	http_parser_init(&p, HTTP_REQUEST);
	p.data = &m;
	http_parser_execute(&p, &settings, (const char *)data, size);
	return m.head;
}

/* Walk the responses: status line, headers with a Content-Length, body
 * (none for the answer to a HEAD: bit k of `head` for the k-th). */
static void check_responses(const char *p, size_t len, bool complete, uint64_t head)
{
	const char *end = p + len;
	unsigned k = 0;
	while (p < end) {
		const char *hend = find(p, end, "\r\n\r\n");
		if (!hend) {
			FUZZ_CHECK(!complete);   /* only a cut-off (RESPONSE_MAX) tail may be partial */
			return;
		}
		FUZZ_CHECK(end - p > 12 && memcmp(p, "HTTP/1.1 ", 9) == 0);
		int status = atoi(p + 9);
		FUZZ_CHECK(status >= 100 && status <= 599);
		/* an internal error is a bug; 503 and 507 are the storage's answers,
		 * 501 the one to a transfer coding the daemon does not apply */
		FUZZ_CHECK(status < 500 || status == 501 || status == 503 || status == 507);
		const char *body = hend + 4;
		if (status == 100) {
			p = body;
			continue;
		}
		long clen = -1;
		bool json = false;
		for (const char *h = find(p, hend, "\r\n"); h && h < hend; h = find(h + 2, hend + 2, "\r\n")) {
			if (!strncasecmp(h + 2, "Content-Length:", 15))
				clen = strtol(h + 17, NULL, 10);
			if (!strncasecmp(h + 2, "Content-Type: application/json", 30))
				json = true;
		}
		FUZZ_CHECK(clen >= 0);
		if (k < 64 && (head >> k & 1)) {
			k++;
			p = body;
			continue;
		}
		k++;
		if (body + clen > end) {
			FUZZ_CHECK(!complete);
			return;
		}
		if (json) {
			json_error_t je;
			json_t *j = json_loadb(body, (size_t)clen, 0, &je);
			FUZZ_CHECK(j != NULL);
			/* an ingest answer lists its first 20 rejected lines: an error
			 * that went missing is one the client never hears of */
			json_t *rej = json_object_get(j, "rejected"), *errs = json_object_get(j, "errors");
			if (json_is_integer(rej) && json_is_array(errs))
				FUZZ_CHECK(json_array_size(errs) ==
				      (size_t)GW_MIN(json_integer_value(rej), (json_int_t)REPORTED_ERRORS));
			json_decref(j);
		}
		p = body + clen;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	struct client c = {.in = uv_buf_init((char *)data, (unsigned)size)};
	c.resp = malloc(RESPONSE_MAX);
	if (!c.resp)
		return 0;
	uv_tcp_init(&loop, &c.tcp);
	uv_tcp_nodelay(&c.tcp, 1);
	uv_timer_init(&loop, &c.deadline);
	c.tcp.data = c.deadline.data = c.conn.data = &c;
	c.open_handles = 2;
	struct sockaddr_storage ss;
	gw_cfg_sockaddr(&cfg.http, &ss);
	uv_timer_start(&c.deadline, on_deadline, DEADLINE_MS, 0);
	if (uv_tcp_connect(&c.conn, &c.tcp, (struct sockaddr *)&ss, on_connect) < 0)
		abort();
	while (!c.done)
		uv_run(&loop, UV_RUN_ONCE);
	FUZZ_CHECK(!c.timed_out);
	if (getenv("GW_FUZZ_HTTP_SHOW"))   /* replaying a crash: what came back */
		fwrite(c.resp, 1, c.resp_len, stderr);
	check_responses(c.resp, c.resp_len, c.resp_len < RESPONSE_MAX, head_requests(data, size));
	free(c.resp);
	/* let the server finish closing its side */
	uv_run(&loop, UV_RUN_NOWAIT);
	return 0;
}
