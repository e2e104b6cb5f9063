/*
 * Run endings (engine.h, "Run endings"): when a run has ended, kept in its
 * struct run for the detectors (ctx->run_ended) and gw_run_info.
 *
 * A run ends at a run_finished event, or at a record whose step reaches
 * the length it declared: a max_steps or total_steps extra metric of a
 * record, or attribute of an event (a positive integer; the last one given
 * counts).  A record past the step it ended at means the job goes on, and
 * so does a new segment (engine.c open_segment clears it); gw_engine_run_ended
 * marks the end from outside (engine.c).  No allocation, no I/O.
 */
#include "run.h"

#include "util.h"

#include <math.h>
#include <string.h>

/* A declared length: a positive integer count of steps, or -1. */
static int64_t length_of(double v)
{
	return isfinite(v) && v >= 1 && v <= (double)GW_WIRE_STEP_MAX && v == floor(v) ? (int64_t)v : -1;
}

static bool is_length(const char *name)
{
	return !strcmp(name, "max_steps") || !strcmp(name, "total_steps");
}

void gw__run_end_mark(struct run *r, int64_t step)
{
	r->ended = true;
	r->ended_step = GW_MAX(step, r->last_step);
}

void gw__run_end_record(struct run *r, const struct gw_rec *rec)
{
	for (size_t i = 0; i < rec->n_extra; i++) {
		int64_t m;
		if (is_length(rec->extra[i].name) && (m = length_of(rec->extra[i].value)) > 0)
			r->max_steps = m;
	}
	if (r->ended && rec->step > r->ended_step)
		r->ended = false;
	if (!r->ended && r->max_steps > 0 && rec->step >= r->max_steps)
		gw__run_end_mark(r, rec->step);
}

void gw__run_end_event(struct run *r, const struct gw_rec *rec)
{
	const char *key;
	json_t *v;
	int64_t m;
	json_object_foreach(rec->attrs, key, v)
		if (is_length(key) && json_is_number(v) && (m = length_of(json_number_value(v))) > 0)
			r->max_steps = m;
	if (strcmp(rec->event, GW_RUN_FINISHED) == 0)
		gw__run_end_mark(r, rec->step);
}
