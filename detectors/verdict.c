/*
 * From a detector's verdict to an alert (gw_det_raise, gw_det_resolve), and
 * what detectors may ask the engine about a run (gw_det_checkpoint_for).
 *
 * Precedence: before anything else, a verdict is checked against the
 * precedence rules of registry.c whose loser is its detector (and, if the
 * rule names one, its rule).  A dropped verdict opens nothing and does not
 * count as the detector having fired; it does count as a verdict given,
 * which is what GW_PREC_MIDRUN_WINDOWS looks at.
 *
 * Incidents: each detector has MAX_INCIDENTS slots per run.  A verdict
 * updates the incident with its key in the current segment; a resolve
 * closes every open incident with its key, of any segment.  A new key takes
 * the first slot that is free or closed.  When all are open -- a detector
 * that never resolves (optimizer_reset, resume_regression, lr_schedule)
 * after four restarts that each raised -- slot 0 is overwritten, whatever it
 * holds (after the first time, the newest), and the incident it held is
 * then neither updated, resolved nor counted in gw_run_info.open_alerts.
 */
#include "engine_impl.h"
#include "util.h"

#include <math.h>
#include <string.h>

const json_t *gw_det_checkpoint_for(const struct gw_det_ctx *ctx, int64_t S, int64_t *step,
                                    uint64_t *line)
{
	const struct run *r = ctx->run_state;
	const struct ckpt *best = NULL;
	for (int k = 0; k < CKPT_KEEP; k++) {
		const struct ckpt *c = &r->ckpts[k];
		if (!c->attrs || c->step > S)
			continue;
		if (c->step == S) {
			best = c;
			break;
		}
		if (!best || c->step > best->step)
			best = c;
	}
	if (step)
		*step = best ? best->step : -1;
	if (line)
		*line = best ? best->line : 0;
	return best ? best->attrs : NULL;
}

/* Does a precedence rule drop this verdict of detector d? */
static bool dropped(const struct gw_engine *e, const struct run *r, unsigned d,
                    const struct gw_verdict *v)
{
	const struct gw_thresholds *th = r->th;
	for (size_t i = 0; i < e->nprec; i++) {
		const struct prec *p = &e->prec[i];
		if (p->loser != d || (p->loser_rule && (!v->rule || strcmp(p->loser_rule, v->rule))))
			continue;
		switch (p->scope) {
		case GW_PREC_SAME_RESTART:
			if (((r->seg_fired >> p->winner) & 1u) && gw__run_restart(r)->active &&
			    (double)gw__run_restart(r)->k <= th->post_max)
				return true;
			break;
		case GW_PREC_MIDRUN_WINDOWS:
			if (((r->gave_verdict >> p->winner) & 1u) &&
			    (double)(r->valid_records - r->verdict_at[p->winner]) <=
			    th->mr_pre + th->mr_gap + th->mr_post)
				return true;
			break;
		}
	}
	return false;
}

static void emit(struct gw_engine *e, struct run *r, const struct gw_det_ctx *ctx,
                 enum gw_alert_kind kind, uint32_t key, int64_t seg,
                 const struct gw_verdict *v, enum gw_severity sev)
{
	if (!e->hooks.on_alert || e->quiet)
		return;
	const struct gw_detector *det = gw_det_registry[ctx->det_index];
	struct gw_alert a = {
		.kind = kind,
		.run = r->name,
		.seg = seg,
		.step = v && v->step_set ? v->step : ctx->rec ? ctx->rec->step : r->last_step,
		.line = ctx->line,
		.detector = det->name,
		.severity = sev,
		.summary = v ? v->summary : "",
		.cause = v ? v->cause : "",
		.action = v ? v->action : "",
		.evidence = v ? v->evidence : NULL,
		.ts = ctx->rec ? ctx->rec->ts : r->last_ts,
		.wall = e->opts.live ? ctx->now : NAN,
	};
	gw_alert_make_id(a.id, r->name, seg, det->name, key);
	e->hooks.on_alert(e->hooks.data, &a);
}

bool gw_det_raise(const struct gw_det_ctx *ctx, struct gw_verdict *v)
{
	struct gw_engine *e = ctx->engine;
	struct run *r = ctx->run_state;
	unsigned d = ctx->det_index;
	/* a detector's texts are fixed-size buffers, cut wherever they filled:
	 * maybe inside a character of a quoted name.  An alert goes out as
	 * JSON, which takes only UTF-8 (an alert it refused was never sent) */
	gw_utf8_fix_end(v->summary);
	gw_utf8_fix_end(v->cause);
	gw_utf8_fix_end(v->action);
	bool drop = dropped(e, r, d, v);
	r->gave_verdict |= 1u << d;
	r->verdict_at[d] = r->valid_records;
	if (drop) {
		json_decref(v->evidence);
		v->evidence = NULL;
		return false;
	}
	if (v->severity >= GW_SEV_WARNING)
		r->seg_fired |= 1u << d;
	struct incident *slots = r->inc + d * MAX_INCIDENTS;
	struct incident *in = NULL, *free_slot = NULL;
	for (int k = 0; k < MAX_INCIDENTS; k++) {
		if (slots[k].used && slots[k].key == v->incident && slots[k].seg == r->seg)
			in = &slots[k];
		else if (!free_slot && (!slots[k].used || !slots[k].open))
			free_slot = &slots[k];
	}
	if (in) {
		if (v->severity > in->severity || v->force_update) {
			if (v->severity > in->severity)
				in->severity = v->severity;
			in->open = true;
			emit(e, r, ctx, GW_ALERT_UPDATE, v->incident, in->seg, v, in->severity);
		}
	} else {
		if (!free_slot)
			free_slot = &slots[0]; /* all open: overwrite slot 0 (see above) */
		*free_slot = (struct incident){
			.key = v->incident, .used = true, .open = true,
			.severity = v->severity, .seg = r->seg,
		};
		emit(e, r, ctx, GW_ALERT_OPEN, v->incident, r->seg, v, v->severity);
	}
	json_decref(v->evidence);
	v->evidence = NULL;
	return true;
}

static void resolve(const struct gw_det_ctx *ctx, uint32_t incident, const struct gw_verdict *v)
{
	struct gw_engine *e = ctx->engine;
	struct run *r = ctx->run_state;
	struct incident *slots = r->inc + ctx->det_index * MAX_INCIDENTS;
	for (int k = 0; k < MAX_INCIDENTS; k++) {
		struct incident *in = &slots[k];
		if (in->used && in->open && in->key == incident) {
			in->open = false;
			emit(e, r, ctx, GW_ALERT_RESOLVE, incident, in->seg, v, in->severity);
		}
	}
}

void gw_det_resolve(const struct gw_det_ctx *ctx, uint32_t incident)
{
	resolve(ctx, incident, NULL);
}

void gw_det_resolve_v(const struct gw_det_ctx *ctx, struct gw_verdict *v)
{
	resolve(ctx, v->incident, v);
	json_decref(v->evidence);
	v->evidence = NULL;
}
