/*
 * runs: which runs have their detector state in memory (active) and which
 * do not (dormant), so memory stays bounded however many runs a daemon has
 * seen (docs/reliability.md, "Memory").
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
 * one indexed query (a bounded, synchronous read on the loop thread:
 * docs/reliability.md gives its measured cost), each with the wall clock it
 * arrived at, so a rebuilt run's cadence is known at once.  A run that had
 * ended (engine.h "Run endings"; kept on its row, gw_store_put_run_end, by
 * the ingest's on_ended hook) is rebuilt ended, whether or not its re-fed
 * lines say so: after a restart its silence is not watched.
 */
#ifndef GW_RUNS_H
#define GW_RUNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "strtab.h"

#define GW_RUNS_REFEED 1024   /* records re-fed: twice the history ring */
#define GW_RUNS_RESTORE_S 600 /* restored at start without run_evict_idle_s */
#define GW_RUNS_RESTORE_MAX 256   /* runs rebuilt at start, at most (the newest) */
#define GW_RUNS_STOPPED_AT "daemon:stopped_at"   /* meta key: a clean stop's wall clock */

struct gw_ingest;

struct gw_dormant {
	char *name;
	int64_t seg, last_step;
	double last_ts, last_seen;   /* last_seen: its last line's arrival */
	bool interleaved;          /* its lines are interleaved writers' (engine.h) */
	bool ended;                /* it had ended, no line went past it (engine.h "Run endings") */
};

struct gw_runs {
	struct gw_dormant *d;
	size_t n, cap;
	struct gw_strtab by_name;
	uint64_t evicted, rehydrated;   /* counters (gradwatch_runs_*_total) */
	struct gw_store_reader *reader; /* while gw_runs_restore rebuilds runs: one connection */
};

/* Load every run of the database as dormant (a blocking read of the runs
 * table, before the loop runs).  Returns 0 or a negative errno (err). */
int gw_runs_load(struct gw_runs *rs, const char *db_path, char *err, size_t errlen);
void gw_runs_free(struct gw_runs *rs);

/* Before a line of run `run` reaches the engine: make its state active
 * (rebuild a dormant run's; make room under max_runs for a new one).
 * Returns 0 or a negative errno (a failed read is logged; the run then
 * continues from its stored position only). */
int gw_runs_activate(struct gw_ingest *in, const char *run, size_t len);

/* Every tick: runs idle longer than run_evict_idle_s become dormant. */
void gw_runs_tick(struct gw_ingest *in, double now);

/* Whether the daemon has run `run` (active or dormant): every run in the
 * database is one or the other, and so is a new run whose first lines are
 * not committed yet. */
bool gw_runs_known(const struct gw_ingest *in, const char *run);

/* When a line of run `run` last arrived (wall clock), active or dormant;
 * NAN when that is not known (a run the daemon does not have, or one
 * rebuilt from rows that did not keep it). */
double gw_runs_last_seen(const struct gw_ingest *in, const char *run);

/* Forget a run altogether (DELETE /v1/runs/{run}, retention): its state,
 * active or dormant, and its alerts in the outbox (gw_outbox_forget_run). */
void gw_runs_forget(struct gw_ingest *in, const char *run);

size_t gw_runs_dormant(const struct gw_runs *rs);

/* At start, after gw_runs_load: the runs the daemon before had active (a
 * line within limits.run_evict_idle_s, or GW_RUNS_RESTORE_S, of when it
 * stopped: meta GW_RUNS_STOPPED_AT of a clean stop, else its last commit)
 * are rebuilt, the newest GW_RUNS_RESTORE_MAX of them (a bounded
 * synchronous read each, all on one read-only connection, before the
 * daemon is ready) and told the daemon was
 * down (gw_engine_restarted): the stall detector watches the silence of
 * those that were live from `now`; the others go back to sleep.  Returns
 * how many are watched. */
int gw_runs_restore(struct gw_ingest *in, double now);

#endif
