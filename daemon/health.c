/*
 * health: GET /healthz, what a load balancer, systemd or an operator asks
 * first (docs/api.md, "Health").  "ok" (200) or "degraded" (503) with the
 * reasons in the body, each {check, message, ...}:
 *
 *   commit_failed       the last commit failed (disk full, I/O error): the
 *                       store's own error, as it retries
 *   commit_stalled      the oldest line not yet committed has waited longer
 *                       than health.commit_stall_s (a writer stuck behind a
 *                       lock or a dead disk); an idle daemon has nothing
 *                       waiting, so it is never stalled
 *   undelivered_alerts  a sink has alert events it failed to take that were
 *                       raised longer than health.undelivered_s ago (repeats
 *                       of open alerts aside)
 *   disk_low            the filesystem under the database has less free than
 *                       health.min_free_mb (0: not checked) and than 5 % of
 *                       its size (a small volume of its own is not "full"
 *                       at 32 MB free)
 *
 * It stays cheap and never waits: the store's counters are read under its
 * queue mutex (held by the writer only to swap batches, never during a
 * commit), the outbox's queues are walked in memory on the loop, and the
 * free space is one statvfs of the database's directory at most once a
 * second (cached in between: one cache, the daemon has one database).
 */
#include "health.h"

#include "config.h"
#include "http.h"
#include "ingest.h"
#include "kern.h"
#include "outbox.h"
#include "runs.h"
#include "store.h"
#include "util.h"

#include "gw_config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>

#define DISK_EVERY_MS 1000

/* The last statvfs of the database's directory. */
static struct {
	uint64_t checked_ms;       /* when; 0: never */
	uint64_t free, size;       /* bytes free under the database then, of */
} disk;

static void reason(json_t *reasons, const char *check, json_t *extra, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void reason(json_t *reasons, const char *check, json_t *extra, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_t *o = extra ? extra : json_object();
	json_object_set_new(o, "check", json_string(check));
	/* a message quotes paths and sink errors: never lose it to bad UTF-8 */
	json_t *m = json_string(msg);
	json_object_set_new(o, "message", m ? m : json_string("(not valid UTF-8)"));
	json_array_append_new(reasons, o);
}

static void check_store(const struct gw_health_opts *o, const struct gw_store_stats *st, json_t *reasons)
{
	if (st->last_error)
		reason(reasons, "commit_failed", NULL, "%s", st->last_error_msg);
	uint64_t now = gw_mono_ms();
	if (st->oldest_pending_ms && now > st->oldest_pending_ms &&
	    now - st->oldest_pending_ms > (uint64_t)o->cfg->health_commit_stall_s * 1000u) {
		double waited = (double)(now - st->oldest_pending_ms) / 1000.0;
		reason(reasons, "commit_stalled",
		       json_pack("{s:o, s:I}", "waited_s", gw_json_num(waited), "pending_bytes",
		                 (json_int_t)st->pending_bytes),
		       "nothing committed for %.0f s with %zu bytes waiting (health.commit_stall_s %u)",
		       waited, st->pending_bytes, o->cfg->health_commit_stall_s);
	}
}

static void check_outbox(const struct gw_health_opts *o, json_t *reasons)
{
	const struct gw_outbox *ob = o->outbox;
	double now = gw_wall_now();
	size_t n;
	double oldest;
	const char *last_error;
	for (size_t i = 0; gw_outbox_sink_failing(ob, i, &n, &oldest, &last_error); i++) {
		if (!n || !(now - oldest > o->cfg->health_undelivered_s))
			continue;
		struct gw_outbox_counts c;
		gw_outbox_sink_counts(ob, i, &c);
		reason(reasons, "undelivered_alerts",
		       json_pack("{s:s, s:I, s:o}", "sink", c.name, "undelivered", (json_int_t)n,
		                 "oldest_s", gw_json_num(now - oldest)),
		       "sink %s: %zu alert event(s) not delivered, the oldest raised %.0f s ago "
		       "(health.undelivered_s %u); last error: %s", c.name, n, now - oldest,
		       o->cfg->health_undelivered_s, last_error ? last_error : "none");
	}
}

/* Free bytes under the database, from a statvfs at most once a second;
 * low below both the configured floor and 5 % of the filesystem. */
static void check_disk(const struct gw_health_opts *o, json_t *reasons)
{
	if (!o->cfg->health_min_free_mb)
		return;
	uint64_t now = gw_mono_ms();
	char dir[PATH_MAX];
	gw_strlcpy(dir, o->cfg->db_path, sizeof(dir));
	char *slash = strrchr(dir, '/');
	if (!slash)
		gw_strlcpy(dir, ".", sizeof(dir));
	else
		slash[slash == dir] = '\0';
	if (!disk.checked_ms || now - disk.checked_ms >= DISK_EVERY_MS) {
		struct statvfs vfs;
		disk.checked_ms = now;
		bool got = statvfs(dir, &vfs) == 0;
		disk.free = got ? (uint64_t)vfs.f_bavail * vfs.f_frsize : UINT64_MAX;
		disk.size = got ? (uint64_t)vfs.f_blocks * vfs.f_frsize : UINT64_MAX;
	}
	uint64_t floor = gw_cfg_disk_floor(o->cfg, disk.size);
	if (disk.free < floor)
		reason(reasons, "disk_low",
		       json_pack("{s:s, s:I, s:I}", "path", dir, "free_mb", (json_int_t)(disk.free >> 20),
		                 "size_mb", (json_int_t)(disk.size >> 20)),
		       "%s: %llu MB free on its filesystem of %llu MB, below health.min_free_mb %u "
		       "and 5%% of its size", dir, (unsigned long long)(disk.free >> 20),
		       (unsigned long long)(disk.size >> 20), o->cfg->health_min_free_mb);
}

static void h_healthz(struct gw_http_conn *c, const struct gw_http_req *r)
{
	const struct gw_health_opts *o = r->data;
	struct gw_store_stats st;
	gw_store_stats(o->store, &st);
	json_t *reasons = json_array();
	check_store(o, &st, reasons);
	check_outbox(o, reasons);
	check_disk(o, reasons);
	bool ok = json_array_size(reasons) == 0;
	struct gw_runs_stats runs;
	gw_ingest_runs_stats(o->ingest, &runs);
	json_t *j = json_pack("{s:s, s:s, s:s, s:o, s:I, s:I, s:I, s:s, s:o}",
	                      "status", ok ? "ok" : "degraded",
	                      "version", GW_VERSION,
	                      "kernels", gw_kern_name(),
	                      "uptime_s", gw_json_num(gw_wall_now() - o->started),
	                      "runs", (json_int_t)runs.active,
	                      "committed", (json_int_t)gw_store_committed(o->store),
	                      "pending_bytes", (json_int_t)st.pending_bytes,
	                      "store", st.last_error ? st.last_error_msg : "ok",
	                      "reasons", reasons);
	gw_http_respond_json(c, ok ? 200 : 503, j);
}

int gw_health_start(struct gw_http *h, const struct gw_health_opts *o, char *err, size_t errlen)
{
	const struct gw_http_route r = {.method = "GET", .path = "/healthz", .handler = h_healthz,
	                                .data = (void *)o, .scope = GW_SCOPE_OPEN};
	int rc = gw_http_route(h, &r);
	if (rc < 0)
		return gw_errf(err, errlen, rc, "cannot register GET /healthz");
	return 0;
}
