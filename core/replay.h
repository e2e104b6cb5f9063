/*
 * replay: saved training logs through the record path the daemon uses
 * (ingest.c, without a store), see replay.c.
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
	GW_REPLAY_QUIET,              /* print no alerts (the hooks see them) */
};

/* What `gradwatch report` collects while the engine runs; everything
 * passed is borrowed for the duration of the call. */
struct gw_replay_hooks {
	void *data;
	/* Every record and event, after the engine saw it, with its segment.
	 * Return 0, or a negative errno to stop the replay with it. */
	int (*on_rec)(void *data, const struct gw_rec *rec, int64_t seg, uint64_t line);
	/* Every alert event (open, update, resolve), whatever the filters,
	 * with its alert object (docs/alert-schema.md; borrowed: json_incref
	 * or copy it to keep it). */
	void (*on_alert)(void *data, const struct gw_alert *a, json_t *obj);
	void (*on_segment)(void *data, const struct gw_segment_info *s);
};

struct gw_cfg;

struct gw_replay_opts {
	enum gw_replay_format format;
	const char *cmd;              /* the command named in messages: "replay" */
	const struct gw_cfg *cfg;     /* aliases, thresholds, overrides, detectors (borrowed) */
	const char *default_run;      /* for points that name no run; NULL: from the file name */
	const char *input_format;     /* a reader format to force, or NULL: sniff */
	size_t max_line;
	unsigned max_errors;          /* error lines printed per file (0: 20) */
	int min_severity;             /* print alerts at or above it */
	bool show_resolved;
	bool live_clock;              /* give detectors the record ts as "now" */
	FILE *out;                    /* NULL: stdout */
	const struct gw_replay_hooks *hooks; /* NULL: none */
};

struct gw_replay_stats {
	uint64_t lines, records, events, rejected, alerts, serious;
	uint64_t unreadable;          /* files with nothing readable */
	uint64_t duplicates;          /* points skipped as checkpoint copies */
	size_t runs;
};

/* Options for replaying with a configuration's aliases, thresholds and
 * overrides: text output, every severity, wall-clock detectors off. */
void gw_replay_opts_init(struct gw_replay_opts *o, const struct gw_cfg *cfg);

/* Replay files in order ("-" is standard input).  Returns 0, or a negative
 * errno when a file could not be read (-EPROTO: nothing readable in it;
 * the other files are still replayed) or memory ran out (bad lines are not
 * errors).  Blocks on the files. */
int gw_replay(const struct gw_replay_opts *o, char **files, int nfiles,
              struct gw_replay_stats *stats);

#endif
