/*
 * report: `gradwatch report FILE... [-o report.html]`, one self-contained
 * HTML file with the charts and alerts of every run in the files, for a
 * replayed log or a postmortem (docs/web.md).
 *
 * The files go through the same replay as `gradwatch replay` (the readers
 * layer, so every log format it reads, and the same engine), with hooks
 * that keep, per run, its records as chart rows, its segments and its
 * alerts (the latest state of each, as the daemon's alerts table keeps
 * them).  Each run's rows are then downsampled by the same min/max code as
 * the daemon's records endpoint (storage/series.c, to --max-points per
 * run), so the report draws what the live page draws; web/report_page.c
 * writes the page with the data inline.  Memory: the rows of every run
 * (48 bytes a record) until the end.
 */
#include "report.h"

#include "buf.h"
#include "cli.h"
#include "config.h"
#include "reader.h"
#include "replay.h"
#include "series.h"
#include "strtab.h"
#include "util.h"
#include "web_assets.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct run_acc {
	char *name;
	struct gw_series_row *rows;
	size_t n, cap;
	struct gw_series_seg *segs;
	size_t nsegs, segcap;
	json_t *alerts;            /* id -> the alert as it last was */
	int64_t last_seg, last_step;
	uint64_t events;
};

struct report {
	struct run_acc **order;    /* in order of first appearance */
	size_t nruns, cap;
	struct gw_strtab by_name;  /* name -> index into order */
	struct run_acc *last;
	uint64_t records, alerts;
};

static struct run_acc *find_run(struct report *rp, const char *name)
{
	if (rp->last && strcmp(rp->last->name, name) == 0)
		return rp->last;
	size_t len = strlen(name);
	uint32_t i;
	if (gw_strtab_find(&rp->by_name, name, len, &i) == 0)
		return rp->last = rp->order[i];
	if (gw_grow((void **)&rp->order, &rp->cap, rp->nruns + 1, sizeof(*rp->order)) < 0)
		return NULL;
	struct run_acc *r = calloc(1, sizeof(*r));
	if (!r || !(r->name = strdup(name)) || !(r->alerts = json_object()) ||
	    gw_strtab_put(&rp->by_name, r->name, len, (uint32_t)rp->nruns) < 0) {
		if (r) {
			json_decref(r->alerts);
			free(r->name);
		}
		free(r);
		return NULL;
	}
	r->last_step = -1;
	rp->order[rp->nruns++] = r;
	return rp->last = r;
}

static struct gw_series_seg *seg_of(struct run_acc *r, int64_t seg)
{
	for (size_t i = r->nsegs; i-- > 0;)
		if (r->segs[i].seg == seg)
			return &r->segs[i];
	if (gw_grow((void **)&r->segs, &r->segcap, r->nsegs + 1, sizeof(*r->segs)) < 0)
		return NULL;
	/* segments arrive in order; keep them sorted anyway */
	size_t at = r->nsegs;
	while (at > 0 && r->segs[at - 1].seg > seg)
		at--;
	memmove(&r->segs[at + 1], &r->segs[at], (r->nsegs - at) * sizeof(*r->segs));
	r->nsegs++;
	struct gw_series_seg *s = &r->segs[at];
	memset(s, 0, sizeof(*s));
	s->seg = seg;
	s->first_step = s->restart_step = -1;
	gw_strlcpy(s->reason, "?", sizeof(s->reason));
	return s;
}

static int on_rec(void *data, const struct gw_rec *rec, int64_t seg, uint64_t line)
{
	struct report *rp = data;
	struct run_acc *r = find_run(rp, rec->run);
	if (!r || !seg_of(r, seg))
		return -ENOMEM;
	r->last_seg = seg;
	if (rec->event) {
		r->events++;
		return 0;
	}
	if (gw_grow((void **)&r->rows, &r->cap, r->n + 1, sizeof(*r->rows)) < 0)
		return -ENOMEM;
	struct gw_series_row *row = &r->rows[r->n++];
	row->step = rec->step;
	row->seg = seg;
	row->nf = 0;
	for (int k = 0; k < GW_NROLES; k++) {
		bool has = gw_rec_has(rec, k);
		row->v[k] = has && isfinite(rec->v[k]) ? rec->v[k] : NAN;
		if (has && !isfinite(rec->v[k]))
			row->nf |= 1u << k;
	}
	r->last_step = rec->step;
	rp->records++;
	return 0;
}

static void on_segment(void *data, const struct gw_segment_info *si)
{
	struct report *rp = data;
	struct run_acc *r = find_run(rp, si->run);
	struct gw_series_seg *s = r ? seg_of(r, si->seg) : NULL;
	if (!s)
		return;   /* out of memory: on_rec reports it */
	gw_strlcpy(s->reason, gw_seg_reason_name(si->reason), sizeof(s->reason));
	s->first_step = si->first_step;
	s->restart_step = si->restart_step;
}

/* Every alert as of its latest event, in the one alert schema; a resolve
 * keeps the last firing object's text and evidence, so it replaces it. */
static void on_alert(void *data, const struct gw_alert *a, json_t *obj)
{
	struct report *rp = data;
	struct run_acc *r = find_run(rp, a->run);
	if (!r)
		return;
	if (!json_object_get(r->alerts, a->id))
		rp->alerts++;
	json_object_set(r->alerts, a->id, obj);
}

static int cmp_alert_step(const void *x, const void *y)
{
	json_int_t a = json_integer_value(json_object_get(*(json_t *const *)x, "step"));
	json_int_t b = json_integer_value(json_object_get(*(json_t *const *)y, "step"));
	return a < b ? -1 : a > b;
}

static json_t *run_json(struct run_acc *r, size_t max_points)
{
	size_t na = json_object_size(r->alerts), k = 0, open = 0;
	json_t **v = calloc(na ? na : 1, sizeof(*v));
	json_t *alerts = json_array();
	const char *id;
	json_t *a;
	if (!v || !alerts) {
		free(v);
		json_decref(alerts);
		return NULL;
	}
	json_object_foreach(r->alerts, id, a) {
		v[k++] = a;
		open += strcmp(json_string_value(json_object_get(a, "state")), "open") == 0;
	}
	qsort(v, na, sizeof(*v), cmp_alert_step);
	for (size_t i = 0; i < na; i++)
		json_array_append(alerts, v[i]);
	free(v);
	json_t *records = gw_series_from_rows(r->name, r->rows, r->n, r->segs, r->nsegs, max_points);
	if (!records) {
		json_decref(alerts);
		return NULL;
	}
	return json_pack("{s:s, s:{s:s, s:I, s:I, s:I, s:I, s:I}, s:o, s:o}", "run", r->name,
	                 "info", "run", r->name, "segment", (json_int_t)r->last_seg,
	                 "last_step", (json_int_t)r->last_step, "records", (json_int_t)r->n,
	                 "events", (json_int_t)r->events, "open_alerts", (json_int_t)open,
	                 "alerts", alerts, "records", records);
}

static void report_free(struct report *rp)
{
	for (size_t i = 0; i < rp->nruns; i++) {
		struct run_acc *r = rp->order[i];
		free(r->name);
		free(r->rows);
		free(r->segs);
		json_decref(r->alerts);
		free(r);
	}
	free(rp->order);
	gw_strtab_free(&rp->by_name);
}

static const char report_usage[] =
	"usage: gradwatch report [-o FILE] [--max-points N] [--run NAME] [--input-format NAME]\n"
	"                        FILE...\n"
	"\n"
	"Replay the logs and write one self-contained HTML page with every run's\n"
	"charts and alerts; it opens from disk, with no network.\n"
	"\n"
	"  -o, --output FILE         where to write it (default report.html; '-' =\n"
	"                            standard output)\n"
	"  -m, --max-points N        points per chart, 100 to %d (default 20000)\n"
	"  -r, --run NAME            the run of lines that name none\n"
	"  -i, --input-format NAME   the format of every FILE (default: sniffed)\n"
	"\n"
	"exit status: 0 written; 2 an error (a file with nothing readable too)\n";

int gw_report_main(struct gw_cfg *cfg, int argc, char **argv)
{
	struct gw_replay_opts o;
	gw_replay_opts_init(&o, cfg);
	o.format = GW_REPLAY_QUIET;
	o.cmd = "report";
	const char *out_path = "report.html";
	long max_points = 20000;
	static const struct option lo[] = {
		{"output", required_argument, NULL, 'o'},
		{"max-points", required_argument, NULL, 'm'},
		{"run", required_argument, NULL, 'r'},
		{"input-format", required_argument, NULL, 'i'},
		GW_CLI_OPT_HELP,
	};
	static const char prog[] = "gradwatch report";
	int ch;
	gw_cli_getopt_start();
	while ((ch = getopt_long(argc, argv, ":o:m:r:i:h", lo, NULL)) != -1) {
		char *end;
		switch (ch) {
		case 'o': out_path = optarg; break;
		case 'r': o.default_run = optarg; break;
		case 'i':
			if (!gw_reader_format_find(optarg))
				return gw_cli_bad_format(prog, optarg);
			o.input_format = optarg;
			break;
		case 'm':
			max_points = strtol(optarg, &end, 10);
			if (!*optarg || *end || max_points < 100 || max_points > GW_SERIES_MAX_POINTS) {
				char what[80];
				snprintf(what, sizeof(what), "--max-points wants a number from 100 to %d, not",
				         GW_SERIES_MAX_POINTS);
				return gw_cli_usage_error(prog, what, optarg);
			}
			break;
		case 'h': printf(report_usage, GW_SERIES_MAX_POINTS); return 0;
		default: return gw_cli_bad_option(prog, ch, argv);
		}
	}
	if (optind >= argc)
		return gw_cli_usage_error(prog, "no file given (use - for standard input)", NULL);
	struct report rp = {0};
	struct gw_replay_hooks hooks = {.data = &rp, .on_rec = on_rec, .on_alert = on_alert,
	                                .on_segment = on_segment};
	o.hooks = &hooks;
	struct gw_replay_stats st;
	int rc = gw_replay(&o, argv + optind, argc - optind, &st);
	if (rc == -ENOMEM || rc == -ENOSPC) {
		fprintf(stderr, "gradwatch report: %s\n", strerror(-rc));
		report_free(&rp);
		return 2;
	}
	if (rc < 0 && rp.nruns == 0) {
		/* nothing was read: no empty page in place of an earlier report */
		fprintf(stderr, "gradwatch report: nothing to report, %s not written\n", out_path);
		report_free(&rp);
		return 2;
	}
	char when[32];
	time_t now = time(NULL);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", gmtime(&now));
	json_t *files = json_array(), *runs = json_array();
	for (int i = optind; i < argc; i++)
		json_array_append_new(files, json_string(argv[i]));
	for (size_t i = 0; i < rp.nruns; i++) {
		json_t *j = run_json(rp.order[i], (size_t)max_points);
		if (!j) {
			fprintf(stderr, "gradwatch report: out of memory\n");
			json_decref(files);
			json_decref(runs);
			report_free(&rp);
			return 2;
		}
		json_array_append_new(runs, j);
	}
	json_t *data = json_pack("{s:s, s:o, s:o}", "generated", when, "files", files, "runs", runs);
	struct gw_outfile of;
	int wrc = gw_outfile_open(&of, out_path);
	if (wrc == 0) {
		wrc = gw_web_write_report(of.f, data);
		int crc = gw_outfile_close(&of, wrc == 0);
		wrc = wrc < 0 ? wrc : crc;
	}
	json_decref(data);
	if (wrc < 0) {
		fprintf(stderr, "gradwatch report: cannot write %s: %s\n",
		        of.path ? of.path : "standard output", strerror(-wrc));
		report_free(&rp);
		return 2;
	}
	if (of.path)
		fprintf(stderr, "gradwatch report: wrote %s: %zu run(s), %llu record(s), %llu alert(s)%s\n",
		        out_path, rp.nruns, (unsigned long long)rp.records, (unsigned long long)rp.alerts,
		        rc < 0 ? " (some files were not readable, see above)" : "");
	report_free(&rp);
	return rc < 0 ? 2 : 0;
}
