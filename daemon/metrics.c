/*
 * metrics: GET /metrics, the daemon's counters and every run's last values
 * in the Prometheus text exposition format (version 0.0.4).
 *
 * Everything is rendered on the loop thread from state that is already in
 * memory: the ingest counters (the one table in ingest.c that GET /v1/stats
 * renders too), the store's counters, and the engine's per-run state
 * (gw_engine_foreach_run), and the size of the database's files (two
 * stat() calls).  No database read, so a scrape never waits for a commit;
 * its cost is one line per counter plus a few lines per run.
 *
 * Names follow Prometheus conventions: `_total` for counters, base units
 * (seconds, bytes), one metric family per quantity with labels for the
 * dimensions (transport, reason, detector, severity, run).  Label values are
 * escaped as the format demands (\\, \", \n).  Counters that are zero are
 * still exported for every known label combination, so rate() and alert
 * rules see a series from the first scrape on.
 *
 *   gradwatch_build_info{version,kernels}            1
 *   gradwatch_start_time_seconds                     daemon start, Unix time
 *   gradwatch_lines_ingested_total{transport}        accepted lines (records and events)
 *   gradwatch_events_ingested_total{transport}       of which events
 *   gradwatch_received_bytes_total{transport}
 *   gradwatch_lines_rejected_total{transport,reason}
 *   gradwatch_udp_dropped_total                      datagrams refused under back-pressure
 *   gradwatch_connections_total
 *   gradwatch_segments_total                         segments opened (restarts and gaps)
 *   gradwatch_alerts_total{detector,severity}        incidents opened
 *   gradwatch_store_commits_total, gradwatch_store_pending_bytes, gradwatch_store_up
 *   gradwatch_store_file_bytes{file="database"|"wal"} (stat() of the two files)
 *   gradwatch_retention_passes_total, gradwatch_retention_runs_deleted_total
 *   gradwatch_alerts_open{acked="true"|"false"}     open alerts, acknowledged or not
 *   gradwatch_outbox_depth                           (these four when sinks
 *   gradwatch_alert_deliveries_total{sink,type,result}  are configured)
 *   gradwatch_alert_delivery_retries_total{sink,type}
 *   gradwatch_alert_deliveries_pending{sink,type}
 *   gradwatch_runs, gradwatch_runs_dormant           active runs, and the others known
 *   gradwatch_runs_evicted_total, _rebuilt_total     runs made dormant, and rebuilt
 *   gradwatch_run_last_step{run}, gradwatch_run_segment{run},
 *   gradwatch_run_loss{run}, gradwatch_run_grad_norm{run}, gradwatch_run_lr{run},
 *   gradwatch_run_throughput{run}, gradwatch_run_seconds_since_last_record{run},
 *   gradwatch_run_open_alerts{run}
 *   gradwatch_fleet_up, gradwatch_fleet_backlog_rows,   (these when shipping
 *   gradwatch_fleet_lag_seconds,                         to PostgreSQL,
 *   gradwatch_fleet_shipped_rows_total{table},           fleet/fleet.h)
 *   gradwatch_fleet_batches_total, gradwatch_fleet_errors_total,
 *   gradwatch_fleet_last_success_seconds
 */
#include "metrics.h"

#include "config.h"
#include "engine.h"
#include "fleet.h"
#include "http.h"
#include "ingest.h"
#include "kern.h"
#include "outbox.h"
#include "retention.h"
#include "runs.h"
#include "store.h"
#include "util.h"

#include "gw_config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

void gw_metrics_label(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '\\':
			fputs("\\\\", f);
			break;
		case '"':
			fputs("\\\"", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		default:
			fputc(*s, f);
		}
	}
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A sample value: integers exactly, the rest with full precision, and the
 * format's spelling of the non-finite ones. */
static void value(FILE *f, double v)
{
	if (isnan(v))
		fputs(" NaN\n", f);
	else if (isinf(v))
		fputs(v > 0 ? " +Inf\n" : " -Inf\n", f);
	else {
		/* the shortest of %.15g and %.17g that reads back exactly */
		char b[40];
		snprintf(b, sizeof(b), "%.15g", v);
		if (strtod(b, NULL) != v)
			snprintf(b, sizeof(b), "%.17g", v);
		fprintf(f, " %s\n", b);
	}
}

static void u64(FILE *f, uint64_t v)
{
	fprintf(f, " %" PRIu64 "\n", v);
}

/* The database file and its WAL, as stat() finds them (a file that is not
 * there is 0): what the database takes on disk, beside retention.max_bytes
 * (pages in use) and the disk's free space. */
static void file_sizes(FILE *f, const char *db_path)
{
	static const char *const files[][2] = {{"database", ""}, {"wal", "-wal"}};
	family(f, "gradwatch_store_file_bytes", "gauge",
	       "Size of the SQLite database file and of its write-ahead log.");
	for (size_t i = 0; i < GW_ARRAY_SIZE(files); i++) {
		char path[PATH_MAX];
		struct stat sb;
		uint64_t n = 0;
		if (snprintf(path, sizeof(path), "%s%s", db_path, files[i][1]) < (int)sizeof(path) &&
		    stat(path, &sb) == 0)
			n = (uint64_t)sb.st_size;
		fprintf(f, "gradwatch_store_file_bytes{file=\"%s\"}", files[i][0]);
		u64(f, n);
	}
}

/* The alert sinks' families (the outbox's counters), each sink a series:
 * one sample of sink s, with result="..." as a third label when result is
 * set. */
static void sink_sample(FILE *f, const char *metric, const struct gw_outbox_counts *s,
                        const char *result, uint64_t v)
{
	fprintf(f, "%s{sink=\"", metric);
	gw_metrics_label(f, s->name);
	fputs("\",type=\"", f);
	gw_metrics_label(f, s->type);
	if (result)
		fprintf(f, "\",result=\"%s", result);
	fputs("\"}", f);
	u64(f, v);
}

static void render_sinks(FILE *f, const struct gw_outbox *ob)
{
	struct gw_outbox_counts s;
	family(f, "gradwatch_outbox_depth", "gauge",
	       "Alert deliveries queued or in flight, over all sinks.");
	fputs("gradwatch_outbox_depth", f);
	u64(f, gw_outbox_depth(ob));
	family(f, "gradwatch_alert_deliveries_total", "counter",
	       "Alert events a sink acknowledged (result=delivered) or that were given up "
	       "(result=failed: a final 4xx, or retried past give_up_after), by sink.");
	for (size_t i = 0; gw_outbox_sink_counts(ob, i, &s); i++) {
		sink_sample(f, "gradwatch_alert_deliveries_total", &s, "delivered", s.delivered);
		sink_sample(f, "gradwatch_alert_deliveries_total", &s, "failed", s.failed);
	}
	family(f, "gradwatch_alert_delivery_retries_total", "counter",
	       "Failed delivery attempts that will be retried (errors, timeouts, 429, 5xx), by sink.");
	for (size_t i = 0; gw_outbox_sink_counts(ob, i, &s); i++)
		sink_sample(f, "gradwatch_alert_delivery_retries_total", &s, NULL, s.retries);
	family(f, "gradwatch_alert_deliveries_pending", "gauge",
	       "Alert events queued or in flight to a sink (sent after a restart too).");
	for (size_t i = 0; gw_outbox_sink_counts(ob, i, &s); i++)
		sink_sample(f, "gradwatch_alert_deliveries_pending", &s, NULL, s.pending);
}

/* Shipping to the fleet's PostgreSQL (a copy of the shipper's counters). */
static void render_fleet(FILE *f, struct gw_fleet *fl)
{
	struct gw_fleet_stats s;
	gw_fleet_stats(fl, &s);
	family(f, "gradwatch_fleet_up", "gauge",
	       "1 when the last shipping attempt reached PostgreSQL and committed.");
	fputs("gradwatch_fleet_up", f);
	u64(f, s.up);
	family(f, "gradwatch_fleet_backlog_rows", "gauge",
	       "Committed records and events not yet in PostgreSQL.");
	fputs("gradwatch_fleet_backlog_rows", f);
	u64(f, s.backlog);
	family(f, "gradwatch_fleet_lag_seconds", "gauge",
	       "Age of the oldest committed record or event not yet in PostgreSQL (0: none).");
	fputs("gradwatch_fleet_lag_seconds", f);
	value(f, s.lag_s);
	family(f, "gradwatch_fleet_shipped_rows_total", "counter",
	       "Rows written to PostgreSQL (runs, segments and alerts again when they change).");
	for (int t = 0; t < GW_FLEET_N_TABLES; t++) {
		fprintf(f, "gradwatch_fleet_shipped_rows_total{table=\"%s\"}", gw_fleet_table_names[t]);
		u64(f, s.shipped[t]);
	}
	family(f, "gradwatch_fleet_batches_total", "counter", "PostgreSQL transactions committed.");
	fputs("gradwatch_fleet_batches_total", f);
	u64(f, s.batches);
	family(f, "gradwatch_fleet_errors_total", "counter",
	       "Shipping attempts that failed (PostgreSQL unreachable, an error, a timeout).");
	fputs("gradwatch_fleet_errors_total", f);
	u64(f, s.errors);
	family(f, "gradwatch_fleet_last_success_seconds", "gauge",
	       "When a shipping cycle last succeeded, Unix time (0: never).");
	fputs("gradwatch_fleet_last_success_seconds", f);
	value(f, s.last_ok);
}

/* ---- per-run gauges ---------------------------------------------------------- */

struct run_family {
	const char *name;
	const char *help;
	int role;          /* >= 0: last value of that role; else a special */
};

enum { R_STEP = -1, R_SEGMENT = -2, R_AGE = -3, R_OPEN = -4 };

static const struct run_family run_families[] = {
	{"gradwatch_run_last_step", "Last optimizer step the run reported.", R_STEP},
	{"gradwatch_run_segment", "Segment the run is in (1 + restarts and gaps seen).", R_SEGMENT},
	{"gradwatch_run_loss", "Last training loss the run reported.", GW_ROLE_LOSS},
	{"gradwatch_run_grad_norm", "Last gradient norm (before clipping) the run reported.", GW_ROLE_GRAD_NORM},
	{"gradwatch_run_lr", "Last learning rate the run reported.", GW_ROLE_LR},
	{"gradwatch_run_throughput", "Last throughput (samples per second) the run reported.", GW_ROLE_THROUGHPUT},
	{"gradwatch_run_seconds_since_last_record", "Seconds since the daemon last received a line of the run.", R_AGE},
	{"gradwatch_run_open_alerts", "Incidents of the run that are open.", R_OPEN},
};

struct run_ctx {
	FILE *f;
	const struct run_family *fam;
	double now;
};

static void run_sample(void *data, const struct gw_run_info *ri)
{
	struct run_ctx *rc = data;
	double v;
	if (ri->seg == 0)
		return;
	switch (rc->fam->role) {
	case R_STEP:
		v = (double)ri->last_step;
		break;
	case R_SEGMENT:
		v = (double)ri->seg;
		break;
	case R_AGE:
		/* runs seeded from the database after a daemon restart have
		 * no wall clock of their own yet: fall back to their ts */
		if (isfinite(ri->last_wall))
			v = rc->now - ri->last_wall;
		else if (isfinite(ri->last_ts))
			v = rc->now - ri->last_ts;
		else
			return;
		if (v < 0)
			v = 0;
		break;
	case R_OPEN:
		v = ri->open_alerts;
		break;
	default:
		if (!(ri->present & (1u << rc->fam->role)))
			return;
		v = ri->last[rc->fam->role];
	}
	fprintf(rc->f, "%s{run=\"", rc->fam->name);
	gw_metrics_label(rc->f, ri->run);
	fputs("\"}", rc->f);
	value(rc->f, v);
}

/* ---- the exposition ------------------------------------------------------------- */

/* One sample of the ingest counter table (ingest.c). */
static void counter_sample(void *data, const struct gw_counter_sample *s)
{
	FILE *f = data;
	if (s->first)
		family(f, s->metric, "counter", s->help);
	fputs(s->metric, f);
	for (int k = 0; k < 2 && s->label[k]; k++) {
		fprintf(f, "%s%s=\"", k ? "," : "{", s->label[k]);
		gw_metrics_label(f, s->value[k]);
		fputc('"', f);
	}
	if (s->label[0])
		fputc('}', f);
	u64(f, s->n);
}

/* Write the whole exposition to f (loop thread; reads only in-memory
 * counters and the engine's per-run state, no I/O but f).  Bounded by the
 * number of runs.  Returns 0 or -EIO if f failed. */
static int render(const struct gw_metrics_opts *o, FILE *f)
{
	family(f, "gradwatch_build_info", "gauge", "Version and kernel variant of this gradwatchd.");
	fprintf(f, "gradwatch_build_info{version=\"");
	gw_metrics_label(f, GW_VERSION);
	fprintf(f, "\",kernels=\"");
	gw_metrics_label(f, gw_kern_name());
	fputs("\"} 1\n", f);
	family(f, "gradwatch_start_time_seconds", "gauge", "When this gradwatchd started, Unix time.");
	fputs("gradwatch_start_time_seconds", f);
	value(f, o->started);

	gw_ingest_counters_foreach(o->ingest, counter_sample, f);

	struct gw_store_stats st;
	gw_store_stats(o->store, &st);
	family(f, "gradwatch_store_commits_total", "counter", "SQLite transactions committed.");
	fputs("gradwatch_store_commits_total", f);
	u64(f, st.commits);
	family(f, "gradwatch_store_pending_bytes", "gauge", "Bytes queued for the next commit.");
	fputs("gradwatch_store_pending_bytes", f);
	u64(f, st.pending_bytes);
	family(f, "gradwatch_store_up", "gauge", "1 when the last commit worked, 0 when it failed.");
	fputs("gradwatch_store_up", f);
	u64(f, st.last_error == 0);
	file_sizes(f, o->cfg->db_path);
	struct gw_retention_stats rs;
	gw_retention_stats(&rs);
	family(f, "gradwatch_retention_passes_total", "counter",
	       "Timed retention passes done (every retention.check_every when retention is on).");
	fputs("gradwatch_retention_passes_total", f);
	u64(f, rs.passes);
	family(f, "gradwatch_retention_runs_deleted_total", "counter",
	       "Runs deleted: by retention, DELETE /v1/runs/{run} and POST /v1/prune.");
	fputs("gradwatch_retention_runs_deleted_total", f);
	u64(f, rs.runs_deleted);
	/* with or without sinks: an operator acknowledges from the CLI or
	 * the API either way */
	size_t open = 0, acked = 0;
	gw_outbox_open_alerts(o->outbox, &open, &acked);
	family(f, "gradwatch_alerts_open", "gauge",
	       "Open alerts, acknowledged (acked=\"true\": no reminders until they escalate) "
	       "or not.");
	fputs("gradwatch_alerts_open{acked=\"false\"}", f);
	u64(f, open - acked);
	fputs("gradwatch_alerts_open{acked=\"true\"}", f);
	u64(f, acked);
	if (gw_outbox_sinks(o->outbox))
		render_sinks(f, o->outbox);   /* sinks are configured */
	if (o->fleet)
		render_fleet(f, o->fleet);
	struct gw_runs_stats runs;
	gw_ingest_runs_stats(o->ingest, &runs);

	family(f, "gradwatch_runs", "gauge",
	       "Active runs: their detector state is in memory (the per-run series below).");
	fputs("gradwatch_runs", f);
	u64(f, runs.active);
	family(f, "gradwatch_runs_dormant", "gauge",
	       "Known runs whose detector state is not in memory (rebuilt on their next line).");
	fputs("gradwatch_runs_dormant", f);
	u64(f, runs.dormant);
	family(f, "gradwatch_runs_evicted_total", "counter",
	       "Runs made dormant (idle, or to make room under limits.max_runs).");
	fputs("gradwatch_runs_evicted_total", f);
	u64(f, runs.evicted);
	family(f, "gradwatch_runs_rebuilt_total", "counter",
	       "Dormant runs whose detector state was rebuilt from the database.");
	fputs("gradwatch_runs_rebuilt_total", f);
	u64(f, runs.rebuilt);
	struct run_ctx rc = {.f = f, .now = gw_wall_now()};
	for (size_t k = 0; k < GW_ARRAY_SIZE(run_families); k++) {
		rc.fam = &run_families[k];
		family(f, rc.fam->name, "gauge", rc.fam->help);
		gw_ingest_foreach_run(o->ingest, run_sample, &rc);
	}
	return ferror(f) ? -EIO : 0;
}

static void h_metrics(struct gw_http_conn *c, const struct gw_http_req *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int rc = f ? render(r->data, f) : -ENOMEM;
	if (f && fclose(f) != 0)
		rc = -ENOMEM;
	if (rc < 0) {
		gw_http_respond_json(c, 500, json_pack("{s:s}", "error", "out of memory rendering /metrics"));
	} else {
		gw_http_respond_text(c, 200, CONTENT_TYPE, buf, len);
	}
	free(buf);
}

int gw_metrics_start(struct gw_http *h, const struct gw_metrics_opts *o, char *err,
                     size_t errlen)
{
	const struct gw_http_route r = {.method = "GET", .path = "/metrics", .handler = h_metrics,
	                                .data = (void *)o};
	int rc = gw_http_route(h, &r);
	if (rc < 0)
		snprintf(err, errlen, "cannot register GET /metrics: %s", strerror(-rc));
	return rc;
}
