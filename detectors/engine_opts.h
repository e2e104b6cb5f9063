/*
 * engine_opts: what a detector engine is made with (gw_engine_new,
 * gw_engine_reconfigure in engine.h) -- the thresholds, per-run overrides,
 * the detectors that are off, live or replay, the most runs.  The
 * configuration's side of the engine: what builds these (core/config*.c)
 * includes this and thresholds.h with it; what only feeds lines and reads
 * alerts needs engine.h alone.
 */
#ifndef GW_ENGINE_OPTS_H
#define GW_ENGINE_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "thresholds.h"

/* Thresholds for runs whose name matches a glob; the first match wins. */
struct gw_th_override {
	char *glob;
	struct gw_thresholds th;
};

struct gw_engine_opts {
	struct gw_thresholds th;           /* defaults */
	const struct gw_th_override *overrides;
	size_t n_overrides;
	bool live;                         /* wall-clock detectors on */
	uint64_t disabled;                 /* bit i: registry entry i is off (registry.h) */
	size_t max_runs;                   /* 0: unlimited */
};

#endif
