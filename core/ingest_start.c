/*
 * ingest_start: the record path's set-up and tear-down (the engine with
 * its hooks, the wire parser, the run table, the commit notification) and
 * the operations on its runs that the daemon's parts use (known, last
 * seen, forget, ended, statistics), each through the run table (runs.h)
 * or the engine.  See ingest.h.
 */
#include "ingest_impl.h"

#include "clock.h"
#include "config.h"
#include "log.h"
#include "outbox.h"
#include "runs.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int gw_ingest_start(const struct gw_ingest_opts *o, struct gw_ingest **out, char *err,
                   size_t errlen)
{
	const struct gw_cfg *cfg = o->cfg;
	struct gw_ingest *in = *out = calloc(1, sizeof(*in));
	if (!in)
		return gw_errf(err, errlen, -ENOMEM, "out of memory");
	in->o = *o;
	in->loop = o->loop;
	in->cfg = cfg;
	in->store = o->store;
	in->outbox = o->outbox;
	in->paused.next = in->paused.prev = &in->paused;
	in->seg_cap.per_min = o->replay ? 0 : cfg->max_segments_per_minute;
	gw__ingest_commit_init(in);

	struct gw_engine_opts eo = cfg->engine;
	eo.overrides = cfg->overrides;
	eo.n_overrides = cfg->n_overrides;
	eo.live = !o->replay;
	eo.max_runs = 0;   /* live: runs.c keeps the active runs under limits.max_runs */
	struct gw_engine_hooks hooks;
	gw__ingest_hooks(in, &hooks);
	in->engine = gw_engine_new(&eo, &hooks);
	in->wire = gw_wire_new(cfg->aliases);
	if (!in->engine || !in->wire)
		return gw_errf(err, errlen, -ENOMEM, "out of memory");
	if (o->replay)
		return 0;
	char rerr[256];
	const struct gw_runs_opts ro = {.engine = in->engine, .db_path = cfg->db_path,
	                                .max_runs = cfg->max_runs,
	                                .evict_idle_s = cfg->run_evict_idle_s};
	if (gw_runs_new(&ro, &in->runs, rerr, sizeof(rerr)) < 0) {
		if (!in->runs)
			return gw_errf(err, errlen, -ENOMEM, "out of memory");
		gw_log_warn("could not read where known runs stood: %s", rerr);
	}
	gw_runs_restore(in->runs, gw_wall_now());
	return 0;
}

void gw_ingest_tick(struct gw_ingest *in, double now)
{
	double jump = in->runs ? gw_clock_jump() : 0;
	if (jump)
		gw_log_warn("the system clock was set %s by %.1f s; gradwatchd keeps its own time (the "
		            "system's at its start, advanced by the monotonic clock) for the age of "
		            "runs, stalls and the times it records, so no run looks older or stalled "
		            "for it; the log's timestamps follow the system clock; a restart takes the "
		            "system's time", jump > 0 ? "forward" : "back", fabs(jump));
	gw_engine_tick(in->engine, now);
	if (in->runs)
		gw_runs_tick(in->runs, now);
}

void gw_ingest_stop(struct gw_ingest *in)
{
	if (in)
		gw__ingest_commit_close(in);
}

void gw_ingest_free(struct gw_ingest *in)
{
	if (!in)
		return;
	gw_engine_free(in->engine);
	gw_runs_free(in->runs);
	gw_wire_free(in->wire);
	free(in);
}

void gw_ingest_reconfigure(struct gw_ingest *in, const struct gw_engine_opts *o)
{
	gw_engine_reconfigure(in->engine, o);
}

/* ---- runs ------------------------------------------------------------------------- */

bool gw_ingest_run_known(const struct gw_ingest *in, const char *run)
{
	return in->runs ? gw_runs_known(in->runs, run)
	                : gw_engine_has_run(in->engine, run, strlen(run));
}

double gw_ingest_run_last_seen(const struct gw_ingest *in, const char *run)
{
	return in->runs ? gw_runs_last_seen(in->runs, run) : NAN;
}

void gw_ingest_forget_run(struct gw_ingest *in, const char *run)
{
	if (in->runs)
		gw_runs_forget(in->runs, run);
	else
		gw_engine_evict(in->engine, run, NULL);
	gw_outbox_forget_run(in->outbox, run);   /* its alerts are gone too */
}

void gw_ingest_run_ended(struct gw_ingest *in, const char *run, const char *why)
{
	gw_engine_run_ended(in->engine, run, why, gw_wall_now());
}

void gw_ingest_runs_stats(const struct gw_ingest *in, struct gw_runs_stats *out)
{
	if (in->runs)
		gw_runs_stats(in->runs, out);
	else
		*out = (struct gw_runs_stats){.active = gw_engine_run_count(in->engine)};
}

void gw_ingest_foreach_run(const struct gw_ingest *in,
                           void (*fn)(void *data, const struct gw_run_info *ri), void *data)
{
	gw_engine_foreach_run(in->engine, fn, data);
}
