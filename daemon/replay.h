/*
 * replay: saved NDJSON logs through the detector engine (see replay.c).
 */
#ifndef GW_REPLAY_H
#define GW_REPLAY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "engine.h"
#include "wire.h"

enum gw_replay_format {
	GW_REPLAY_TEXT,
	GW_REPLAY_JSONL,
};

struct gw_replay_opts {
	enum gw_replay_format format;
	struct gw_engine_opts engine;
	struct gw_alias *aliases;     /* borrowed */
	const char *default_run;      /* for lines without "run", or NULL */
	size_t max_line;
	int min_severity;             /* print alerts at or above it */
	bool show_resolved;
	bool live_clock;              /* give detectors the record ts as "now" */
	FILE *out;                    /* NULL: stdout */
};

struct gw_replay_stats {
	uint64_t lines, records, events, rejected, alerts, serious;
	size_t runs;
};

/* Replay files in order ("-" is standard input).  Returns 0 or a negative
 * errno for an I/O or memory error (bad lines are not errors). */
int gw_replay(const struct gw_replay_opts *o, char **files, int nfiles,
              struct gw_replay_stats *stats);

#endif
