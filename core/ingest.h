/*
 * ingest: the one path every line takes, from whichever transport, to the
 * detectors, the database and the alert sinks (docs/storage.md, "The path
 * of a record, file by file").
 *
 * struct gw_ingest (opaque) owns the wire parser, the detector engine with
 * its run table (runs.h), and the ingest counters; it borrows the store
 * and the alert outbox (alerts/outbox.h), which it tells of every alert
 * and every commit.  A transport owns one struct gw_ingest_src per
 * connection (or per followed file, HTTP request body, datagram) and feeds
 * it bytes; the source splits them into lines, numbers them, and sends
 * each through parse -> detect -> queue:
 *
 *   parse   gw_wire_parse (a rejected line gets its reason, column, field;
 *           the source's on_reject hook answers the client);
 *   detect  gw_engine_feed, whose hooks queue a new segment's row and each
 *           alert (its row and its outbox rows: gw_outbox_alert) before the
 *           record that caused them;
 *   queue   gw_store_put_record / _event; the item's sequence number is the
 *           source's last_seq.
 *
 * Acknowledgement: the store's writer commits in the background and wakes
 * the loop (commit_async); waiters registered with gw_ingest_wait_commit
 * (an HTTP response, a read that must see its own writes) run once the
 * committed sequence covers theirs.  Back-pressure: while the store's queue
 * is over half its limit, sources that can wait are parked
 * (gw_ingest_pause) and resumed after the commit that drains it below; HTTP
 * ingest is refused only over the whole limit.
 *
 * Only the record path writes the counters (the transports through
 * gw_ingest_count_*); /v1/stats and /metrics render them through
 * gw_ingest_counters_foreach, from one table (ingest_counters.c).
 *
 * Threads: everything here runs on the loop thread except the store's
 * writer, which only calls uv_async_send.
 */
#ifndef GW_INGEST_H
#define GW_INGEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "engine.h"
#include "registry.h"
#include "lines.h"
#include "reader.h"
#include "wire.h"

struct gw_cfg;
struct gw_ingest;
struct gw_outbox;
struct gw_runs_stats;
struct gw_store;
struct gw_token;

enum gw_transport {
	GW_TR_UNIX,
	GW_TR_TCP,
	GW_TR_UDP,
	GW_TR_HTTP,
	GW_TR_FOLLOW,
	GW_NTRANSPORTS,
};

const char *gw_transport_name(enum gw_transport t);

/* Someone waiting for the store to commit up to `seq`.  fn runs once: with
 * error 0 when it is committed, or with the store's negative errno (-ENOSPC:
 * the disk is full) and `why` (valid during the call) when a commit failed
 * first; the items stay queued and may still commit later. */
struct gw_commit_waiter {
	uint64_t seq;
	void (*fn)(struct gw_commit_waiter *w);
	int error;
	const char *why;
	struct gw_commit_waiter *next;
};

/* A source parked for back-pressure; resume() is called once the store's
 * queue has drained. */
struct gw_paused {
	void (*resume)(struct gw_paused *p);
	struct gw_paused *next, *prev;
	bool linked;
};

/* How a record path is set up: the daemon's (a loop, a store, live
 * detectors) or a replay's (no loop, no store: records go to the detectors
 * only, and `observe` sees every alert and segment). */
struct gw_ingest_opts {
	uv_loop_t *loop;                  /* NULL for a replay */
	const struct gw_cfg *cfg;         /* aliases, thresholds, limits (borrowed) */
	struct gw_store *store;           /* borrowed; NULL: nothing is stored */
	struct gw_outbox *outbox;         /* borrowed, started: every alert and commit goes
	                                     to it (NULL: none, a replay) */
	bool replay;                      /* detectors off the wall clock; no run table */
	bool live_clock;                  /* replay: the records' ts is "now" */
	struct gw_engine_hooks observe;   /* also told of every alert and segment (may be empty) */
};

/* Lifecycle (docs/architecture.md, "Starting and stopping"):
 * gw_ingest_start, gw_ingest_stop closes the handles (the commit
 * notification's and the outbox's), gw_ingest_free once the loop ran their
 * close callbacks.  A replay has no loop and no handles: start, then free. */

/* Set up: the engine, the wire parser, the run table (every run in the
 * database dormant; those live when the daemon before stopped rebuilt:
 * blocking reads, call before uv_run) and the commit notification; for a
 * replay, the engine and the parser only.  Returns 0 or a negative errno
 * with a message in err; on failure (*out may be set) call gw_ingest_stop
 * and gw_ingest_free anyway. */
int gw_ingest_start(const struct gw_ingest_opts *o, struct gw_ingest **out, char *err,
                   size_t errlen);

/* Every tick: the wall-clock detectors, and idle runs made dormant. */
void gw_ingest_tick(struct gw_ingest *in, double now);

/* Close the commit notification (idempotent; in may be NULL; the loop must
 * run once more for its close callback); then gw_ingest_free frees
 * everything (in may be NULL). */
void gw_ingest_stop(struct gw_ingest *in);
void gw_ingest_free(struct gw_ingest *in);

/* Thresholds, per-run overrides and disabled detectors changed (SIGHUP):
 * the engine takes them from o (gw_engine_reconfigure). */
void gw_ingest_reconfigure(struct gw_ingest *in, const struct gw_engine_opts *o);

/* ---- runs (the run table, runs.h; loop thread) -------------------------------- */

/* Whether the daemon has run `run`, active or dormant (gw_runs_known). */
bool gw_ingest_run_known(const struct gw_ingest *in, const char *run);
/* When a line of `run` last arrived (wall clock), NAN when not known. */
double gw_ingest_run_last_seen(const struct gw_ingest *in, const char *run);
/* Run `run` was deleted: forget its state, active or dormant, and its
 * alerts in the outbox (no repeats; gw_outbox_forget_run). */
void gw_ingest_forget_run(struct gw_ingest *in, const char *run);
/* Run `run` ended for `why` (a followed file rotated away or gone): the
 * engine stops watching its silence (gw_engine_run_ended). */
void gw_ingest_run_ended(struct gw_ingest *in, const char *run, const char *why);
/* Active and dormant runs, evictions and rebuilds (all zero in a replay). */
void gw_ingest_runs_stats(const struct gw_ingest *in, struct gw_runs_stats *out);
/* Call fn for every active run (gw_engine_foreach_run). */
void gw_ingest_foreach_run(const struct gw_ingest *in,
                           void (*fn)(void *data, const struct gw_run_info *ri), void *data);

/* ---- sources ---------------------------------------------------------------- */

/* One stream of lines.  The owner fills the public fields, then feeds. */
struct gw_ingest_src {
	struct gw_ingest *in;
	enum gw_transport t;
	const char *default_run;      /* run of lines without one, or NULL (borrowed) */
	bool eof_ends_line;           /* the end of the stream legitimately ends a line
	                                 (HTTP body, datagram): not "truncated" */
	/* A rejected line (may be NULL): answer or log it. */
	void (*on_reject)(struct gw_ingest_src *s, uint64_t lineno, const struct gw_wire_err *e);
	void *data;                   /* the owner's */
	const struct gw_token *token; /* limits the runs it may write (auth.h), or NULL */

	struct gw_lines lines;        /* NDJSON sources: the line splitter */
	struct gw_reader *reader;     /* other sources: a log reader (gw_ingest_src_reader) */
	uint64_t accepted, rejected;
	uint64_t last_seq;            /* store sequence of the last accepted line */
	int64_t last_seg;             /* the segment of the last accepted line */
	uint64_t fed;                 /* bytes fed */
	char last_run[GW_WIRE_RUN_MAX + 1];  /* the run of the last accepted line */
};

/* Initialise (lines numbered from `first_line` + 1) as an NDJSON source. */
void gw_ingest_src_init(struct gw_ingest_src *s, struct gw_ingest *in, enum gw_transport t,
                        uint64_t first_line);
/* Read this source through a log reader instead (readers/): `format` forces
 * one (NULL: sniffed from the content), `follow` accepts only formats that
 * can be read while they grow.  Call after setting default_run.  Returns 0
 * or a negative errno with a message in err. */
int gw_ingest_src_reader(struct gw_ingest_src *s, const char *format, bool follow,
                         char *err, size_t errlen);
void gw_ingest_src_deinit(struct gw_ingest_src *s);

/* The input bytes fully processed since the source started (the end of its
 * last complete line or record), and the number of its lines so far; a
 * follower stores them as its position. */
uint64_t gw_ingest_src_consumed(const struct gw_ingest_src *s);
uint64_t gw_ingest_src_lines(const struct gw_ingest_src *s);
/* Feed the next n bytes (counted as received bytes of the transport).
 * Returns 0, -ENOMEM, or -EPROTO when a reader source found its input
 * unreadable (gw_reader_error(s->reader) says why). */
int gw_ingest_src_feed(struct gw_ingest_src *s, const char *p, size_t n);

/* The stream ended: a last line without its newline is still parsed (and
 * counted as truncated if it does not parse, unless eof_ends_line).
 * Returns as gw_ingest_src_feed. */
int gw_ingest_src_finish(struct gw_ingest_src *s);

/* One record or event, parsed already (by the wire parser or a reader), of
 * source s at line `lineno`: detect, then queue it.  Returns 0, or -EINVAL
 * with *e filled (a run the source's token may not write, too many runs,
 * out of memory), or the engine's negative errno. */
int gw_ingest_record(struct gw_ingest_src *s, const struct gw_rec *rec, uint64_t lineno,
                     struct gw_wire_err *e);

/* A rejected line as the JSON error object clients get:
 * {line, reason, message, field?, column?} (new reference). */
json_t *gw_ingest_err_json(uint64_t lineno, const struct gw_wire_err *e);

/* Count what a transport refused before parsing, or a partial last line
 * it dropped. */
void gw_ingest_count_connection(struct gw_ingest *in);
void gw_ingest_count_udp_dropped(struct gw_ingest *in);
void gw_ingest_count_reject(struct gw_ingest *in, enum gw_transport t, enum gw_wire_reason r);

/* uv_alloc_cb for stream reads (one shared slab; the loop thread is the
 * only reader and a read callback consumes its buffer before returning). */
void gw_ingest_alloc_slab(uv_handle_t *h, size_t hint, uv_buf_t *buf);

/* ---- acknowledgement and back-pressure ---------------------------------------- */

/* Call w->fn once the store has committed w->seq (maybe right away; the
 * writer is asked to commit now rather than at its interval).  in NULL (a
 * server without a record path: the fleet view): w->fn at once. */
void gw_ingest_wait_commit(struct gw_ingest *in, struct gw_commit_waiter *w);
void gw_ingest_cancel_wait(struct gw_ingest *in, struct gw_commit_waiter *w);
/* Wait for everything queued so far (a read that must see its own writes). */
void gw_ingest_barrier(struct gw_ingest *in, struct gw_commit_waiter *w);

/* True while the store's queue is over half its limit: sources that can
 * wait (streams, followed files) stop reading, UDP drops.  The other half
 * is kept for HTTP ingest, so one stream writing as fast as it can does not
 * lock HTTP clients out. */
bool gw_ingest_congested(const struct gw_ingest *in);
/* True while the queue is over its whole limit: HTTP ingest answers 503. */
bool gw_ingest_full(const struct gw_ingest *in);
/* The store's last commit failed: its negative errno and message (into why);
 * 0 while commits work. */
int gw_ingest_store_error(const struct gw_ingest *in, char *why, size_t whylen);
/* Park a source until the queue drains; unpause removes it (on close). */
void gw_ingest_pause(struct gw_ingest *in, struct gw_paused *p);
void gw_ingest_unpause(struct gw_ingest *in, struct gw_paused *p);

/* ---- counters ------------------------------------------------------------------ */

/* One counter value with its labels, as /v1/stats and /metrics render it. */
struct gw_counter_sample {
	const char *metric;     /* Prometheus name ("gradwatch_lines_ingested_total") */
	const char *key;        /* its key in /v1/stats ("accepted") */
	const char *help;
	const char *label[2];   /* label names, NULL when unused ("transport", "reason") */
	const char *value[2];   /* label values */
	uint64_t n;
	bool first;             /* the first sample of its family */
};

/* Call fn for every counter sample, family by family (zero ones too, so a
 * series exists from the first scrape on). */
void gw_ingest_counters_foreach(const struct gw_ingest *in,
                                void (*fn)(void *data, const struct gw_counter_sample *s),
                                void *data);

#endif
