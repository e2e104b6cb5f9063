/*
 * retention: runs leave the database when they are old or the database is
 * too big (config "retention"), when a client deletes one (DELETE
 * /v1/runs/{run}) or prunes (POST /v1/prune, `gradwatch prune`).
 *
 * A pass runs every retention.check_every (60 s): which runs go is read on the libuv
 * thread pool (the runs table, the database's size), then each is deleted
 * through the store's writer (gw_store_delete_run: its records, events,
 * segments and alerts in one transaction) and forgotten by the record path
 * (active or dormant).  max_bytes counts the pages in use (SQLite reuses
 * freed pages; the file does not shrink): the oldest runs by last line go
 * first, never one that sent a line in the last limits.run_evict_idle_s.
 */
#ifndef GW_RETENTION_H
#define GW_RETENTION_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

struct gw_cfg;
struct gw_http;
struct gw_ingest;
struct gw_store;

/* What retention works with (borrowed, outliving it). */
struct gw_retention_opts {
	uv_loop_t *loop;
	const struct gw_cfg *cfg;     /* "retention", limits.run_evict_idle_s, the database */
	struct gw_ingest *ingest;     /* forgets a deleted run; knows when a run last sent */
	struct gw_store *store;       /* deletes it */
	struct gw_http *http;         /* DELETE /v1/runs/{run}, POST /v1/prune */
};

/* Lifecycle (docs/architecture.md, "Starting and stopping"): start and
 * stop; the state is static, there is nothing to free.  Start the periodic
 * passes (when "retention" is configured) and register DELETE
 * /v1/runs/{run} and POST /v1/prune.  Returns 0 or a negative errno with a
 * message in err. */
int gw_retention_start(const struct gw_retention_opts *o, char *err, size_t errlen);
/* Delete nothing more and close the timer (idempotent, also without a
 * start; the daemon calls it when its shutdown begins).  A pass already on
 * the thread pool finishes (the loop waits for it) and deletes nothing. */
void gw_retention_stop(void);

/* Which runs a pass deletes, and by which rules. */
struct gw_retention_pick {
	double older_than;         /* in: runs last seen before this go (NaN: no age rule) */
	uint64_t max_bytes;        /* in: above this the oldest go (0: no size rule) */
	double active_since;       /* in: never a run seen after this for the size rule */
	json_t *names;             /* out: the runs to delete, oldest first (the caller's) */
	uint64_t used_bytes;       /* out: the database's pages in use, in bytes (size rule) */
	char err[256];
};

/* Pick the runs that go (a read of db_path, read-only; any thread but the
 * loop's: retention runs it on the thread pool): at most 1,000 a pass.
 * Returns 0, or a negative errno with the message in p->err. */
int gw_retention_pick(const char *db_path, struct gw_retention_pick *p);

/* The pick's cutoff: every run it picked was last seen before this; one
 * seen since has sent a line after the pick, and is kept. */
double gw_retention_cutoff(const struct gw_retention_pick *p);

/* Since the start: timed passes finished, runs deleted (by the passes,
 * DELETE and prune).  Loop thread. */
struct gw_retention_stats {
	uint64_t passes, runs_deleted;
};
void gw_retention_stats(struct gw_retention_stats *out);

#endif
