/*
 * The detector interface.
 *
 * A detector is one `const struct gw_detector` of function pointers and a
 * per-run state blob of `state_size` bytes that the engine allocates, zeroes
 * and hands back on every call.  Detectors are pure: they see records and
 * events through a read-only context (struct gw_det_ctx), keep bounded state,
 * and report verdicts with gw_det_raise() / gw_det_resolve().  They do no I/O
 * and know nothing of sockets, SQLite or webhooks.  The registry
 * (gw_det_registry) lists them in the order they run.
 *
 * Incidents: a verdict names an incident key chosen by the detector (a
 * counter it bumps for each new incident is enough).  The first verdict for a
 * key opens an alert; later verdicts for the same key update it (the engine
 * passes an update on only when the severity rises or the detector asks for
 * it); gw_det_resolve() closes it.  So one incident gives one alert, not one
 * per step.
 */
#ifndef GW_DETECTOR_H
#define GW_DETECTOR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "thresholds.h"
#include "wire.h"

enum gw_severity {
	GW_SEV_INFO,
	GW_SEV_WARNING,
	GW_SEV_CRITICAL,
};

const char *gw_severity_name(enum gw_severity s);
int gw_severity_parse(const char *s); /* -1 if unknown */

/* Why a segment started. */
enum gw_seg_reason {
	GW_SEG_START,    /* first record of the run */
	GW_SEG_RESUMED,  /* a "resumed" event */
	GW_SEG_REWIND,   /* a step at or before one already logged */
	GW_SEG_GAP,      /* a wall-clock gap far beyond the run's step interval */
};

const char *gw_seg_reason_name(enum gw_seg_reason r);

/* Columns of the per-run history ring. */
enum gw_col {
	GW_COL_LOSS = GW_ROLE_LOSS,
	GW_COL_GRAD_NORM = GW_ROLE_GRAD_NORM,
	GW_COL_LR = GW_ROLE_LR,
	GW_COL_THROUGHPUT = GW_ROLE_THROUGHPUT,
	GW_COL_TS,
	GW_NCOLS,
};

/* Most detectors a registry may hold. */
#define GW_DET_MAX 16

/* Capacity of the history ring (records per run); a power of two. */
#define GW_RING_CAP 512u

/* A window of one column as at most two contiguous spans, oldest first.
 * Absent values are NaN. */
struct gw_win {
	const double *a;
	size_t na;
	const double *b;
	size_t nb;
};

static inline size_t gw_win_len(const struct gw_win *w)
{
	return w->na + w->nb;
}

/* Value i (0 = oldest) of a window. */
static inline double gw_win_at(const struct gw_win *w, size_t i)
{
	return i < w->na ? w->a[i] : w->b[i - w->na];
}

/* History of a run: the current segment's records and, once a run has
 * restarted, a frozen copy of the previous segment's tail. */
struct gw_hist;

/* What a detector sees of a run. */
struct gw_det_ctx {
	const char *run;
	int64_t seg;                  /* 1-based segment number */
	enum gw_seg_reason seg_reason;
	int64_t seg_first_step;       /* first metric step of the segment, -1 if none yet */
	int64_t restart_step;         /* S: checkpoint step the segment restarted from, -1 */
	uint64_t seg_records;         /* metric records in the segment so far */
	const struct gw_thresholds *th;
	const struct gw_hist *hist;

	/* The line being processed (record or event) */
	const struct gw_rec *rec;
	uint64_t line;
	double now;                   /* wall clock (live) or the record's ts (replay) */
	bool live;                    /* false in replay: wall-clock detectors stay quiet */

	/* Events of the run: the last checkpoint_saved and the resumed event
	 * that opened this segment (borrowed; NULL if none). */
	const json_t *last_checkpoint;
	int64_t last_checkpoint_step;
	const json_t *resumed;

	/* engine internals for gw_det_raise */
	void *engine;
	void *run_state;
	unsigned det_index;
};

/* Window of the last n metric records of the current segment (fewer if the
 * segment or the ring holds fewer). */
struct gw_win gw_hist_recent(const struct gw_hist *h, enum gw_col col, size_t n);

/* Steps of the same window (same indexing as gw_hist_recent). */
int64_t gw_hist_step_at(const struct gw_hist *h, size_t n, size_t i);

/* Window of the previous segment's records with step <= upto (the
 * pre-checkpoint regime), at most n of them, ending at the last such record.
 * Empty when the run has not restarted or the ring did not reach that far. */
struct gw_win gw_hist_prev(const struct gw_hist *h, enum gw_col col, int64_t upto,
                           size_t n);

/* Value of column col that the previous segment logged at `step`, NaN if
 * none (for the replayed-step comparison). */
double gw_hist_prev_at_step(const struct gw_hist *h, enum gw_col col, int64_t step);

/* Last step of the previous segment (T), -1 if none. */
int64_t gw_hist_prev_last_step(const struct gw_hist *h);

/* A verdict. */
struct gw_verdict {
	uint32_t incident;          /* detector-chosen key of the incident */
	enum gw_severity severity;
	bool force_update;          /* pass the update on even without escalation */
	char summary[512];          /* one sentence with the numbers in it */
	char cause[256];            /* likely cause */
	char action[256];           /* what to check */
	json_t *evidence;           /* stolen: the engine takes the reference */
};

/* Report a verdict (opens or updates the incident's alert). */
void gw_det_raise(const struct gw_det_ctx *ctx, struct gw_verdict *v);

/* Close an open incident (the alert's endsAt); no-op if not open. */
void gw_det_resolve(const struct gw_det_ctx *ctx, uint32_t incident);

struct gw_detector {
	const char *name;          /* the detector vocabulary of docs/detectors.md */
	size_t state_size;         /* bytes of per-run state, zeroed before init */
	bool live_only;            /* needs the wall clock (stall) */

	/* Optional hooks; NULL when not needed. */
	void (*init)(void *state, const struct gw_det_ctx *ctx);
	/* A new segment started (before its first record or right at the
	 * resumed event). */
	void (*on_segment)(void *state, const struct gw_det_ctx *ctx);
	/* A metric record, already appended to the history. */
	void (*on_record)(void *state, const struct gw_det_ctx *ctx);
	/* An event line (ctx->rec->event, ctx->rec->attrs). */
	void (*on_event)(void *state, const struct gw_det_ctx *ctx);
	/* Periodic wall-clock tick (live only), ctx->rec is NULL. */
	void (*on_tick)(void *state, const struct gw_det_ctx *ctx);
};

/* The registry: NULL-terminated, in run order. */
extern const struct gw_detector *const gw_det_registry[];

/* Detector by name, or NULL. */
const struct gw_detector *gw_det_find(const char *name);

/* Format helpers for summaries: a number with 2-3 significant digits
 * ("0.61", "2.19", "1.2e-05"), and an integer with thousands separators
 * ("8,500").  Return buf. */
const char *gw_det_fmt_num(char *buf, size_t size, double v);
const char *gw_det_fmt_step(char *buf, size_t size, int64_t step);

#endif
