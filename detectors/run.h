/*
 * run: the state of one run in the detector engine, and the parts of the
 * engine that work on a run alone -- the run table (runtab.c), segments
 * (segment.c), run endings (run_end.c).  Internal to the engine: the face
 * is engine.h, the engine's own state engine_impl.h; nothing else
 * includes this.
 *
 * A run's state is one allocation: struct run, then its detectors' states
 * (at offsets the engine gives), then their incidents, laid out so that a
 * line touches few cache lines -- what every line reads and writes first,
 * the history's rings last.  What only some runs need (the restart regime,
 * the replay copy, the ranks' positions, the sorted spike baselines) comes
 * from the run's arena when first needed (arena.h).  The table keeps runs
 * in the order they appeared and an index by name over them
 * (lib/strtab.h) whose keys are the names inside the runs (inline up to
 * NAME_INLINE bytes, so a lookup reads the run's first line and no other).
 */
#ifndef GW_RUN_H
#define GW_RUN_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "hist.h"
#include "regime.h"
#include "spike.h"
#include "strtab.h"
#include "thresholds.h"
#include "wire.h"
#include "writers.h"

#define MAX_INCIDENTS 4       /* incidents tracked per detector per run */
#define CKPT_KEEP 4           /* checkpoint_saved events kept per run */
#define GAP_HIST 16           /* step intervals kept for the gap rule */
#define NAME_INLINE 48        /* name bytes kept inside the run (with the NUL) */
#define RUN_DET_MAX 16        /* detectors a run holds states for (registry.h GW_DET_MAX) */

struct incident {
	uint32_t key;
	bool used;
	bool open;
	uint8_t severity;         /* enum gw_severity */
	int64_t seg;
};

struct ckpt {
	json_t *attrs;            /* NULL: none */
	int64_t step;
	uint64_t line;
};

struct run {
	/* ---- read or written on every line */
	char name_inline[NAME_INLINE];
	char *name;               /* name_inline, or the heap for a long one; the index's key */
	size_t name_len;
	const struct gw_thresholds *th;
	unsigned th_gen;          /* th is current when this is the engine's */
	uint32_t seg_fired;       /* detectors that reported warning+ in this segment */
	int64_t seg;              /* 1-based; 0 before the first line */
	uint64_t seg_records;     /* metric records of the segment that reached the detectors */
	int64_t last_step;        /* of the last record; -1 after a resumed event */
	unsigned last_present;    /* roles of the last record (a step's lines merged) */
	bool seg_from_event;      /* opened by "resumed", no metric line yet */
	bool ended;               /* run_finished, max_steps reached, or gw_engine_run_ended */
	double last_ts;           /* NaN if unknown */
	double last_wall;
	uint64_t records, events, valid_records;
	unsigned present_ever;
	uint32_t gave_verdict;    /* detectors that gave any verdict (verdict_at) */
	double last[GW_NROLES];   /* last value of each role, for gw_run_info */
	struct gw_restart *restart;   /* the segment's restart; NULL until the first (arena) */

	/* ---- the segment rules' */
	double dts[GAP_HIST];     /* recent step intervals, a ring (in no order) */
	unsigned ndts, dts_next;
	int64_t resumed_step;     /* the resumed event that opened the segment: its step */
	int64_t resumed_ckpt;     /* ... and its checkpoint step */
	int64_t ended_step;       /* the step it ended at; a record past it starts it again */
	int64_t max_steps;        /* the length it declared, -1 if none */
	struct gw_writers w;      /* several writers (writers.h) */
	struct gw_spike_cache spike;

	/* ---- verdicts and what detectors ask about */
	struct ckpt ckpts[CKPT_KEEP];   /* the last checkpoint_saved events, oldest first */
	uint64_t verdict_at[RUN_DET_MAX]; /* valid_records at a detector's latest verdict */
	struct incident *inc;     /* [detector][MAX_INCIDENTS], after the detectors' states */
	unsigned char *det_state; /* the detectors' states, in this allocation */
	struct gw_arena arena;
	struct gw_hist hist;      /* last: its rings are the bulk */
};

/* The restart a run's segment started with, or the inactive one. */
extern const struct gw_restart gw__no_restart;
static inline const struct gw_restart *gw__run_restart(const struct run *r)
{
	return r->restart ? r->restart : &gw__no_restart;
}

/* ---- the run table (runtab.c) */

struct gw_runtab {
	struct run **runs;        /* in the order they appeared (but for evictions) */
	size_t n, cap;
	struct gw_strtab by_name; /* run name -> index in runs */
	struct run *last;         /* the run of the last lookup (most lines are its) */
	/* where runs live (runtab.c): slabs of runs of slot_size bytes */
	size_t slot_size;
	struct slab *slabs;       /* every slab, to free */
	void *slab;               /* the one being filled ... */
	size_t slab_used;         /* ... this far */
	void *free_slots;         /* slots of removed runs, a list */
};

/* The run named name[0..len), or NULL. */
struct run *gw__runtab_find(struct gw_runtab *t, const char *name, size_t len);

/* A new run, with det_bytes of detector states and incidents after it
 * (incidents at inc_off), added to the table; NULL when out of memory.
 * The caller initialises the detectors' states. */
struct run *gw__runtab_add(struct gw_runtab *t, const char *name, size_t len, size_t det_bytes,
                           size_t inc_off);

/* Remove a run from the table (the last one takes its place) and free it. */
void gw__runtab_del(struct gw_runtab *t, struct run *r);

/* Free every run and the table. */
void gw__runtab_free(struct gw_runtab *t);

/* ---- segments (segment.c) */

/* Why a metric record starts a new segment (engine.c names them). */
enum gw__break {
	GW__NO_BREAK = -1,
	GW__BREAK_START,          /* the run's first line */
	GW__BREAK_REWIND,         /* a step at or before one already logged */
	GW__BREAK_GAP,            /* a wall-clock gap far beyond the step interval */
};

/* Does this metric record start a new segment, and why? */
enum gw__break gw__segment_break(const struct run *r, const struct gw_rec *rec);

/* Did this metric record arrive late, behind a later step (lines swapped
 * on the way)?  Then it is no rewind and never reaches the history. */
bool gw__arrived_late(const struct run *r, const struct gw_rec *rec);

/* The run's next segment starts (`restart` it restarts from checkpoint
 * step restart_step): the segment's state reset; at a restart the history
 * cut at restart_step and the regime before it snapshotted, with r->th
 * (current).  The engine then tells the hooks and the detectors. */
void gw__segment_start(struct run *r, bool restart_point, bool go_on, int64_t restart_step,
                       bool from_event);

/* A step interval inside a segment (never the restart gap itself). */
void gw__note_interval(struct run *r, double dt);

/* Where the run stands, for writers.c. */
void gw__writers_pos(const struct run *r, struct gw_writers_pos *pos);

/* ---- run endings (run_end.c; engine.h "Run endings") */
#define GW_RUN_FINISHED "run_finished"
void gw__run_end_record(struct run *r, const struct gw_rec *rec);
void gw__run_end_event(struct run *r, const struct gw_rec *rec);
void gw__run_end_mark(struct run *r, int64_t step);

#endif
