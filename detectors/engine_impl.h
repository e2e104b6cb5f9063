/*
 * Internal to the detector engine's top (engine.c: lines and dispatch;
 * engine_info.c: what the engine tells about runs; verdict.c: verdicts,
 * precedence, incidents): the engine's own state.  A run's state and the
 * parts that work on a run alone are run.h's; writers.c keeps its own
 * (writers.h).  Nothing outside those files includes this.
 */
#ifndef GW_ENGINE_IMPL_H
#define GW_ENGINE_IMPL_H

#include "detector.h"
#include "engine.h"
#include "engine_opts.h"
#include "registry.h"
#include "run.h"

#define MAX_PREC 32           /* precedence rules */

_Static_assert(GW_DET_MAX <= RUN_DET_MAX, "run.h holds a state per detector");

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
	struct gw_runtab runs;    /* the active runs (run.h) */
	size_t ndet;
	size_t det_off[GW_DET_MAX + 1]; /* detector d's state; [ndet]: the incidents */
	size_t det_total;         /* the detectors' states, then the incidents */
	uint32_t on_record;       /* detectors with an on_record hook, on in this engine */
	uint32_t on_event;        /* ... an on_event hook */
	struct prec prec[MAX_PREC];
	size_t nprec;
	bool quiet;               /* hooks are not called (gw_engine_quiet) */
	bool apart;               /* the last line fed was kept apart */
};

/* The run named name[0..len), created (its detectors' init called) when
 * new: NULL and *err -ENOSPC (max_runs) or -ENOMEM (engine.c). */
struct run *gw__run_get(struct gw_engine *e, const char *name, size_t len, int *err);

/* Bring r->th up to date after gw_engine_reconfigure (engine.c). */
void gw__run_refresh_th(const struct gw_engine *e, struct run *r);

/* Is detector d on in this engine (not disabled; live-only ones live)? */
bool gw__det_on(const struct gw_engine *e, size_t d);

#endif
