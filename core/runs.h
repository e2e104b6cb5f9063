/*
 * runs: the run table: which runs have their detector state in memory
 * (active, in the engine) and which do not (dormant), so memory stays
 * bounded however many runs a daemon has seen (docs/reliability.md,
 * "Memory").
 *
 * An active run costs gw_engine_bytes_per_run() (~60 KB: its history ring,
 * detector states); a dormant one a few dozen bytes (its name and where it
 * stood).  Runs in the database start dormant when the daemon starts; an
 * active run becomes dormant when it has been idle for
 * limits.run_evict_idle_s (and has no open alert), or when a new run needs
 * room under limits.max_runs (the least recently active goes).  On a
 * dormant run's next line its state is rebuilt before the line is fed: the
 * engine is seeded where the run's last stored lines begin and they are
 * re-fed quietly (no alert, no segment reported twice), the last
 * GW_RUNS_REFEED records and the events among them, read from SQLite with
 * one indexed query, each with the wall clock it arrived at, so a rebuilt
 * run's cadence is known at once.  That read is synchronous, on the loop
 * thread: the one exception to storage/store.h's rule, and a bounded one
 * (at most GW_RUNS_REFEED records by the records_by_run index, on one
 * read-only connection the table keeps open, so no connection is opened
 * and no statement prepared per rebuild; about 2 ms, bench/run_rebuild.py).
 * Feeding the engine while it is rebuilt cannot wait for a thread: the
 * run's line that woke it is next, and must see the rebuilt state.  A run
 * that had ended (engine.h "Run endings"; kept on its row,
 * gw_store_put_run_end, by the ingest's on_ended hook) is rebuilt ended,
 * whether or not its re-fed lines say so: after a restart its silence is
 * not watched.
 */
#ifndef GW_RUNS_H
#define GW_RUNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GW_RUNS_REFEED 1024   /* records re-fed: twice the history ring */
#define GW_RUNS_RESTORE_S 600 /* restored at start without run_evict_idle_s */
#define GW_RUNS_RESTORE_MAX 256   /* runs rebuilt at start, at most (the newest) */
#define GW_RUNS_STOPPED_AT "daemon:stopped_at"   /* meta key: a clean stop's wall clock */

struct gw_engine;
struct gw_run_info;
struct gw_runs;

/* What the table works with: the engine whose runs it makes active and
 * dormant (borrowed), the database the dormant runs are rebuilt from, and
 * the limits. */
struct gw_runs_opts {
	struct gw_engine *engine;
	const char *db_path;
	size_t max_runs;             /* limits.max_runs: active runs at most (0: no limit) */
	unsigned evict_idle_s;       /* limits.run_evict_idle_s (0: never by idleness) */
};

/* The table with every run of the database dormant (a blocking read of the
 * runs table: before the loop runs).  Returns 0 or a negative errno with a
 * message in err (*out NULL when out of memory; an unreadable database
 * leaves an empty table in *out: it still works, from the lines it sees). */
int gw_runs_new(const struct gw_runs_opts *o, struct gw_runs **out, char *err, size_t errlen);
void gw_runs_free(struct gw_runs *rs);

/* Before a line of run `run` reaches the engine: make its state active
 * (rebuild a dormant run's; make room under max_runs for a new one).
 * Returns 0 or a negative errno (a failed read is logged; the run then
 * continues from its stored position only). */
int gw_runs_activate(struct gw_runs *rs, const char *run, size_t len);

/* Every tick: runs idle longer than evict_idle_s become dormant. */
void gw_runs_tick(struct gw_runs *rs, double now);

/* Whether the daemon has run `run` (active or dormant): every run in the
 * database is one or the other, and so is a new run whose first lines are
 * not committed yet. */
bool gw_runs_known(const struct gw_runs *rs, const char *run);

/* When a line of run `run` last arrived (wall clock), active or dormant;
 * NAN when that is not known (a run the daemon does not have, or one
 * rebuilt from rows that did not keep it). */
double gw_runs_last_seen(const struct gw_runs *rs, const char *run);

/* Forget a run altogether (deleted: DELETE /v1/runs/{run}, retention): its
 * state, active or dormant. */
void gw_runs_forget(struct gw_runs *rs, const char *run);

/* How many runs are active and dormant, and how many were made dormant and
 * rebuilt since the start (gradwatch_runs_*). */
struct gw_runs_stats {
	size_t active, dormant;
	uint64_t evicted, rebuilt;
};
void gw_runs_stats(const struct gw_runs *rs, struct gw_runs_stats *out);

/* At start, after gw_runs_new: the runs the daemon before had active (a
 * line within evict_idle_s, or GW_RUNS_RESTORE_S, of when it stopped: meta
 * GW_RUNS_STOPPED_AT of a clean stop, else its last commit) are rebuilt,
 * the newest GW_RUNS_RESTORE_MAX of them (before the daemon is ready) and
 * told the daemon was down (gw_engine_restarted): the stall detector
 * watches the silence of those that were live from `now`; the others go
 * back to sleep.  Returns how many are watched. */
int gw_runs_restore(struct gw_runs *rs, double now);

#endif
