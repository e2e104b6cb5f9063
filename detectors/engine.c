/*
 * The detector engine (see engine.h): the runs, their segments, and the
 * dispatch of every line to the detectors in registry order.  Verdicts,
 * precedence and incidents are in verdict.c; the history in hist.c; the
 * restart regime in regime.c.
 *
 * A metric record takes the next slot of the run's history; a line that
 * only adds fields to the step of the previous line (some loggers split one
 * step over several lines) merges into that slot instead.  When a segment
 * restarts from checkpoint step S, the history gives up its records after S
 * as the replay copy (gw_hist_cut), the regime before S is snapshotted
 * (gw_regime_open), and the new records continue the timeline.
 *
 * A line that arrived late (lines swapped on the way; arrived_late()) is
 * not a rewind and never reaches the history: the timeline has moved past
 * its step.
 *
 * Which lines are the run's (ranks, interleaved writers) is writers.c's.
 *
 * Lines that carry neither a loss nor a grad norm (an lr-only line, an eval
 * summary) are stored by the daemon and count for segmentation, but do not
 * enter the history or reach the detectors: they would only dilute the
 * windows.
 * (Some 660 lines: a run's life -- creation, segments, late lines,
 * eviction and rebuilding -- shares the run table; split further, each
 * part would reach into the others' state.)
 */
#include "engine_impl.h"

#include "buf.h"
#include "log.h"
#include "robust.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GAP_MIN_INTERVALS 4   /* intervals known before a gap can split */

const char *gw_seg_reason_name(enum gw_seg_reason r)
{
	switch (r) {
	case GW_SEG_START: return "start";
	case GW_SEG_RESUMED: return "resumed";
	case GW_SEG_REWIND: return "rewind";
	case GW_SEG_GAP: return "gap";
	}
	return "?";
}

/* ---- runs ----------------------------------------------------------------- */

static const struct gw_thresholds *resolve_th(const struct gw_engine *e, const char *run)
{
	for (size_t i = 0; i < e->opts.n_overrides; i++)
		if (gw_glob_match(e->opts.overrides[i].glob, run))
			return &e->opts.overrides[i].th;
	return &e->opts.th;
}

/* Bring r->th up to date after gw_engine_reconfigure. */
static void refresh_th(const struct gw_engine *e, struct run *r)
{
	if (r->th_gen != e->th_gen) {
		r->th = resolve_th(e, r->name);
		r->th_gen = e->th_gen;
	}
}

static bool det_on(const struct gw_engine *e, size_t d)
{
	return !((e->opts.disabled >> d) & 1u) && (!gw_det_registry[d]->live_only || e->opts.live);
}

/* Does detector d get this line?  Off, or done for the segment. */
static bool det_called(const struct gw_engine *e, const struct run *r, size_t d)
{
	return det_on(e, d) &&
	       !(gw_det_registry[d]->once_per_segment && ((r->seg_fired >> d) & 1u));
}

static void ctx_init(struct gw_engine *e, struct run *r, struct gw_det_ctx *ctx,
                     const struct gw_rec *rec, uint64_t line, double now)
{
	refresh_th(e, r);
	*ctx = (struct gw_det_ctx){
		.rec = rec,
		.line = line,
		.now = now,
		.live = e->opts.live,
		.th = r->th,
		.hist = &r->hist,
		.restart = &r->restart,
		.valid_records = r->valid_records,
		.run_ended = r->ended,
		.max_steps = r->max_steps,
		.spike = &r->spike,
		.engine = e,
		.run_state = r,
	};
}

static struct run *run_new(struct gw_engine *e, const char *name, size_t len)
{
	struct run *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->name = malloc(len + 1);
	r->det_state = calloc(1, e->det_total ? e->det_total : 1);
	if (!r->name || !r->det_state) {
		free(r->name);
		free(r->det_state);
		free(r);
		return NULL;
	}
	memcpy(r->name, name, len);
	r->name[len] = '\0';
	r->last_step = -1;
	r->last_ts = NAN;
	r->last_wall = NAN;
	r->ended_step = -1;
	r->max_steps = -1;
	gw__writers_init(r);
	for (int c = 0; c < GW_NROLES; c++)
		r->last[c] = NAN;
	r->th_gen = e->th_gen - 1;
	struct gw_det_ctx ctx;
	ctx_init(e, r, &ctx, NULL, 0, NAN);
	for (size_t d = 0; d < e->ndet; d++) {
		ctx.det_index = (unsigned)d;
		if (gw_det_registry[d]->init)
			gw_det_registry[d]->init(r->det_state + e->det_off[d], &ctx);
	}
	return r;
}

static void run_free(struct run *r)
{
	for (int k = 0; k < CKPT_KEEP; k++)
		json_decref(r->ckpts[k].attrs);
	gw_hist_free(&r->hist);
	gw_spike_free(&r->spike);
	free(r->det_state);
	free(r->name);
	free(r);
}

static struct run *run_find(const struct gw_engine *e, const char *name, size_t len)
{
	uint32_t i;
	return gw_strtab_find(&e->by_name, name, len, &i) == 0 ? e->runs[i] : NULL;
}

static struct run *run_get(struct gw_engine *e, const char *name, size_t len, int *err)
{
	struct run *r = run_find(e, name, len);
	if (r)
		return r;
	if (e->opts.max_runs && e->nruns >= e->opts.max_runs) {
		*err = -ENOSPC;
		return NULL;
	}
	if (e->nruns >= UINT32_MAX ||
	    gw_grow((void **)&e->runs, &e->runs_cap, e->nruns + 1, sizeof(*e->runs)) < 0 ||
	    !(r = run_new(e, name, len))) {
		*err = -ENOMEM;
		return NULL;
	}
	if (gw_strtab_put(&e->by_name, r->name, len, (uint32_t)e->nruns) < 0) {
		run_free(r);
		*err = -ENOMEM;
		return NULL;
	}
	e->runs[e->nruns++] = r;
	return r;
}

/* ---- engine --------------------------------------------------------------- */

/* Detectors see only thresholds within their ranges: the configuration
 * loader refuses others with a message (thresholds.h), so a set that
 * fails here is a bug in the caller. */
static void require_thresholds(const struct gw_engine_opts *o)
{
	GW_REQUIRE(gw_thresholds_check(&o->th, NULL, 0) == 0);
	for (size_t i = 0; i < o->n_overrides; i++)
		GW_REQUIRE(gw_thresholds_check(&o->overrides[i].th, NULL, 0) == 0);
}

struct gw_engine *gw_engine_new(const struct gw_engine_opts *opts,
                                const struct gw_engine_hooks *hooks)
{
	require_thresholds(opts);
	struct gw_engine *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->opts = *opts;
	if (hooks)
		e->hooks = *hooks;
	e->th_gen = 1;
	size_t off = 0;
	for (e->ndet = 0; gw_det_registry[e->ndet]; e->ndet++) {
		GW_REQUIRE(e->ndet < GW_ARRAY_SIZE(e->det_off));
		e->det_off[e->ndet] = off;
		off += (gw_det_registry[e->ndet]->state_size + 15) & ~(size_t)15;
	}
	e->det_total = off;
	for (const struct gw_det_precedence *p = gw_det_precedence; p->winner; p++) {
		int w = gw_det_index(p->winner), l = gw_det_index(p->loser);
		GW_REQUIRE(w >= 0 && l >= 0 && e->nprec < MAX_PREC);   /* a bug in registry.c */
		e->prec[e->nprec++] = (struct prec){(unsigned)w, (unsigned)l, p->loser_rule, p->scope};
	}
	return e;
}

void gw_engine_free(struct gw_engine *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->nruns; i++)
		run_free(e->runs[i]);
	free(e->runs);
	gw_strtab_free(&e->by_name);
	free(e);
}

void gw_engine_reconfigure(struct gw_engine *e, const struct gw_engine_opts *opts)
{
	require_thresholds(opts);
	e->opts = *opts;
	e->th_gen++;
}

size_t gw_engine_run_count(const struct gw_engine *e)
{
	return e->nruns;
}

size_t gw_engine_bytes_per_run(void)
{
	size_t det = 0;
	for (size_t d = 0; gw_det_registry[d]; d++)
		det += (gw_det_registry[d]->state_size + 15) & ~(size_t)15;
	/* the replay copy exists once the run restarted with an overlap; the
	 * name, its slot in the run list and in the index */
	return sizeof(struct run) + det + sizeof(struct gw_replayed) * GW_REPLAY_CAP +
	       GW_WIRE_RUN_MAX + 2 * sizeof(struct run *) + 4 * sizeof(struct gw_strtab_slot);
}

/* ---- segments -------------------------------------------------------------- */

static void open_segment(struct gw_engine *e, struct run *r, enum gw_seg_reason why,
                         int64_t first_step, int64_t restart_step, uint64_t line,
                         double ts, double now)
{
	r->seg++;
	if (why != GW_SEG_START)
		r->ended = false;   /* a restart: the job goes on */
	r->seg_records = 0;
	r->seg_fired = 0;
	r->seg_from_event = why == GW_SEG_RESUMED;
	memset(&r->restart, 0, sizeof(r->restart));
	if (why != GW_SEG_START && restart_step >= 0) {
		int64_t T = gw_hist_cut(&r->hist, restart_step);
		refresh_th(e, r);
		gw_regime_open(&r->restart, restart_step, T, &r->hist, r->th);
	} else {
		gw_hist_end_replay(&r->hist);
	}
	if (e->hooks.on_segment && !e->quiet) {
		struct gw_segment_info si = {
			.run = r->name, .seg = r->seg, .reason = why,
			.first_step = first_step, .restart_step = restart_step,
			.line = line, .ts = ts,
		};
		e->hooks.on_segment(e->hooks.data, &si);
	}
	if (r->seg == 1)
		return;
	struct gw_det_ctx ctx;
	ctx_init(e, r, &ctx, NULL, line, now);
	for (size_t d = 0; d < e->ndet; d++) {
		const struct gw_detector *det = gw_det_registry[d];
		if (!det_on(e, d) || !det->on_segment)
			continue;
		ctx.det_index = (unsigned)d;
		det->on_segment(r->det_state + e->det_off[d], &ctx);
	}
}

double gw__median_dts(const struct run *r)
{
	double tmp[GAP_HIST];
	memcpy(tmp, r->dts, r->ndts * sizeof(double));
	return gw_median(tmp, r->ndts);
}

/* Does this metric record start a new segment?  -1: no. */
static int segment_break(const struct run *r, const struct gw_rec *rec)
{
	if (r->seg == 0)
		return GW_SEG_START;
	if (r->seg_from_event)
		return -1;   /* the resumed event opened it; this line is its first */
	bool rewind = rec->step < r->last_step ||
	              (rec->step == r->last_step && (rec->present & r->last_present));
	if (rewind)
		return GW_SEG_REWIND;
	/* the gap needs at least gap_min_seconds: the median only past that */
	if (!isnan(rec->ts) && !isnan(r->last_ts) && r->ndts >= GAP_MIN_INTERVALS &&
	    rec->ts - r->last_ts > r->th->gap_min_seconds) {
		double need = fmax(r->th->gap_min_seconds, r->th->gap_factor * gw__median_dts(r));
		if (rec->ts - r->last_ts > need)
			return GW_SEG_GAP;
	}
	return -1;
}

/* Did this metric record arrive late, behind a later step (lines swapped
 * on the way: UDP, two writers)?  Its step lies strictly between the
 * newest step of the history below the last step and the last step, and
 * its ts (if both are known) is not after the last line's.  A restart
 * replays steps that were logged (S+1..T), or, when its first step was
 * lost, comes a restart gap later: neither passes. */
static bool arrived_late(const struct run *r, const struct gw_rec *rec)
{
	if (r->seg_from_event || !(rec->step < r->last_step) || r->seg_records < 2)
		return false;
	if (!isnan(rec->ts) && !isnan(r->last_ts) && rec->ts > r->last_ts)
		return false;
	struct gw_hist_rec h;
	for (size_t i = 0; i < 2 && gw_hist_at(&r->hist, i, &h); i++)
		if (h.step < r->last_step)
			return rec->step > h.step;
	return false;
}

/* ---- lines ------------------------------------------------------------------ */

static void dispatch(struct gw_engine *e, struct run *r, const struct gw_rec *rec,
                     uint64_t line, double now, bool is_event)
{
	struct gw_det_ctx ctx;
	ctx_init(e, r, &ctx, rec, line, now);
	for (size_t d = 0; d < e->ndet; d++) {
		const struct gw_detector *det = gw_det_registry[d];
		if (!det_called(e, r, d))
			continue;
		ctx.det_index = (unsigned)d;
		void (*fn)(void *, const struct gw_det_ctx *) =
			is_event ? det->on_event : det->on_record;
		if (fn)
			fn(r->det_state + e->det_off[d], &ctx);
	}
}

static void feed_event(struct gw_engine *e, struct run *r, const struct gw_rec *rec,
                       uint64_t line, double now)
{
	r->events++;
	if (gw__writers_fold_event(e, r, rec))
		return;
	if (strcmp(rec->event, "resumed") == 0) {
		int64_t s = gw__checkpoint_step(rec);
		open_segment(e, r, GW_SEG_RESUMED, rec->step, s, line, rec->ts, now);
		r->resumed_step = rec->step;
		r->resumed_ckpt = s;
		r->last_step = -1;
		r->last_present = 0;
	} else if (strcmp(rec->event, "checkpoint_saved") == 0) {
		json_decref(r->ckpts[0].attrs);
		memmove(r->ckpts, r->ckpts + 1, sizeof(r->ckpts[0]) * (CKPT_KEEP - 1));
		r->ckpts[CKPT_KEEP - 1] = (struct ckpt){json_incref(rec->attrs), rec->step, line};
		if (r->seg == 0)
			open_segment(e, r, GW_SEG_START, rec->step, -1, line, rec->ts, now);
	} else if (r->seg == 0) {
		open_segment(e, r, GW_SEG_START, rec->step, -1, line, rec->ts, now);
	}
	gw__run_end_event(r, rec);
	dispatch(e, r, rec, line, now, true);
	if (!isnan(rec->ts))
		r->last_ts = rec->ts;
}

static void feed_record(struct gw_engine *e, struct run *r, const struct gw_rec *rec,
                        uint64_t line, double now)
{
	bool metric = gw_rec_has(rec, GW_ROLE_LOSS) || gw_rec_has(rec, GW_ROLE_GRAD_NORM);
	if (gw__writers_fold_record(e, r, rec))
		return;
	if (arrived_late(r, rec)) {
		r->records++;   /* stored by the daemon; the timeline has moved past it */
		r->present_ever |= rec->present;
		return;
	}
	int why = segment_break(r, rec);
	if (why == GW_SEG_REWIND && !r->interleaved && gw__writers_rewind(e, r, rec, line))
		return;
	if (why >= 0) {
		int64_t s = why == GW_SEG_REWIND || why == GW_SEG_GAP ? rec->step - 1 : -1;
		open_segment(e, r, (enum gw_seg_reason)why, rec->step, s, line, rec->ts, now);
	}
	bool merge = r->seg_records > 0 && rec->step == r->last_step &&
	             !(rec->present & r->last_present);
	if (!isnan(rec->ts) && !isnan(r->last_ts) && why < 0 && !merge &&
	    rec->ts >= r->last_ts) {
		/* step intervals inside a segment, never the restart gap itself */
		if (r->ndts == GAP_HIST)
			memmove(r->dts, r->dts + 1, sizeof(double) * (GAP_HIST - 1));
		else
			r->ndts++;
		r->dts[r->ndts - 1] = rec->ts - r->last_ts;
	}
	for (int c = 0; c < GW_NROLES; c++)
		if (gw_rec_has(rec, c))
			r->last[c] = rec->v[c];
	r->present_ever |= rec->present;
	if (merge) {
		gw_hist_merge_last(&r->hist, rec);
		r->last_present |= rec->present;
	} else {
		r->last_present = rec->present;
		r->last_step = rec->step;
		r->records++;
		r->seg_from_event = false;
	}
	if (!isnan(rec->ts))
		r->last_ts = rec->ts;
	if (rec->step > r->hi_step || why >= 0)
		r->hi_step = rec->step;
	gw__run_end_record(r, rec);
	if (merge || !metric)
		return;   /* stored, but nothing new for the detectors */
	gw_hist_push(&r->hist, rec);
	r->seg_records++;
	struct gw_hist_rec cur;
	gw_hist_at(&r->hist, 0, &cur);
	if (cur.valid)
		r->valid_records++;
	if (r->restart.active) {
		r->restart.k = r->seg_records;
		gw_regime_update(&r->restart, &cur, r->th);
	}
	dispatch(e, r, rec, line, now, false);
}

/* Tell the on_ended hook when the run has ended since (was, was_seg,
 * was_step): newly, or again after it went on. */
static void say_ended(struct gw_engine *e, const struct run *r, bool was, int64_t was_seg,
                      int64_t was_step, const char *reason)
{
	if (!r->ended || e->quiet || !e->hooks.on_ended ||
	    (was && was_seg == r->seg && was_step == r->ended_step))
		return;
	struct gw_end_info en = {.run = r->name, .seg = r->seg, .step = r->ended_step,
	                         .reason = reason};
	e->hooks.on_ended(e->hooks.data, &en);
}

int gw_engine_feed(struct gw_engine *e, const struct gw_rec *rec, uint64_t line,
                   double now, int64_t *seg_out)
{
	int err = 0;
	e->apart = false;
	struct run *r = run_get(e, rec->run, rec->run_len, &err);
	if (!r)
		return err;
	refresh_th(e, r);
	if (rec->has_rank && !gw__writers_primary(e, r, rec, now)) {
		if (seg_out)
			*seg_out = r->seg;
		return 0;   /* another rank's: its position only */
	}
	r->last_wall = now;
	bool was = r->ended;
	int64_t was_seg = r->seg, was_step = r->ended_step;
	if (rec->event)
		feed_event(e, r, rec, line, now);
	else
		feed_record(e, r, rec, line, now);
	say_ended(e, r, was, was_seg, was_step,
	          rec->event && strcmp(rec->event, GW_RUN_FINISHED) == 0 ? GW_RUN_FINISHED
	                                                               : "max_steps");
	if (seg_out)
		*seg_out = r->seg;
	return 0;
}

int gw_engine_set_interleaved(struct gw_engine *e, const char *run)
{
	struct run *r = run_find(e, run, strlen(run));
	if (!r)
		return -ENOENT;
	r->interleaved = true;   /* writers.c: repeats are folded */
	return 0;
}

void gw_engine_tick(struct gw_engine *e, double now)
{
	for (size_t i = 0; i < e->nruns; i++) {
		struct run *r = e->runs[i];
		if (r->seg == 0)
			continue;
		struct gw_det_ctx ctx;
		ctx_init(e, r, &ctx, NULL, 0, now);
		for (size_t d = 0; d < e->ndet; d++) {
			const struct gw_detector *det = gw_det_registry[d];
			if (!det_called(e, r, d) || !det->on_tick)
				continue;
			ctx.det_index = (unsigned)d;
			det->on_tick(r->det_state + e->det_off[d], &ctx);
		}
	}
}

int gw_engine_run_ended(struct gw_engine *e, const char *run, const char *reason, double now)
{
	struct run *r = run_find(e, run, strlen(run));
	if (!r || r->seg == 0)
		return -ENOENT;
	json_t *attrs = json_pack("{s:s}", "reason", reason ? reason : "");
	if (!attrs)
		return -ENOMEM;
	struct gw_rec rec = {
		.run = r->name, .run_len = strlen(r->name), .step = GW_MAX(r->last_step, 0),
		.ts = NAN, .event = GW_RUN_FINISHED, .attrs = attrs,
	};
	bool was = r->ended;
	int64_t was_seg = r->seg, was_step = r->ended_step;
	gw__run_end_mark(r, rec.step);
	dispatch(e, r, &rec, 0, now, true);
	json_decref(attrs);
	say_ended(e, r, was, was_seg, was_step, reason ? reason : "");
	return 0;
}

int gw_engine_restarted(struct gw_engine *e, const char *run, double down_from, double now)
{
	struct run *r = run_find(e, run, strlen(run));
	if (!r || r->seg == 0)
		return -ENOENT;
	struct gw_det_ctx ctx;
	ctx_init(e, r, &ctx, NULL, 0, now);
	bool watched = false;
	for (size_t d = 0; d < e->ndet; d++) {
		const struct gw_detector *det = gw_det_registry[d];
		if (!det_called(e, r, d) || !det->on_restart)
			continue;
		ctx.det_index = (unsigned)d;
		watched |= det->on_restart(r->det_state + e->det_off[d], &ctx, down_from);
	}
	return watched;
}

int gw_engine_seed_run(struct gw_engine *e, const char *run, int64_t seg,
                       int64_t last_step, double last_ts)
{
	int err = 0;
	struct run *r = run_get(e, run, strlen(run), &err);
	if (!r)
		return err;
	if (r->seg != 0)
		return -EALREADY;
	r->seg = seg;
	r->last_step = last_step;
	r->last_present = (1u << GW_NROLES) - 1; /* a repeat of last_step is a rewind */
	r->last_ts = last_ts;
	return 0;
}

/* ---- what the engine tells about runs --------------------------------------- */

static void fill_info(const struct gw_engine *e, const struct run *r, struct gw_run_info *ri)
{
	memset(ri, 0, sizeof(*ri));
	ri->watch_until = -INFINITY;
	ri->run = r->name;
	ri->seg = r->seg;
	ri->last_step = r->last_step;
	ri->last_ts = r->last_ts;
	ri->last_wall = r->last_wall;
	ri->present = r->present_ever;
	memcpy(ri->last, r->last, sizeof(ri->last));
	ri->records = r->records;
	ri->events = r->events;
	ri->ended = r->ended;
	ri->max_steps = r->max_steps;
	gw__writers_info(r, ri);
	for (size_t d = 0; d < GW_DET_MAX && gw_det_registry[d]; d++)
		for (int k = 0; k < MAX_INCIDENTS; k++) {
			bool open = r->inc[d][k].used && r->inc[d][k].open;
			ri->open_alerts += open;
			ri->open_live += open && gw_det_registry[d]->on_tick;
		}
	for (size_t d = 0; d < e->ndet; d++) {
		const struct gw_detector *det = gw_det_registry[d];
		if (det->watch_until && det_called(e, r, d))
			ri->watch_until = fmax(ri->watch_until,
			                       det->watch_until(r->det_state + e->det_off[d]));
	}
}

int gw_engine_run_info(const struct gw_engine *e, const char *run,
                       struct gw_run_info *out)
{
	const struct run *r = run_find(e, run, strlen(run));
	if (!r)
		return -ENOENT;
	fill_info(e, r, out);
	return 0;
}

const struct gw_hist *gw_engine_hist(const struct gw_engine *e, const char *run)
{
	const struct run *r = run_find(e, run, strlen(run));
	return r ? &r->hist : NULL;
}

/* ---- active runs: eviction and quiet re-feeding ----------------------------------- */

bool gw_engine_has_run(const struct gw_engine *e, const char *run, size_t len)
{
	return run_find(e, run, len) != NULL;
}

int gw_engine_evict(struct gw_engine *e, const char *run, struct gw_run_info *last)
{
	uint32_t i;
	size_t len = strlen(run);
	if (gw_strtab_del(&e->by_name, run, len, &i) < 0)
		return -ENOENT;
	struct run *r = e->runs[i];
	if (last) {
		fill_info(e, r, last);
		last->run = NULL;   /* its name goes with it */
	}
	/* the last run takes its place in the list (and in the index) */
	struct run *moved = e->runs[--e->nruns];
	if (moved != r) {
		e->runs[i] = moved;
		gw_strtab_set(&e->by_name, moved->name, strlen(moved->name), i);
	}
	run_free(r);
	return 0;
}

bool gw_engine_quiet(struct gw_engine *e, bool quiet)
{
	bool was = e->quiet;
	e->quiet = quiet;
	return was;
}

void gw_engine_foreach_run(const struct gw_engine *e,
                           void (*fn)(void *data, const struct gw_run_info *ri),
                           void *data)
{
	for (size_t i = 0; i < e->nruns; i++) {
		struct gw_run_info ri;
		fill_info(e, e->runs[i], &ri);
		fn(data, &ri);
	}
}
