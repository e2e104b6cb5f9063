/*
 * replay: run saved NDJSON logs through the detector engine, the same engine
 * the daemon runs live, and print the alerts.
 *
 * Files are read in the order given, each with its own line numbers, into
 * one engine, so a run split over rotated files is one run.  Bad lines are
 * reported on stderr (file:line: reason) and skipped; they never stop the
 * replay.  Output is text for people or JSON lines (--format jsonl), one
 * alert per line, which is what ../shared/eval/score.py reads.
 */
#include "replay.h"

#include "engine.h"
#include "lines.h"
#include "log.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct replay {
	const struct gw_replay_opts *o;
	struct gw_wire *wire;
	struct gw_engine *engine;
	const char *file;
	FILE *out;
	uint64_t lines, records, events, rejected;
	uint64_t alerts, serious;
	int err;
};

static void print_alert(void *data, const struct gw_alert *a)
{
	struct replay *r = data;
	if (a->kind == GW_ALERT_RESOLVE && !r->o->show_resolved)
		return;
	if ((int)a->severity < r->o->min_severity)
		return;
	r->alerts++;
	if (a->severity >= GW_SEV_WARNING && a->kind != GW_ALERT_RESOLVE)
		r->serious++;
	if (r->o->format == GW_REPLAY_JSONL) {
		json_t *j = gw_alert_to_json(a);
		if (!j) {
			r->err = -ENOMEM;
			return;
		}
		json_object_set_new(j, "file", json_string(r->file));
		char *s = json_dumps(j, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(12));
		json_decref(j);
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

static int on_line(void *data, const char *line, size_t len, uint64_t lineno,
                   enum gw_line_status st)
{
	struct replay *r = data;
	r->lines++;
	if (st == GW_LINE_TOO_LONG) {
		r->rejected++;
		fprintf(stderr, "%s:%" PRIu64 ": line_too_long: longer than %zu bytes, skipped\n",
		        r->file, lineno, len);
		return 0;
	}
	struct gw_rec rec;
	struct gw_wire_err err;
	int rc = gw_wire_parse(r->wire, line, len, r->o->default_run, &rec, &err);
	if (rc == -ENODATA)
		return 0;
	if (rc < 0) {
		if (rc == -ENOMEM)
			return rc;
		r->rejected++;
		fprintf(stderr, "%s:%" PRIu64 ": %s%s\n", r->file, lineno,
		        st == GW_LINE_TRUNCATED ? "(last line, no newline) " : "", err.msg);
		return 0;
	}
	if (rec.event)
		r->events++;
	else
		r->records++;
	rc = gw_engine_feed(r->engine, &rec, lineno, r->o->live_clock ? rec.ts : NAN, NULL);
	if (rc < 0)
		return rc;
	return r->err;
}

static int replay_fd(struct replay *r, int fd)
{
	struct gw_lines lines;
	gw_lines_init(&lines, r->o->max_line);
	size_t cap = 1 << 20;
	char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	int rc = 0;
	for (;;) {
		ssize_t n = read(fd, buf, cap);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (n == 0) {
			rc = gw_lines_finish(&lines, on_line, r);
			break;
		}
		rc = gw_lines_feed(&lines, buf, (size_t)n, on_line, r);
		if (rc)
			break;
	}
	free(buf);
	gw_lines_free(&lines);
	return rc;
}

int gw_replay(const struct gw_replay_opts *o, char **files, int nfiles,
              struct gw_replay_stats *stats)
{
	struct replay r = {.o = o, .out = o->out ? o->out : stdout};
	struct gw_alias *aliases = o->aliases;
	int rc = 0;
	r.wire = gw_wire_new(aliases);
	struct gw_engine_hooks hooks = {.data = &r, .on_alert = print_alert};
	r.engine = gw_engine_new(&o->engine, &hooks);
	if (!r.wire || !r.engine) {
		rc = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < nfiles; i++) {
		r.file = files[i];
		int fd = strcmp(files[i], "-") == 0 ? STDIN_FILENO : open(files[i], O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			rc = -errno;
			fprintf(stderr, "gradwatch replay: %s: %s\n", files[i], strerror(errno));
			goto out;
		}
		rc = replay_fd(&r, fd);
		if (fd != STDIN_FILENO)
			close(fd);
		if (rc < 0) {
			fprintf(stderr, "gradwatch replay: %s: %s\n", files[i], strerror(-rc));
			goto out;
		}
	}
out:
	fflush(r.out);
	if (stats) {
		stats->lines = r.lines;
		stats->records = r.records;
		stats->events = r.events;
		stats->rejected = r.rejected;
		stats->alerts = r.alerts;
		stats->serious = r.serious;
		stats->runs = r.engine ? gw_engine_run_count(r.engine) : 0;
	}
	gw_engine_free(r.engine);
	gw_wire_free(r.wire);
	return rc;
}
