/*
 * Internal to the engine (engine.c: runs, segments, dispatch; verdict.c:
 * verdicts, precedence, incidents; run_end.c: run endings; writers.c:
 * ranks and interleaved writers): the state of a
 * run and of the engine.  Nothing outside those files includes this.
 *
 * A run's state is one allocation of fixed size (struct run) plus its
 * detector states (one block) and, after the first restart with an
 * overlap, the history's replay copy.  The engine keeps runs in the order
 * they appeared and an index by name over them (lib/strtab.h).
 */
#ifndef GW_ENGINE_IMPL_H
#define GW_ENGINE_IMPL_H

#include "engine.h"
#include "hist.h"
#include "regime.h"
#include "spike.h"
#include "strtab.h"

#define MAX_INCIDENTS 4       /* incidents tracked per detector per run */
#define CKPT_KEEP 4           /* checkpoint_saved events kept per run */
#define GAP_HIST 16           /* step intervals kept for the gap rule */
#define MAX_PREC 32           /* precedence rules */
#define RANK_TRACK 64         /* ranks whose position is kept (engine.h "Ranks") */

struct incident {
	uint32_t key;
	bool used;
	bool open;
	enum gw_severity severity;
	int64_t seg;
};

struct ckpt {
	json_t *attrs;            /* NULL: none */
	int64_t step;
	uint64_t line;
};

struct run {
	char *name;               /* owned; the key of the engine's index */
	const struct gw_thresholds *th;
	unsigned th_gen;          /* th is current when this is the engine's */

	/* the segment */
	int64_t seg;              /* 1-based; 0 before the first line */
	uint64_t seg_records;     /* metric records of the segment that reached the detectors */
	bool seg_from_event;      /* opened by "resumed", no metric line yet */
	int64_t resumed_step;     /* that event's step and checkpoint step */
	int64_t resumed_ckpt;
	uint32_t seg_fired;       /* detectors that reported warning+ in this segment */

	/* where the run stands, for the segment rules */
	int64_t last_step;        /* of the last record; -1 after a resumed event */
	unsigned last_present;    /* roles of the last record (a step's lines merged) */
	double last_ts;           /* NaN if unknown */
	double dts[GAP_HIST];     /* recent step intervals, oldest first */
	unsigned ndts;

	/* several writers (engine.h "Ranks" and "Interleaved writers") */
	int64_t hi_step;          /* highest step of a primary metric record */
	unsigned iw_streak;       /* shallow rewinds in short segments, in a row ... */
	unsigned iw_targets;      /* ... how many different steps they went back to ... */
	unsigned iw_timed;        /* ... and how many had a ts (in time: repeat_in_time) */
	int64_t iw_last_target;
	bool interleaved;         /* recognised: repeats are folded, no segments */
	int64_t iw_step;          /* the step and line it was recognised at */
	uint64_t iw_line;
	uint64_t folded;          /* lines folded as another writer's since */
	uint64_t rank_lines;      /* lines of ranks that are not the run's primary writer */
	int64_t label_rank;       /* the rank label whose lines are the run's, -1: none yet */
	uint32_t rank_max;        /* highest rank seen (ranks_seen > 0) */
	uint32_t ranks_seen;      /* distinct ranks among the tracked ones */
	int64_t rank_step[RANK_TRACK];   /* last step of ranks 0..RANK_TRACK-1, -1: none */
	double rank_wall[RANK_TRACK];    /* and the wall clock of their last line */

	/* how the run ends (run_end.c) */
	bool ended;               /* run_finished, max_steps reached, or gw_engine_run_ended */
	int64_t ended_step;       /* the step it ended at; a record past it starts it again */
	int64_t max_steps;        /* the length it declared, -1 if none */

	/* for gw_run_info */
	double last_wall;
	unsigned present_ever;
	double last[GW_NROLES];
	uint64_t records, events;

	/* what the detectors see */
	struct ckpt ckpts[CKPT_KEEP];   /* the last checkpoint_saved events, oldest first */
	struct gw_hist hist;
	struct gw_restart restart;
	uint64_t valid_records;
	struct gw_spike_cache spike;

	/* verdicts */
	uint32_t gave_verdict;            /* detectors that gave any verdict ... */
	uint64_t verdict_at[GW_DET_MAX];  /* ... and valid_records at their latest */
	struct incident inc[GW_DET_MAX][MAX_INCIDENTS];
	unsigned char *det_state;         /* detector d's at det_off[d] */
};

/* Run endings (run_end.c; engine.h "Run endings"): what a record or an
 * event says about the run's end, and marking it ended at a step. */
#define GW_RUN_FINISHED "run_finished"
void gw__run_end_record(struct run *r, const struct gw_rec *rec);
void gw__run_end_event(struct run *r, const struct gw_rec *rec);
void gw__run_end_mark(struct run *r, int64_t step);

/* The median of the run's recent step intervals (engine.c). */
double gw__median_dts(const struct run *r);

/* Several writers (writers.c; engine.h "Ranks", "Interleaved writers").
 * gw__writers_primary: a line with a rank: notes the rank's position;
 * false (and e->apart) when it is not the run's primary writer's.
 * gw__writers_fold_record / _event: once interleaved, another writer's
 * repeat of a step, or copy of an event: counted and kept apart (true).
 * gw__writers_rewind: a rewind segment_break reported, counted towards
 * recognising interleaved writers; true when this one recognised them (the
 * line is folded, the on_writers hook was called).  gw__checkpoint_step:
 * a resumed event's checkpoint_step, else its step. */
void gw__writers_init(struct run *r);                              /* a new run's */
void gw__writers_info(const struct run *r, struct gw_run_info *ri);  /* its part of gw_run_info */
bool gw__writers_primary(struct gw_engine *e, struct run *r, const struct gw_rec *rec, double now);
bool gw__writers_fold_record(struct gw_engine *e, struct run *r, const struct gw_rec *rec);
bool gw__writers_fold_event(struct gw_engine *e, struct run *r, const struct gw_rec *rec);
bool gw__writers_rewind(struct gw_engine *e, struct run *r, const struct gw_rec *rec,
                        uint64_t line);
int64_t gw__checkpoint_step(const struct gw_rec *rec);

/* A precedence rule with the names resolved to registry indices. */
struct prec {
	unsigned winner, loser;
	const char *loser_rule;
	enum gw_prec_scope scope;
};

struct gw_engine {
	struct gw_engine_opts opts;
	struct gw_engine_hooks hooks;
	unsigned th_gen;
	struct run **runs;        /* in the order they appeared */
	size_t nruns, runs_cap;
	struct gw_strtab by_name; /* run name -> index in runs */
	size_t ndet;
	size_t det_off[GW_DET_MAX];
	size_t det_total;
	struct prec prec[MAX_PREC];
	size_t nprec;
	bool quiet;               /* hooks are not called (gw_engine_quiet) */
	bool apart;               /* the last line fed was kept apart */
};

#endif
