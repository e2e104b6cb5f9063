/*
 * The detector interface: what a detector sees, what it returns, its state,
 * how it raises.  docs/detectors.md ("Adding a detector") walks through it.
 *
 * A detector is one `const struct gw_detector` (a name and hooks) plus a
 * per-run state blob of `state_size` bytes that the engine allocates, zeroes
 * and hands to every hook.  Hooks see the run through a read-only context
 * (struct gw_det_ctx): the line, the history (hist.h), the restart the
 * segment started with (regime.h), the shared thresholds and its own
 * (gw_det_own_th).  They report with gw_det_raise() and gw_det_resolve().
 * Detectors are pure: no I/O, no sockets, no SQLite, bounded state.  They
 * never ask about each other: when one detector's verdict makes another's
 * redundant, the precedence table in registry.c says so once and the
 * engine drops the redundant verdict.
 *
 * Incidents: a verdict names an incident key the detector chooses (a
 * counter bumped per new incident is enough).  The first verdict for a key
 * opens an alert; later verdicts for the same key in the same segment
 * update it (passed on only when the severity rises or force_update is
 * set); gw_det_resolve() closes it.  One incident, one alert.
 */
#ifndef GW_DETECTOR_H
#define GW_DETECTOR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "severity.h"
#include "thresholds.h"
#include "wire.h"

struct gw_hist;
struct gw_restart;
struct gw_spike_cache;


/* What a hook sees.  Everything is the engine's; valid during the call. */
struct gw_det_ctx {
	const struct gw_rec *rec;          /* the line (record or event); NULL on a tick */
	uint64_t line;                     /* its number in its source */
	double now;                        /* wall clock (live), NaN in replay */
	bool live;                         /* false in replay: wall-clock rules stay quiet */
	const struct gw_thresholds *th;    /* the run's thresholds */
	const struct gw_hist *hist;        /* the timeline, this record included (hist.h) */
	const struct gw_restart *restart;  /* the segment's restart, ->active if any (regime.h) */
	uint64_t valid_records;            /* valid metric records of the run so far */
	bool run_ended;                    /* the run said it ended (engine.h, "Run endings") */
	int64_t max_steps;                 /* the length the run declared, -1 if none */
	struct gw_spike_cache *spike;      /* per-line cache behind gw_spike_stat (spike.h) */
	void *engine, *run_state;          /* the engine's, for gw_det_raise */
	unsigned det_index;
};

/* The checkpoint_saved a restart from step S restarts from: the one saved
 * at S if recorded, else the newest before S, else NULL (the engine keeps
 * the run's last 4).  *step and *line (either may be NULL) get its step and
 * line, -1 and 0 without one. */
const json_t *gw_det_checkpoint_for(const struct gw_det_ctx *ctx, int64_t S, int64_t *step,
                                    uint64_t *line);

/* A verdict. */
struct gw_verdict {
	uint32_t incident;          /* detector-chosen key of the incident */
	const char *rule;           /* which rule of the detector gave it (precedence), or NULL */
	bool step_set;              /* report `step` instead of the line's step */
	int64_t step;
	enum gw_severity severity;
	bool force_update;          /* pass an update on even without escalation */
	char summary[512];          /* one sentence with the numbers in it */
	char cause[256];            /* likely cause */
	char action[256];           /* what to check */
	json_t *evidence;           /* stolen: the engine takes the reference */
};

/* Report a verdict: opens or updates the incident's alert.  Returns false
 * when a precedence rule dropped it (nothing is opened; a detector that
 * numbers incidents should not count it); the evidence is taken either way. */
bool gw_det_raise(const struct gw_det_ctx *ctx, struct gw_verdict *v);

/* Close an open incident (the alert's endsAt); no-op if not open. */
void gw_det_resolve(const struct gw_det_ctx *ctx, uint32_t incident);

/* The same, with what ended it: v->incident is closed and the resolve
 * carries v's summary, cause, action, evidence and step (severity and
 * force_update are ignored); the evidence is taken either way. */
void gw_det_resolve_v(const struct gw_det_ctx *ctx, struct gw_verdict *v);

struct gw_detector {
	const char *name;          /* the vocabulary of docs/detectors.md */
	size_t state_size;         /* bytes of per-run state, zeroed before init */
	bool live_only;            /* needs the wall clock: off in replay */
	/* One alert per segment: once a warning or critical verdict of this
	 * detector was reported, the engine stops calling on_record, on_event
	 * and on_tick until the next segment starts. */
	bool once_per_segment;
	/* Its own thresholds, if any (thresholds.h, GW_DET_THRESHOLDS): a
	 * table of GW_TH_OWN entries over a struct of doubles of
	 * thresholds_size bytes; gw_det_own_th() gives the run's values. */
	const struct gw_threshold_info *thresholds;
	size_t thresholds_size;
	/* Optional: do its own thresholds (that struct, complete) agree with
	 * each other?  0, or -EINVAL with what disagrees and why in err (as
	 * gw_errf writes it).  gw_thresholds_check calls it. */
	int (*check_thresholds)(const void *own, char *err, size_t errlen);

	/* Hooks, each optional (NULL). */
	void (*init)(void *state, const struct gw_det_ctx *ctx);
	/* A new segment (after the first) starts, before its first line's hooks. */
	void (*on_segment)(void *state, const struct gw_det_ctx *ctx);
	/* A metric record (loss or grad norm present), already in the history. */
	void (*on_record)(void *state, const struct gw_det_ctx *ctx);
	/* An event line: ctx->rec->event, ctx->rec->attrs. */
	void (*on_event)(void *state, const struct gw_det_ctx *ctx);
	/* The wall-clock tick (live only); ctx->rec is NULL. */
	void (*on_tick)(void *state, const struct gw_det_ctx *ctx);
	/* The daemon restarted (live only; ctx->rec is NULL, ctx->now its
	 * start): it was down from down_from, and the run's state was rebuilt
	 * from its stored lines fed with their arrival times as ctx->now.
	 * Returns whether the detector watches the run from now on. */
	bool (*on_restart)(void *state, const struct gw_det_ctx *ctx, double down_from);
	/* With on_tick: the wall-clock time until which the ticks alone may
	 * still raise an alert (a silence not yet long enough), -INFINITY when
	 * they cannot.  The daemon keeps an idle run's state in memory until
	 * then (limits.run_evict_idle_s waits for it). */
	double (*watch_until)(const void *state);
};

/* The detector's own thresholds for the run at hand: its struct (the type
 * its GW_DET_THRESHOLDS names), NULL if it has none.  Per run: a run that
 * matches a configured glob gets that entry's values. */
const void *gw_det_own_th(const struct gw_det_ctx *ctx);

/* For summaries: a number with 2-3 significant digits ("0.61", "1.2e-05"),
 * a log ratio as a signed percentage ("+12%"); steps with thousands
 * separators are lib/util.h's gw_fmt_int.  They write buf and return it. */
const char *gw_det_fmt_num(char *buf, size_t size, double v);
const char *gw_det_fmt_pct(char *buf, size_t size, double logratio);

/* Numbers in evidence: gw_json_num (lib/util.h), a real or null, never
 * json_pack's "f" (which fails on NaN and loses the whole evidence). */

#endif
