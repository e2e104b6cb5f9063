/*
 * The detector engine (see engine.h): a line's way from gw_engine_feed to
 * the detectors, in registry order.  The run table is engine_runs.c's,
 * segments segment.c's, which lines are the run's (ranks, interleaved
 * writers) writers.c's, verdicts and incidents verdict.c's, run endings
 * run_end.c's; the history is hist.c's, the restart regime regime.c's.
 *
 * A metric record takes the next slot of the run's history; a line that
 * only adds fields to the step of the previous line (some loggers split one
 * step over several lines) merges into that slot instead.  A line that
 * arrived late (lines swapped on the way) is not a rewind and never reaches
 * the history: the timeline has moved past its step.  Lines that carry
 * neither a loss nor a grad norm (an lr-only line, an eval summary) are
 * stored by the daemon and count for segmentation, but do not enter the
 * history or reach the detectors: they would only dilute the windows.
 * Each line calls only the detectors with a hook for it (a mask made when
 * the engine is made or reconfigured).
 */
#include "engine_impl.h"

#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- runs -------------------------------------------------------------------- */

static const struct gw_thresholds *resolve_th(const struct gw_engine *e, const char *run)
{
	for (size_t i = 0; i < e->opts.n_overrides; i++)
		if (gw_glob_match(e->opts.overrides[i].glob, run))
			return &e->opts.overrides[i].th;
	return &e->opts.th;
}

void gw__run_refresh_th(const struct gw_engine *e, struct run *r)
{
	if (r->th_gen != e->th_gen) {
		r->th = resolve_th(e, r->name);
		r->th_gen = e->th_gen;
	}
}

bool gw__det_on(const struct gw_engine *e, size_t d)
{
	return !((e->opts.disabled >> d) & 1u) && (!gw_det_registry[d]->live_only || e->opts.live);
}

/* The context a hook sees (det_index left 0). */
static void ctx_init(struct gw_engine *e, struct run *r, struct gw_det_ctx *ctx,
                     const struct gw_rec *rec, uint64_t line, double now)
{
	gw__run_refresh_th(e, r);
	*ctx = (struct gw_det_ctx){
		.rec = rec,
		.line = line,
		.now = now,
		.live = e->opts.live,
		.th = r->th,
		.hist = &r->hist,
		.restart = gw__run_restart(r),
		.valid_records = r->valid_records,
		.run_ended = r->ended,
		.max_steps = r->max_steps,
		.spike = &r->spike,
		.engine = e,
		.run_state = r,
	};
}

struct run *gw__run_get(struct gw_engine *e, const char *name, size_t len, int *err)
{
	struct run *r = gw__runtab_find(&e->runs, name, len);
	if (r)
		return r;
	if (e->opts.max_runs && e->runs.n >= e->opts.max_runs) {
		*err = -ENOSPC;
		return NULL;
	}
	if (!(r = gw__runtab_add(&e->runs, name, len, e->det_total, e->det_off[e->ndet]))) {
		*err = -ENOMEM;
		return NULL;
	}
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

/* Does detector d get this line?  On, and not done for the segment. */
static bool det_called(const struct gw_engine *e, const struct run *r, size_t d)
{
	return gw__det_on(e, d) &&
	       !(gw_det_registry[d]->once_per_segment && ((r->seg_fired >> d) & 1u));
}

/* ---- the engine ------------------------------------------------------------ */

/* Detectors see only thresholds within their ranges: the configuration
 * loader refuses others with a message (thresholds.h), so a set that
 * fails here is a bug in the caller. */
static void require_thresholds(const struct gw_engine_opts *o)
{
	GW_REQUIRE(gw_thresholds_check(&o->th, NULL, 0) == 0);
	for (size_t i = 0; i < o->n_overrides; i++)
		GW_REQUIRE(gw_thresholds_check(&o->overrides[i].th, NULL, 0) == 0);
}

/* Which detectors have which hooks, on in this engine. */
static void hooks_on(struct gw_engine *e)
{
	e->on_record = e->on_event = 0;
	for (size_t d = 0; d < e->ndet; d++) {
		if (!gw__det_on(e, d))
			continue;
		if (gw_det_registry[d]->on_record)
			e->on_record |= 1u << d;
		if (gw_det_registry[d]->on_event)
			e->on_event |= 1u << d;
	}
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
		GW_REQUIRE(e->ndet < GW_ARRAY_SIZE(e->det_off) - 1);
		e->det_off[e->ndet] = off;
		off += (gw_det_registry[e->ndet]->state_size + 15) & ~(size_t)15;
	}
	/* the incidents follow the states */
	e->det_off[e->ndet] = off;
	e->det_total = off + e->ndet * MAX_INCIDENTS * sizeof(struct incident);
	for (const struct gw_det_precedence *p = gw_det_precedence; p->winner; p++) {
		int w = gw_det_index(p->winner), l = gw_det_index(p->loser);
		GW_REQUIRE(w >= 0 && l >= 0 && e->nprec < MAX_PREC);   /* a bug in registry.c */
		e->prec[e->nprec++] = (struct prec){(unsigned)w, (unsigned)l, p->loser_rule, p->scope};
	}
	hooks_on(e);
	return e;
}

void gw_engine_free(struct gw_engine *e)
{
	if (!e)
		return;
	gw__runtab_free(&e->runs);
	free(e);
}

void gw_engine_reconfigure(struct gw_engine *e, const struct gw_engine_opts *opts)
{
	require_thresholds(opts);
	e->opts = *opts;
	e->th_gen++;
	hooks_on(e);
}

bool gw_engine_quiet(struct gw_engine *e, bool quiet)
{
	bool was = e->quiet;
	e->quiet = quiet;
	return was;
}

bool gw_engine_kept_apart(const struct gw_engine *e)
{
	return e->apart;
}

bool gw_engine_would_open_segment(struct gw_engine *e, const struct gw_rec *rec)
{
	struct run *r = gw__runtab_find(&e->runs, rec->run, rec->run_len);
	if (!r || r->seg == 0 || rec->has_rank || r->w.interleaved)
		return false;
	if (rec->event)
		return strcmp(rec->event, "resumed") == 0;
	gw__run_refresh_th(e, r);
	return !gw__arrived_late(r, rec) && gw__segment_break(r, rec) != GW__NO_BREAK;
}

/* ---- lines ------------------------------------------------------------------ */

/* Call the detectors of `mask` (each on, and not done for the segment)
 * with this line. */
static void dispatch(struct gw_engine *e, struct run *r, const struct gw_rec *rec,
                     uint64_t line, double now, bool is_event)
{
	uint32_t mask = is_event ? e->on_event : e->on_record;
	struct gw_det_ctx ctx;
	ctx_init(e, r, &ctx, rec, line, now);
	for (size_t d = 0; d < e->ndet; d++) {
		if (!((mask >> d) & 1u))
			continue;
		const struct gw_detector *det = gw_det_registry[d];
		if (det->once_per_segment && ((r->seg_fired >> d) & 1u))
			continue;
		ctx.det_index = (unsigned)d;
		(is_event ? det->on_event : det->on_record)(r->det_state + e->det_off[d], &ctx);
	}
}

/* Open the run's next segment (segment.c), then tell on_segment and the
 * detectors' on_segment hooks (not for the first). */
static void open_segment(struct gw_engine *e, struct run *r, enum gw_seg_reason why,
                         int64_t first_step, int64_t restart_step, uint64_t line, double ts,
                         double now)
{
	gw__run_refresh_th(e, r);
	gw__segment_start(r, why != GW_SEG_START && restart_step >= 0, why != GW_SEG_START,
	                  restart_step, why == GW_SEG_RESUMED);
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
		if (!gw__det_on(e, d) || !det->on_segment)
			continue;
		ctx.det_index = (unsigned)d;
		det->on_segment(r->det_state + e->det_off[d], &ctx);
	}
}

/* Another writer's line: counted and kept apart (stored apart by the
 * daemon); a record counts among the run's records. */
static void fold(struct gw_engine *e, struct run *r, const struct gw_rec *rec)
{
	if (!rec->event) {
		r->records++;
		r->present_ever |= rec->present;
	}
	e->apart = true;
}

static void feed_event(struct gw_engine *e, struct run *r, const struct gw_rec *rec,
                       uint64_t line, double now)
{
	r->events++;
	struct gw_writers_pos pos;
	gw__writers_pos(r, &pos);
	if (gw__writers_fold_event(&r->w, &pos, rec)) {
		fold(e, r, rec);
		return;
	}
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

/* A rewind the segment rules found: is it a writer's repeat that
 * recognises interleaved writers (folded, and said once)? */
static bool writers_recognised(struct gw_engine *e, struct run *r, const struct gw_rec *rec,
                               uint64_t line)
{
	struct gw_writers_pos pos;
	gw__writers_pos(r, &pos);
	if (!gw__writers_rewind(&r->w, &pos, rec, line))
		return false;
	if (e->hooks.on_writers && !e->quiet) {
		struct gw_writers_info wi = {.run = r->name, .step = rec->step, .line = line,
		                             .seg = r->seg};
		e->hooks.on_writers(e->hooks.data, &wi);
	}
	fold(e, r, rec);
	return true;
}

static void feed_record(struct gw_engine *e, struct run *r, const struct gw_rec *rec,
                        uint64_t line, double now)
{
	bool metric = gw_rec_has(rec, GW_ROLE_LOSS) || gw_rec_has(rec, GW_ROLE_GRAD_NORM);
	if (r->w.interleaved) {
		struct gw_writers_pos pos;
		gw__writers_pos(r, &pos);
		if (gw__writers_fold_record(&r->w, &pos, rec)) {
			fold(e, r, rec);
			return;
		}
	}
	if (gw__arrived_late(r, rec)) {
		r->records++;   /* stored by the daemon; the timeline has moved past it */
		r->present_ever |= rec->present;
		return;
	}
	static const int reason[] = {
		[GW__BREAK_START] = GW_SEG_START,
		[GW__BREAK_REWIND] = GW_SEG_REWIND,
		[GW__BREAK_GAP] = GW_SEG_GAP,
	};
	enum gw__break brk = gw__segment_break(r, rec);
	int why = brk == GW__NO_BREAK ? -1 : reason[brk];
	if (why == GW_SEG_REWIND && !r->w.interleaved && writers_recognised(e, r, rec, line))
		return;
	if (why >= 0) {
		int64_t s = why == GW_SEG_REWIND || why == GW_SEG_GAP ? rec->step - 1 : -1;
		open_segment(e, r, (enum gw_seg_reason)why, rec->step, s, line, rec->ts, now);
	}
	bool merge = r->seg_records > 0 && rec->step == r->last_step &&
	             !(rec->present & r->last_present);
	if (!isnan(rec->ts) && !isnan(r->last_ts) && why < 0 && !merge && rec->ts >= r->last_ts)
		gw__note_interval(r, rec->ts - r->last_ts);
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
	gw__writers_step(&r->w, rec->step, why >= 0);
	gw__run_end_record(r, rec);
	if (merge || !metric)
		return;   /* stored, but nothing new for the detectors */
	gw_hist_push(&r->hist, rec);
	r->seg_records++;
	struct gw_hist_rec cur;
	gw_hist_at(&r->hist, 0, &cur);
	if (cur.valid)
		r->valid_records++;
	if (r->restart && r->restart->active) {
		r->restart->k = r->seg_records;
		gw_regime_update(r->restart, &cur, r->th);
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
	struct run *r = gw__run_get(e, rec->run, rec->run_len, &err);
	if (!r)
		return err;
	gw__run_refresh_th(e, r);
	if (rec->has_rank && !gw__writers_primary(&r->w, &r->arena, rec, now)) {
		e->apart = true;   /* another rank's: its position only, stored apart */
		if (seg_out)
			*seg_out = r->seg;
		return 0;
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

void gw_engine_tick(struct gw_engine *e, double now)
{
	for (size_t i = 0; i < e->runs.n; i++) {
		struct run *r = e->runs.runs[i];
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
	struct run *r = gw__runtab_find(&e->runs, run, strlen(run));
	if (!r || r->seg == 0)
		return -ENOENT;
	json_t *attrs = json_pack("{s:s}", "reason", reason ? reason : "");
	if (!attrs)
		return -ENOMEM;
	struct gw_rec rec = {
		.run = r->name, .run_len = r->name_len, .step = GW_MAX(r->last_step, 0),
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
	struct run *r = gw__runtab_find(&e->runs, run, strlen(run));
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
