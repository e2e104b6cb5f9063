/*
 * replay: run saved training logs through the record path the daemon runs
 * live (ingest.c: gw_ingest_record, the same detectors with the same
 * thresholds; only nothing is stored and the detectors' clock is the
 * records' own), and print the alerts.
 *
 * Every file is read through the readers layer (readers/reader.h, via
 * input.c), so it may be gradwatch NDJSON or any log format gradwatch
 * reads, compressed or not; the format is sniffed per file unless
 * --input-format forces one.  Files are read in the order given, each with
 * its own line numbers, into one engine, so a run split over rotated files
 * is one run; the points a checkpoint copy of a whole-file format
 * (trainer_state.json) repeats from a copy read before are skipped
 * (input.h).  Bad lines are reported on stderr (file:line: reason, capped
 * per file) and skipped; they never stop the replay.  A file with nothing
 * readable is reported and skipped, and makes the replay fail.  Output is
 * text for people or JSON lines (--format jsonl), one alert per line, which
 * is what ../shared/eval/score.py reads: the one alert object
 * (gw_alert_track, docs/alert-schema.md) plus "file".
 */
#include "replay.h"

#include "config.h"
#include "engine.h"
#include "ingest.h"
#include "input.h"
#include "runs.h"
#include "wire.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct replay {
	const struct gw_replay_opts *o;
	struct gw_ingest *in;
	struct gw_ingest_src src;
	const char *file;
	FILE *out;
	uint64_t lines, records, events, rejected, unreadable, duplicates;
	uint64_t alerts, serious;
	json_t *firing;           /* alert id -> last firing object (gw_alert_track) */
	int err;
};

static void print_event(struct replay *r, const struct gw_alert *a, json_t *j);

static void print_alert(void *data, const struct gw_alert *a)
{
	struct replay *r = data;
	/* every event counts for versions, whatever is printed */
	json_t *j = gw_alert_track(r->firing, a);
	if (!j) {
		r->err = -ENOMEM;
		return;
	}
	if (r->o->hooks && r->o->hooks->on_alert)
		r->o->hooks->on_alert(r->o->hooks->data, a, j);
	print_event(r, a, j);
	json_decref(j);
}

static void print_event(struct replay *r, const struct gw_alert *a, json_t *j)
{
	if (a->kind == GW_ALERT_RESOLVE && !r->o->show_resolved)
		return;
	if ((int)a->severity < r->o->min_severity)
		return;
	r->alerts++;
	if (a->severity >= GW_SEV_WARNING && a->kind != GW_ALERT_RESOLVE)
		r->serious++;
	if (r->o->format == GW_REPLAY_QUIET)
		return;
	if (r->o->format == GW_REPLAY_JSONL) {
		json_object_set_new(j, "file", json_string(r->file));
		char *s = json_dumps(j, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(12));
		json_object_del(j, "file");
		if (!s) {
			r->err = -ENOMEM;
			return;
		}
		fputs(s, r->out);
		fputc('\n', r->out);
		free(s);
		return;
	}
	if (a->kind == GW_ALERT_RESOLVE) {
		fprintf(r->out, "%s:%" PRIu64 ": resolved %s (%s) run %s segment %" PRId64 "\n",
		        r->file, a->line, a->detector, a->id, a->run, a->seg);
		return;
	}
	fprintf(r->out, "%s:%" PRIu64 ": %s%s %s, run %s, segment %" PRId64 ", step %" PRId64 "\n"
	        "  %s\n  likely cause: %s\n  what to check: %s\n",
	        r->file, a->line, a->kind == GW_ALERT_UPDATE ? "update: " : "",
	        gw_severity_name(a->severity), a->detector, a->run, a->seg, a->step,
	        a->summary, a->cause, a->action);
}

static int on_rec(void *data, const struct gw_rec *rec, uint64_t line)
{
	struct replay *r = data;
	struct gw_wire_err e;
	int rc = gw_ingest_record(&r->src, rec, line, &e);
	if (rc == -EINVAL) {
		/* the engine refused it (no memory for a new run): say so, go on */
		fprintf(stderr, "gradwatch replay: %s:%" PRIu64 ": %s\n", r->file, line, e.msg);
		r->rejected++;
		return 0;
	}
	if (rc < 0)
		return rc;
	if (rec->event)
		r->events++;
	else
		r->records++;
	if (r->o->hooks && r->o->hooks->on_rec &&
	    (rc = r->o->hooks->on_rec(r->o->hooks->data, rec, r->src.last_seg, line)) < 0)
		return rc;
	return r->err;
}

static void on_segment(void *data, const struct gw_segment_info *s)
{
	struct replay *r = data;
	if (r->o->hooks && r->o->hooks->on_segment)
		r->o->hooks->on_segment(r->o->hooks->data, s);
}

void gw_replay_opts_init(struct gw_replay_opts *o, const struct gw_cfg *cfg)
{
	*o = (struct gw_replay_opts){
		.format = GW_REPLAY_TEXT,
		.cmd = "replay",
		.cfg = cfg,
		.max_line = cfg->max_line > (16u << 20) ? cfg->max_line : (16u << 20),
		.min_severity = GW_SEV_INFO,
	};
}

int gw_replay(const struct gw_replay_opts *o, char **files, int nfiles,
              struct gw_replay_stats *stats)
{
	struct replay r = {.o = o, .out = o->out ? o->out : stdout, .firing = json_object()};
	struct gw_input_seen *seen = NULL;
	int rc = 0;
	const struct gw_ingest_opts io = {
		.cfg = o->cfg,
		.replay = true,
		.live_clock = o->live_clock,
		.observe = {.data = &r, .on_alert = print_alert, .on_segment = on_segment},
	};
	char err[256];
	rc = gw_ingest_start(&io, &r.in, err, sizeof(err));
	seen = gw_input_seen_new();
	if (rc < 0 || !seen || !r.firing) {
		rc = rc < 0 ? rc : -ENOMEM;
		goto out;
	}
	gw_ingest_src_init(&r.src, r.in, GW_TR_FOLLOW, 0);
	for (int i = 0; i < nfiles; i++) {
		r.file = files[i];
		struct gw_input in = {
			.cmd = o->cmd,
			.path = files[i],
			.run = o->default_run,
			.format = o->input_format,
			.aliases = o->cfg->aliases,
			.max_line = o->max_line,
			.max_errors = o->max_errors,
			.on_rec = on_rec,
			.data = &r,
			.seen = seen,
		};
		int frc = gw_input_read(&in);
		r.lines += in.lines;
		r.rejected += in.errors;
		r.duplicates += in.duplicates;
		if (frc == -ENOMEM || frc == -ENOSPC) {
			rc = frc;
			goto out;
		}
		if (frc < 0) {
			/* this file is not readable (reported); the others still are */
			r.unreadable++;
			rc = frc;
		}
	}
out:
	fflush(r.out);
	if (stats) {
		stats->lines = r.lines;
		stats->records = r.records;
		stats->events = r.events;
		stats->rejected = r.rejected;
		stats->unreadable = r.unreadable;
		stats->duplicates = r.duplicates;
		stats->alerts = r.alerts;
		stats->serious = r.serious;
		struct gw_runs_stats rs = {0};
		if (r.in)
			gw_ingest_runs_stats(r.in, &rs);
		stats->runs = rs.active;
	}
	gw_ingest_src_deinit(&r.src);
	gw_ingest_free(r.in);
	gw_input_seen_free(seen);
	json_decref(r.firing);
	return rc;
}
