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

/* Pre-crash copies kept at a restart for the replayed-step comparison. */
#define GW_REPLAY_CAP 256u

/* Post-resume samples kept for the regime windows (>= post_window_long). */
#define GW_POST_CAP 32u

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

/* History of a run: its *timeline*, the last GW_RING_CAP metric records
 * that still stand.  At a restart from checkpoint step S the records with
 * step > S (logged before the crash and thrown away by it) leave the
 * timeline and become the run's replay copy; the restarted process's
 * records continue the timeline after S.  The line being processed is
 * already in it (index 0 of gw_hist_at). */
struct gw_hist;

/* Window of the last n records of the timeline (fewer if it holds fewer). */
struct gw_win gw_hist_recent(const struct gw_hist *h, enum gw_col col, size_t n);

/* One record; i = 0 is the newest.  valid: loss and grad norm both finite
 * and > 0 (only valid records enter statistics). */
struct gw_hist_rec {
	int64_t step;
	uint64_t line;
	double loss, grad_norm, lr, throughput, ts;
	bool valid;
};
bool gw_hist_at(const struct gw_hist *h, size_t i, struct gw_hist_rec *out);

/* The valid records only (loss and grad norm finite and > 0), which is
 * what every statistic reads.  Columns: */
enum gw_vcol {
	GW_V_LOSS,
	GW_V_GRAD_NORM,
	GW_V_LOG_LOSS,
	GW_V_LOG_GRAD_NORM,
	GW_V_LR,
	GW_NVCOLS,
};

/* Window of column col over the `count` newest valid records after skipping
 * the `skip` newest, oldest first, in place (no copy); shorter when the
 * timeline holds fewer. */
struct gw_win gw_hist_valid(const struct gw_hist *h, enum gw_vcol col, size_t count, size_t skip);

/* Step of record i (0 = oldest) of the same window, -1 if out of range. */
int64_t gw_hist_valid_step(const struct gw_hist *h, size_t count, size_t skip, size_t i);

/* The same window copied into arrays (any may be NULL).  Returns its length. */
size_t gw_hist_last_valid(const struct gw_hist *h, size_t count, size_t skip, double *loss,
                          double *grad_norm, double *lr, int64_t *step);

/* Copy a window into out (gw_win_len(w) doubles). */
static inline void gw_win_copy(const struct gw_win *w, double *out)
{
	for (size_t i = 0; i < w->na; i++)
		out[i] = w->a[i];
	for (size_t i = 0; i < w->nb; i++)
		out[w->na + i] = w->b[i];
}

/* The pre-crash copy of `step`, if the current segment replays it. */
struct gw_replayed {
	int64_t step;
	double loss, grad_norm, lr;
	bool valid;
};
const struct gw_replayed *gw_hist_replayed(const struct gw_hist *h, int64_t step);

/* Pre-crash copies held for the current segment (0 without overlap). */
size_t gw_hist_replay_count(const struct gw_hist *h);

/* The restart a segment started with, and what the resume detectors share
 * about it: the pre-checkpoint regime and the post-resume windows.  The
 * engine maintains it (regime.c); detectors read it. */
struct gw_post_sample {
	int64_t k;        /* post-resume line number (1 = first after the restart) */
	double u;         /* loss - regime median, in loss sigmas (linear) */
	double ul;        /* log(loss / regime median) */
	double v;         /* log grad norm - regime median, in log sigmas */
	double vl;        /* log(grad norm / regime median) */
	bool lr_ok;       /* LR within or_lr_drift of the LR at S */
};

struct gw_post_stat {
	bool ready;       /* enough samples to judge */
	size_t n;
	int64_t k0, k1;   /* first and last post-resume line in the window */
	double mu, mul, mv, mvl;  /* medians of u, ul, v, vl */
	bool all_lr_ok;
	double scale;     /* sqrt(post_window / this window): scales sigma thresholds */
};

struct gw_restart {
	bool active;             /* the segment started from a restart point S */
	int64_t S, T;            /* checkpoint step; last pre-crash step (S if none replayed) */
	uint64_t k;              /* metric lines since the restart */
	/* pre-checkpoint regime: the last pre_window valid records up to S */
	bool pre_ok;
	size_t pre_n;
	int64_t pre_from, pre_to;
	double mL, sL;           /* loss median and noise (linear, nats) */
	double mG, sG;           /* log grad norm median and noise */
	double lrS, lrS1;        /* LR of the newest and second-newest records up to S (NaN if none) */
	/* moments of the same window (kernels), for evidence */
	double loss_mean, loss_sd, loss_slope, log_gn_mean, log_gn_sd, corr;
	/* the first post-resume record */
	bool has_first;
	struct gw_hist_rec first;
	/* post-resume samples (k >= 2) and the two judged windows */
	struct gw_post_sample post[GW_POST_CAP];
	size_t npost;            /* samples held (FIFO, newest last) */
	struct gw_post_stat win[2];  /* [0] short window, [1] long window */
};

/* What detectors of one run share beyond the history (bounded, owned by the
 * engine, zeroed when the run appears). */
/* The spike detectors' view of a valid line (regime.c, gw_spike_stat): for
 * loss and grad norm in log space, the median and noise of the baseline
 * window, the median of the short window (this line included), z, and the
 * log ratio of the two medians. */
struct gw_spike_series {
	double med, s, mc, z, rel;
};
struct gw_spike_stat {
	bool ok;                 /* false while the history is too short */
	int64_t base_from, base_to, cur_from, cur_to;
	size_t base_n, cur_n;
	struct gw_spike_series loss, gn;
};

struct gw_run_shared {
	uint64_t valid_records;  /* valid metric records of the run so far */
	bool gx_mark_set;        /* a grad_explosion episode started ... */
	uint64_t gx_mark;        /* ... when valid_records was this */
	uint64_t spike_for;      /* valid_records the cache below was computed at */
	struct gw_spike_stat spike;
};

/* What a detector sees of a run. */
struct gw_det_ctx {
	const char *run;
	int64_t seg;                  /* 1-based segment number */
	enum gw_seg_reason seg_reason;
	int64_t seg_first_step;       /* first metric step of the segment, -1 if none yet */
	int64_t restart_step;         /* S: checkpoint step the segment restarted from, -1 */
	uint64_t seg_records;         /* metric records in the segment so far (k) */
	const struct gw_thresholds *th;
	const struct gw_hist *hist;
	const struct gw_restart *restart;
	struct gw_run_shared *shared;

	/* The line being processed (record or event) */
	const struct gw_rec *rec;
	uint64_t line;
	double now;                   /* wall clock (live) or NaN (replay) */
	bool live;                    /* false in replay: wall-clock detectors stay quiet */

	/* The resumed event that opened this segment (borrowed; NULL if none). */
	const json_t *resumed;

	/* engine internals for gw_det_raise */
	void *engine;
	void *run_state;
	unsigned det_index;
};

/* The checkpoint_saved a restart from step S restarts from: the one saved
 * at S if recorded, else the newest before S, else NULL (the engine keeps
 * the run's last 4).  *step / *line get its step and line. */
const json_t *gw_det_checkpoint_for(const struct gw_det_ctx *ctx, int64_t S, int64_t *step,
                                    uint64_t *line);

/* Has detector `name` raised a warning or critical alert in this segment? */
bool gw_det_fired(const struct gw_det_ctx *ctx, const char *name);

/* A verdict. */
struct gw_verdict {
	uint32_t incident;          /* detector-chosen key of the incident */
	bool step_set;              /* report `step` instead of the line's step */
	int64_t step;
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

/* Index of a detector in the registry by name, or -1. */
int gw_det_index(const char *name);

/* Format helpers for summaries: a number with 2-3 significant digits
 * ("0.61", "2.19", "1.2e-05"), and an integer with thousands separators
 * ("8,500").  Return buf. */
const char *gw_det_fmt_num(char *buf, size_t size, double v);

/* A change given as a log ratio, as a signed percentage ("+12%", "-33%"). */
const char *gw_det_fmt_pct(char *buf, size_t size, double logratio);

/* A number for evidence: a JSON real, or null when not finite (json_pack's
 * "f" fails on NaN and the whole evidence would be lost). */
json_t *gw_det_num(double v);
const char *gw_det_fmt_step(char *buf, size_t size, int64_t step);

#endif
