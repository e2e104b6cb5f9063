/*
 * The detector engine: per-run state, segmentation, and the path from a
 * parsed line to alerts.
 *
 * The engine owns one state per run (looked up by name): the segment the run
 * is in, its history (hist.h: the timeline ring of GW_RING_CAP records and,
 * once the run restarts, the replay copy of the steps the crashed process
 * logged after the checkpoint), the restart regime (regime.h), the last
 * checkpoint_saved events, each detector's state blob and its incidents.
 * Memory per run is fixed (gw_engine_bytes_per_run).
 *
 * Segments: a run's first line opens segment 1.  A "resumed" event, a step
 * rewind (a step below the last one, or the same step repeating a field it
 * already had), or a wall-clock gap of at least max(gap_min_seconds,
 * gap_factor x the run's typical step interval) opens the next segment.  A
 * resumed event and the rewound metric lines after it make one segment.
 *
 * Ranks: a job of several processes (DDP, torchrun) may send every rank's
 * lines, each with its global "rank" (wire.h).  Only the lines of the run's
 * primary writer open segments, reach the detectors and move the run's
 * position: a line without a rank (an old client, a plain log); with a
 * "rank" field, rank 0 (the process every framework logs from); with a
 * rank label of a log (a reader's: "[rank3]:", " 3: "), the label of the
 * first metric record (Megatron prints its iterations from the last rank
 * only), and every event (a log's checkpoint lines are the job's, whoever
 * printed them).  A line of another rank only updates that rank's position
 * (its last step and wall clock, kept for ranks below RANK_TRACK:
 * gw_run_info tells which rank is furthest behind), is counted, and is
 * *kept apart* (gw_engine_kept_apart): the daemon stores it apart from the
 * run's records.
 *
 * Interleaved writers: lines without a rank from several processes of one
 * job (every rank logging the same run) repeat each step once per writer.
 * Read one by one, every repeat would be a rewind, a new segment.  What
 * tells them from a restart: a restart goes back to a checkpoint and then
 * runs forward for a long time; interleaved writers go back a step or two,
 * again and again, each time to a later step.  A rewind is *shallow* when it
 * goes back at most IW_DEPTH steps below the highest step, the segment it
 * ends had at most IW_SHORT records, and (ts known) it comes no later than
 * a few step intervals after the last line (a restart takes its time).
 * After IW_STREAK shallow rewinds in a row that went back to at least two
 * different steps (a crash loop goes back to the same checkpoint each time)
 * or that all came in time by their ts, the run is *interleaved*: from then
 * on a line at or below the run's last step, within IW_DEPTH of it, is
 * folded: counted and kept apart (stored apart by the daemon, as rank -1),
 * it opens no segment and does not reach the detectors; so is every
 * writer's copy of a "resumed" event.  A deeper
 * rewind, or one after a wall-clock gap, is still a restart.  The
 * on_writers hook says so once per run.  Until then the pattern opened
 * IW_STREAK - 1 segments with ts, or without ts one per writer (each
 * repeats the first step: the second step tells them from a crash loop).
 *
 * Run endings: a run has *ended* after a "run_finished" event, once a
 * record reaches the length it declared (a max_steps or total_steps field
 * on a record, or attribute of an event; the readers give Megatron's and
 * llm.c's "N/M" as max_steps), or when gw_engine_run_ended says so (a
 * followed file closed).  Detectors see it (ctx->run_ended): stall never
 * alerts on an ended run.  A new segment or a record past the step it
 * ended at means the job goes on, and the run is no longer ended.  The
 * on_ended hook tells when a run ends (not while quiet), so the daemon can
 * keep it across a restart: an ending said by no stored line (a file
 * closed, an eviction, a length declared long before the lines a rebuilt
 * run re-reads) would be lost with the memory.
 *
 * This header is the engine's face for what feeds it and reads its alerts
 * (the daemon, replay); what builds its options includes engine_opts.h, and
 * the detectors' own interface is detector.h, registry.h and thresholds.h.
 *
 * Detectors run in registry order (registry.h) on every line; the engine
 * turns their verdicts into alerts and applies the precedence rules between
 * them.  The daemon (live) and `gradwatch replay` both feed lines in order
 * through gw_engine_feed, which is what makes live and replay agree.
 * Single-threaded: call it from one thread only.  Nothing here blocks or
 * does I/O (a failed allocation is logged).
 */
#ifndef GW_ENGINE_H
#define GW_ENGINE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "severity.h"
#include "wire.h"

/* What an engine is made with: engine_opts.h (the configuration's side). */
struct gw_engine_opts;

/* Why a segment started. */
enum gw_seg_reason {
	GW_SEG_START,    /* first line of the run */
	GW_SEG_RESUMED,  /* a "resumed" event */
	GW_SEG_REWIND,   /* a step at or before one already logged */
	GW_SEG_GAP,      /* a wall-clock gap far beyond the run's step interval */
};

const char *gw_seg_reason_name(enum gw_seg_reason r);

enum gw_alert_kind {
	GW_ALERT_OPEN,     /* a new incident */
	GW_ALERT_UPDATE,   /* the incident escalated or changed materially */
	GW_ALERT_RESOLVE,  /* the incident is over */
};

const char *gw_alert_kind_name(enum gw_alert_kind k);

/* An alert as the engine reports it; everything is borrowed for the duration
 * of the callback (copy what you keep). */
struct gw_alert {
	char id[24];               /* stable: "gw-" + 16 hex of (run, seg, detector, incident) */
	enum gw_alert_kind kind;
	const char *run;
	int64_t seg;
	int64_t step;
	uint64_t line;
	const char *detector;
	enum gw_severity severity;
	const char *summary;
	const char *cause;
	const char *action;
	const json_t *evidence;    /* may be NULL for RESOLVE */
	double ts;                 /* the record's ts, NaN if none */
	double wall;               /* wall clock when raised (live), NaN in replay */
};

struct gw_segment_info {
	const char *run;
	int64_t seg;
	enum gw_seg_reason reason;
	int64_t first_step;        /* step of the line that opened it */
	int64_t restart_step;      /* S, -1 if unknown */
	uint64_t line;
	double ts;
};

/* A run was recognised as several writers' interleaved lines (see
 * "Interleaved writers"): at this step and line. */
struct gw_writers_info {
	const char *run;
	int64_t step;
	uint64_t line;
	int64_t seg;               /* the segment its lines stay in */
};

/* A run ended (see "Run endings"): where, and why ("run_finished" for the
 * event, "max_steps" for its declared length reached, or the reason given
 * to gw_engine_run_ended). */
struct gw_end_info {
	const char *run;
	int64_t seg;
	int64_t step;              /* the step it ended at: a record past it starts it again */
	const char *reason;
};

struct gw_engine_hooks {
	void *data;
	void (*on_alert)(void *data, const struct gw_alert *a);
	void (*on_segment)(void *data, const struct gw_segment_info *s);
	void (*on_writers)(void *data, const struct gw_writers_info *w);   /* may be NULL */
	/* may be NULL; once per ending (again when a run that went on ends
	 * anew); the daemon keeps it on disk, so a restart knows the run ended
	 * (core/runs.c) */
	void (*on_ended)(void *data, const struct gw_end_info *en);
};

struct gw_engine;

/* Create an engine; opts and hooks are copied (override globs are
 * borrowed and must outlive the engine).  NULL on allocation failure.
 * Every threshold set in opts must pass gw_thresholds_check (the
 * configuration loader makes sure): the engine aborts (GW_REQUIRE) rather
 * than let a detector see an invalid value; so does gw_engine_reconfigure. */
struct gw_engine *gw_engine_new(const struct gw_engine_opts *opts,
                                const struct gw_engine_hooks *hooks);
void gw_engine_free(struct gw_engine *e);

/* Replace thresholds, overrides and disabled detectors (SIGHUP); existing
 * runs pick up the new values at their next line. */
void gw_engine_reconfigure(struct gw_engine *e, const struct gw_engine_opts *opts);

/* Feed one parsed line.  `line` is its 1-based number in its source, `now`
 * the wall clock (live) or NaN (replay).  *seg_out, if not NULL, gets the
 * segment the line belongs to.  Hooks are called before it returns.
 * Returns 0, -ENOMEM, or -ENOSPC when max_runs is reached for a new run. */
int gw_engine_feed(struct gw_engine *e, const struct gw_rec *rec, uint64_t line,
                   double now, int64_t *seg_out);

/* Was the last line fed kept apart (see "Ranks", "Interleaved writers"):
 * a rank that is not the run's primary writer, or a folded repeat?  The
 * daemon stores such a line apart from the run's records and events. */
bool gw_engine_kept_apart(const struct gw_engine *e);

/* Would feeding rec open another segment of its run (a rewind, a gap, a
 * "resumed" event; not its first)?  Changes nothing.  For the daemon's
 * per-run segment cap (core/seg_cap.c); a repeat that the interleaved
 * writers' rule may fold still answers true. */
bool gw_engine_would_open_segment(struct gw_engine *e, const struct gw_rec *rec);

/* The run was recognised as interleaved writers' before (a note the daemon
 * stored): repeats are folded from its next line on, without saying so
 * again.  Returns 0 or -ENOENT. */
int gw_engine_set_interleaved(struct gw_engine *e, const char *run);

/* Wall-clock tick for live-only detectors (stall); visits every run, in
 * the order they appeared. */
void gw_engine_tick(struct gw_engine *e, double now);

/* A run ended without a line saying so: its followed file was closed or
 * rotated away (daemon/follow.c), or its source is otherwise gone for good.
 * The run is marked ended as by a "run_finished" event, and the detectors
 * see one (ctx->rec->event "run_finished", attrs {"reason": reason}, line
 * 0, the run's last step; nothing is stored): no stall alert afterwards,
 * and an open one resolves now.  Later lines of the run start it again
 * (see "Run endings").  reason is a short word ("file_closed",
 * "file_rotated"); now is the wall clock.  The on_ended hook is called
 * (unless quiet).  Returns 0, -ENOENT if the engine has no line of that
 * run, -ENOMEM.  Nothing blocks; calling it twice is harmless. */
int gw_engine_run_ended(struct gw_engine *e, const char *run, const char *reason, double now);

/* The daemon was down from down_from to now (its start) and this run was
 * live before it stopped (core/runs.c gw_runs_restore; its state rebuilt
 * from its stored lines with their arrival times): the detectors with an
 * on_restart hook (stall) watch its silence from now on.  Returns 1 if one
 * of them watches the run, 0 if none does, -ENOENT if the engine has no line
 * of that run.  Nothing blocks. */
int gw_engine_restarted(struct gw_engine *e, const char *run, double down_from, double now);

/* Tell the engine where a run stood before a daemon restart, so segment
 * numbers continue and a repeated step after the restart is a rewind.  Call
 * before the run's first line. */
int gw_engine_seed_run(struct gw_engine *e, const char *run, int64_t seg,
                       int64_t last_step, double last_ts);

struct gw_run_info {
	const char *run;
	int64_t seg;
	int64_t last_step;
	double last_ts;
	double last_wall;          /* wall clock of the last line (live) */
	unsigned present;          /* roles seen at least once */
	double last[GW_NROLES];    /* last value of each role (NaN if never) */
	uint64_t records;          /* metric records since the engine started */
	uint64_t events;
	unsigned open_alerts;
	unsigned open_live;        /* of those, of wall-clock detectors (stall): only the
	                              live engine can resolve them, from its ticks */
	double watch_until;        /* wall clock until which those ticks may still raise
	                              one (a silence not yet long enough); -INFINITY if not */
	bool ended;                /* see "Run endings" above */
	int64_t max_steps;         /* the length it declared, -1 if none */
	/* "Interleaved writers" */
	bool interleaved;
	int64_t iw_step;           /* where it was recognised (-1: not) */
	uint64_t iw_line;
	uint64_t folded;           /* lines folded since */
	/* "Ranks" */
	uint64_t rank_lines;       /* lines of ranks other than 0 */
	uint32_t ranks_seen;       /* distinct ranks below RANK_TRACK seen with a "rank" */
	uint32_t rank_max;         /* highest rank seen (when ranks_seen or rank_lines) */
	int64_t label_rank;        /* the rank label whose lines are the run's, -1: none */
	int64_t behind_rank;       /* of 2+ ranks seen, the one with the lowest last step, -1 */
	int64_t behind_step;       /* its last step */
	double behind_wall;        /* and the wall clock of its last line (NaN in replay) */
};

/* Info of one run; -ENOENT if unknown. */
int gw_engine_run_info(const struct gw_engine *e, const char *run,
                       struct gw_run_info *out);

/* Is the run's state in the engine? */
bool gw_engine_has_run(const struct gw_engine *e, const char *run, size_t len);

/* Forget a run's detector state (an idle run, to bound memory): its last
 * position and values go to *last (may be NULL; last->run is NULL).  The
 * caller re-creates the state before the run's next line, by seeding it
 * and re-feeding its recent lines quietly.  The runs' order changes (the
 * last one takes the evicted one's place).  Returns 0 or -ENOENT. */
int gw_engine_evict(struct gw_engine *e, const char *run, struct gw_run_info *last);

/* While quiet, lines change the detectors' state but no hook is called (no
 * alert, no segment is reported): re-feeding a run's stored lines after an
 * eviction rebuilds what the detectors knew without saying it twice.
 * Returns the previous setting. */
bool gw_engine_quiet(struct gw_engine *e, bool quiet);

/* Call fn for every active run (in the order they appeared, but for
 * evictions). */
void gw_engine_foreach_run(const struct gw_engine *e,
                           void (*fn)(void *data, const struct gw_run_info *ri),
                           void *data);

size_t gw_engine_run_count(const struct gw_engine *e);

/* A run's history (what detectors see), or NULL; for tests and benchmarks. */
const struct gw_hist *gw_engine_hist(const struct gw_engine *e, const char *run);

/* Memory per active run, at most, in bytes, at the default thresholds:
 * its state (the history, detector states, incidents and bookkeeping) and
 * what its arena may come to hold (the restart regime, the replay copy, the
 * ranks' positions, the sorted spike baselines). */
size_t gw_engine_bytes_per_run(void);

/* The bytes a run's state holds now (0: unknown run); for benchmarks. */
size_t gw_engine_run_bytes(const struct gw_engine *e, const char *run);

/* The one alert JSON schema (docs/alert-schema.md): its name, the value of
 * every alert object's "schema". */
#define GW_ALERT_SCHEMA "gradwatch.alert.v2"

/* The whole alert object of event number version (1 for the open) of an
 * alert: the fields one event carries by itself (schema, id, kind, run,
 * segment, step, line, detector, severity, summary, cause, action,
 * evidence, and ts / raised_at when known) plus version, state, opened_step, opened_line,
 * opened_at (live), resolved_step / resolved_at on a resolve; the alert's
 * last firing object (the one returned for its previous open or update; NULL
 * for the first) gives what an event does not carry itself: where it opened,
 * the opening record's ts, and a resolve's summary, cause, action and
 * evidence.  New reference, or NULL on allocation failure. */
json_t *gw_alert_event_json(const struct gw_alert *a, int64_t version, const json_t *firing);

/* gw_alert_event_json for a stream of events kept only in memory (replay,
 * report): seen maps alert id -> last firing object, and is updated.
 * New reference, or NULL on allocation failure. */
json_t *gw_alert_track(json_t *seen, const struct gw_alert *a);

/* Compute the stable alert id of (run, seg, detector, incident) into id. */
void gw_alert_make_id(char id[24], const char *run, int64_t seg,
                      const char *detector, uint32_t incident);

#endif
