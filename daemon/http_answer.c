/*
 * Answering later (http.h, "answering later"): a read waits for the
 * ingest barrier (everything received before it committed), runs on
 * libuv's pool and, unless a route's `then` wants the result, writes its
 * JSON there too, so the loop only sends the text in place; at most
 * limits.max_reads_in_flight wait or run (503 beyond), an answer holds at
 * most limits.max_response_bytes (413 beyond).  An answer after a write
 * waits for that write's commit.
 *
 * Conditional reads: a read's 200 answer carries an ETag, the FNV-1a 64 of
 * its bytes; a request whose If-None-Match names it is answered 304 with
 * no body (RFC 9110 13.1.2), so a client that polls an unchanged list (the
 * web view's runs page, every few seconds) is sent headers only.
 */
#include "http_impl.h"

#include "config.h"
#include "hash.h"
#include "fault.h"
#include "ingest.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* A pool thread that answers reads yields the CPU to the loop thread: on a
 * machine with fewer cores than the pool has threads, four reads writing
 * 3 MB answers otherwise kept the loop waiting for a core (/healthz 155 ms
 * in bench/read_stall.py on 2 cores).  Once per thread; the pool's other
 * work (retention, a reload) is background work too. */
#define READ_NICE 10

static void yield_to_the_loop(void)
{
	static _Thread_local bool done;
	if (done)
		return;
	done = true;
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), READ_NICE);
}

/* Whether If-None-Match (a list of entity tags, weak or strong, or "*")
 * names etag: the weak comparison RFC 9110 13.1.2 asks for. */
static bool inm_matches(const struct gw_http_conn *c, const char *etag)
{
	if (!c->inm_len || c->inm_len == SIZE_MAX)
		return false;
	size_t el = strlen(etag);
	for (const char *p = c->inm, *end = c->inm + c->inm_len; p < end;) {
		while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
			p++;
		const char *b = p;
		while (p < end && *p != ',')
			p++;
		const char *e = p;
		while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (e - b >= 2 && b[0] == 'W' && b[1] == '/')
			b += 2;
		if ((e - b == 1 && *b == '*') || ((size_t)(e - b) == el && !memcmp(b, etag, el)))
			return true;
	}
	return false;
}

static void work_run(uv_work_t *req)
{
	struct gw_http_conn *c = gw_container_of(req, struct gw_http_conn, work);
	yield_to_the_loop();
	c->qresult = NULL;
	c->qtext = NULL;
	c->qstatus = c->read(&c->req, &c->qresult);
	if (c->srv->hold_reads)
		gw_fault_hold_read(c->srv->hold_reads, c->req.query, c->req.query_len);
	if (c->then || !c->qresult)
		return;
	/* written here, on the pool: a 100,000-record answer took the loop
	 * (and systemd's watchdog) for hundreds of ms each */
	char *s = json_dumps(c->qresult, ANSWER_JSON_FLAGS);
	json_decref(c->qresult);
	c->qresult = NULL;
	if (!s)
		return;
	size_t n = strlen(s), max = c->srv->o.cfg->max_response_bytes;
	if (c->qstatus == 200 && n <= max) {
		snprintf(c->etag, sizeof(c->etag), "\"%016llx\"",
		         (unsigned long long)gw_fnv1a64_add(GW_FNV64_INIT, s, n));
		if (inm_matches(c, c->etag)) {
			s[0] = '\0';   /* not modified: the headers only */
			c->qstatus = 304;
			c->qtext = s;
			c->qlen = 0;
			return;
		}
	}
	if (n > max) {
		free(s);
		s = NULL;
		c->qstatus = 413;
		if (asprintf(&s, "{\"error\":\"the answer would be %zu bytes, more than "
		             "limits.max_response_bytes (%zu): ask for less (limit=, max_points=, "
		             "a step range)\"}", n, max) < 0)
			s = NULL;
		n = s ? strlen(s) : 0;
	}
	char *t = s ? realloc(s, n + 2) : NULL;
	if (t) {
		s = t;
		s[n++] = '\n';
		s[n] = '\0';
	}
	c->qtext = s;
	c->qlen = n;
}

static void work_done(uv_work_t *req, int status)
{
	struct gw_http_conn *c = gw_container_of(req, struct gw_http_conn, work);
	c->work_busy = false;
	gw__http_read_release(c);
	json_t *r = c->qresult;
	c->qresult = NULL;
	char *text = c->qtext;
	c->qtext = NULL;
	if (c->closing) {
		json_decref(r);
		free(text);
		gw__http_conn_close(c); /* finish the close that waited for us */
		return;
	}
	if (status == 0 && text) {
		gw__http_respond_owned(c, c->qstatus, text, c->qlen);
		return;
	}
	free(text);
	if (status < 0 || !r) {
		json_decref(r);
		gw_http_respond_error(c, 500, "query failed");
	} else if (c->then) {
		c->then(c, &c->req, c->qstatus, r);
	} else {
		gw_http_respond_json(c, c->qstatus, r);
	}
}

static void read_after_barrier(struct gw_commit_waiter *w)
{
	struct gw_http_conn *c = gw_container_of(w, struct gw_http_conn, waiter);
	if (w->error) {
		/* a read must see what came before it, and that cannot be written */
		gw_http_respond_error(c, 503, "the database cannot be written (%s); reads wait for "
		                      "what was received before them, so retry later", w->why);
		return;
	}
	c->work_busy = true;
	if (uv_queue_work(c->srv->o.loop, &c->work, work_run, work_done) < 0) {
		c->work_busy = false;
		gw_http_respond_error(c, 500, "cannot queue the query");
	}
}

void gw__http_answer_query(struct gw_http_conn *c, const struct gw_http_req *r)
{
	(void)r;
	gw_http_defer(c, c->route->query, NULL, NULL, NULL);
}

void gw_http_defer(struct gw_http_conn *c, gw_http_read_fn read, gw_http_then_fn then,
                   void *state, void (*state_free)(void *state))
{
	c->req.state = state;
	c->state_free = state_free;
	c->read = read;
	c->then = then;
	if (c->srv->reads >= c->srv->o.cfg->max_reads_in_flight) {
		/* queued behind that many, it would wait long; memory for the
		 * answers is bounded by it too */
		gw_http_respond_error(c, 503, "busy: %zu reads are being answered "
		                      "(limits.max_reads_in_flight); retry after the Retry-After delay",
		                      c->srv->reads);
		return;
	}
	c->read_counted = true;
	c->srv->reads++;
	c->waiter.fn = read_after_barrier;
	gw_ingest_barrier(c->srv->o.ingest, &c->waiter);
}

static void answer_committed(struct gw_commit_waiter *w)
{
	struct gw_http_conn *c = gw_container_of(w, struct gw_http_conn, waiter);
	if (w->error) {
		gw_http_respond_error(c, 503, "%s: the database cannot be written (%s)", c->not_yet,
		                      w->why);
		return;
	}
	json_t *a = c->answer;
	c->answer = NULL;
	gw_http_respond_json(c, c->answer_status, a);
}

void gw_http_answer_after_commit(struct gw_http_conn *c, uint64_t seq, int status,
                                 json_t *answer, const char *not_yet)
{
	json_decref(c->answer);
	c->answer = answer;
	c->answer_status = status;
	c->not_yet = not_yet;
	c->waiter.seq = seq;
	c->waiter.fn = answer_committed;
	gw_ingest_wait_commit(c->srv->o.ingest, &c->waiter);
}
